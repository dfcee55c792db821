package approval

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

// SignatureHeader carries the HMAC-SHA256 of the body: "sha256=<hex>".
const SignatureHeader = "X-Warden-Signature"

// Sign returns the SignatureHeader value for body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// WebhookOptions tune a Webhook; nil means the defaults.
type WebhookOptions struct {
	Client   *http.Client  // default: 10 s timeout
	Attempts int           // default 5
	Backoff  time.Duration // first retry delay, doubled each time; default 500 ms
	Queue    int           // pending deliveries; default 64
	Logger   *slog.Logger
}

// Webhook is a Channel that POSTs each new request, signed, to a URL. It
// delivers in the background with retries and never decides anything.
type Webhook struct {
	url    string
	secret []byte
	o      WebhookOptions
	log    *slog.Logger
	queue  chan []byte
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// WebhookEvent is the JSON body a webhook receives.
type WebhookEvent struct {
	Event   string   `json:"event"` // approval.requested
	SentAt  string   `json:"sent_at"`
	Request *Pending `json:"request"`
	// Decide says how a supervisor answers.
	Decide []string `json:"decide"`
}

// NewWebhook starts a webhook channel; Close stops it.
func NewWebhook(url string, secret []byte, o *WebhookOptions) (*Webhook, error) {
	if url == "" {
		return nil, errors.New("webhook needs a url")
	}
	if len(secret) < 16 {
		return nil, errors.New("webhook secret is missing or shorter than 16 bytes")
	}
	w := &Webhook{url: url, secret: secret, stop: make(chan struct{})}
	if o != nil {
		w.o = *o
	}
	if w.o.Client == nil {
		w.o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if w.o.Attempts <= 0 {
		w.o.Attempts = 5
	}
	if w.o.Backoff <= 0 {
		w.o.Backoff = 500 * time.Millisecond
	}
	if w.o.Queue <= 0 {
		w.o.Queue = 64
	}
	w.log = w.o.Logger
	if w.log == nil {
		w.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w.queue = make(chan []byte, w.o.Queue)
	w.wg.Go(w.run)
	return w, nil
}

// Notify implements Channel: it queues the delivery and returns at once.
func (w *Webhook) Notify(_ context.Context, p *Pending) error {
	q := *p
	q.Args = audit.Sanitize(p.Args, 1000)
	body, err := json.Marshal(&WebhookEvent{
		Event: "approval.requested", SentAt: time.Now().UTC().Format(time.RFC3339Nano), Request: &q,
		Decide: []string{"warden approvals approve " + p.ID, "warden approvals deny " + p.ID + " --reason R",
			"POST /api/approvals/" + p.ID + "/approve", "POST /api/approvals/" + p.ID + "/deny"},
	})
	if err != nil {
		return fmt.Errorf("failed to encode the webhook body: %w", err)
	}
	select {
	case w.queue <- body:
		return nil
	default:
		return fmt.Errorf("webhook queue full: request %s not delivered", p.ID)
	}
}

// Close stops delivering; queued deliveries not yet sent are dropped.
func (w *Webhook) Close() error {
	w.once.Do(func() { close(w.stop) })
	w.wg.Wait()
	return nil
}

func (w *Webhook) run() {
	for {
		select {
		case <-w.stop:
			return
		case body := <-w.queue:
			w.deliver(body)
		}
	}
}

func (w *Webhook) deliver(body []byte) {
	delay := w.o.Backoff
	for attempt := 1; ; attempt++ {
		retry, err := w.post(body)
		if err == nil {
			return
		}
		if !retry || attempt >= w.o.Attempts {
			w.log.Warn("webhook delivery failed", "url", w.url, "attempts", attempt, "err", err)
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C:
		}
		delay *= 2
	}
}

// post sends body once; retry says whether a failure may pass on retry.
func (w *Webhook) post(body []byte) (retry bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(w.secret, body))
	resp, err := w.o.Client.Do(req)
	if err != nil {
		return true, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode/100 == 2:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("webhook answered %s", resp.Status)
	default:
		return false, fmt.Errorf("webhook answered %s", resp.Status)
	}
}
