package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/internal/approval"
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

// webhookRiskMax cuts the risk summary a webhook receives, in runes.
const webhookRiskMax = 4000

// Webhook is an approval.Channel that POSTs each new request, signed, to a URL. It
// delivers in the background with retries and never decides anything.
type Webhook struct {
	url     string
	secret  []byte
	o       Options
	box     *Outbox
	pageURL string
}

// WebhookEvent is the JSON body a webhook receives.
type WebhookEvent struct {
	Event   string            `json:"event"` // approval.requested
	SentAt  string            `json:"sent_at"`
	Request *approval.Pending `json:"request"`
	// Decide says how a supervisor answers.
	Decide []string `json:"decide"`
	// Link is the request on the page, when page_url is set.
	Link string `json:"link,omitempty"`
}

// NewWebhook starts a webhook channel; Close stops it.
func NewWebhook(url string, secret []byte, o *Options) (*Webhook, error) {
	if url == "" {
		return nil, errors.New("webhook needs a url")
	}
	if len(secret) < 16 {
		return nil, errors.New("webhook secret is missing or shorter than 16 bytes")
	}
	w := &Webhook{url: url, secret: secret, o: o.WithDefaults()}
	w.box = NewOutbox("webhook", w.o)
	return w, nil
}

// withPage sets the page URL (page_url): the event then carries Link.
func (w *Webhook) withPage(pageURL string) *Webhook { w.pageURL = pageURL; return w }

// Notify implements approval.Channel: it queues the Delivery and returns at once.
func (w *Webhook) Notify(_ context.Context, p *approval.Pending) error {
	q := *p
	q.Args = audit.Sanitize(p.Args, 1000)
	// The risk carries file contents (a write's diff shows old lines too).
	q.Risk = audit.Excerpt(p.Risk, webhookRiskMax)
	body, err := json.Marshal(&WebhookEvent{
		Event: "approval.requested", SentAt: time.Now().UTC().Format(time.RFC3339Nano), Request: &q,
		Decide: []string{"warden approvals approve " + p.ID, "warden approvals deny " + p.ID + " --reason R",
			"POST /api/approvals/" + p.ID + "/approve", "POST /api/approvals/" + p.ID + "/deny"},
		Link: RequestLink(w.pageURL, p.ID),
	})
	if err != nil {
		return fmt.Errorf("failed to encode the webhook body: %w", err)
	}
	return w.box.Enqueue(Delivery{What: "event for request " + p.ID, Send: func(ctx context.Context) error {
		return postJSON(ctx, w.o.Client, "webhook", w.url, body, SignatureHeader, Sign(w.secret, body))
	}})
}

// Close delivers what is queued (up to CloseTimeout) and stops.
func (w *Webhook) Close() error { w.box.Close(); return nil }

// ChannelName implements approval.NamedChannel.
func (*Webhook) ChannelName() string { return "webhook" }
