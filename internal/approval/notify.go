package approval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// NotifyOptions tune the background delivery every notifying channel
// shares (webhook, Slack, Discord, Telegram, email); nil means the defaults.
type NotifyOptions struct {
	Client     *http.Client  // HTTP channels; default: 10 s timeout
	Attempts   int           // tries per message; default 5
	Backoff    time.Duration // first retry delay, doubled each time (with jitter); default 500 ms
	MaxBackoff time.Duration // cap on one retry delay; default 30 s
	Queue      int           // messages waiting per channel; default 64
	// CloseTimeout bounds how long Close keeps delivering what is queued;
	// default 5 s.
	CloseTimeout time.Duration
	Logger       *slog.Logger
}

func (o *NotifyOptions) withDefaults() NotifyOptions {
	var d NotifyOptions
	if o != nil {
		d = *o
	}
	if d.Client == nil {
		d.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if d.Attempts <= 0 {
		d.Attempts = 5
	}
	if d.Backoff <= 0 {
		d.Backoff = 500 * time.Millisecond
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = 30 * time.Second
	}
	if d.MaxBackoff < d.Backoff {
		d.MaxBackoff = d.Backoff
	}
	if d.Queue <= 0 {
		d.Queue = 64
	}
	if d.CloseTimeout <= 0 {
		d.CloseTimeout = 5 * time.Second
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return d
}

// permanentError is a delivery failure that a retry cannot fix (a 4xx
// answer, a server without STARTTLS).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err} }

// retryAfterError asks for a retry no sooner than after (HTTP 429).
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// delivery is one message for one destination.
type delivery struct {
	what string // for the log: "slack message for request ID"
	send func(ctx context.Context) error
}

// outbox delivers messages in the background, one at a time, each retried
// with exponential backoff and jitter up to a bounded number of attempts.
// Enqueue never blocks: a full outbox refuses the message. A failure is
// logged and dropped; it never reaches the request it was about.
type outbox struct {
	name string
	o    NotifyOptions
	jobs chan delivery

	ctx     context.Context // cancelled when Close's deadline passes
	cancel  context.CancelFunc
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func newOutbox(name string, o NotifyOptions) *outbox {
	ctx, cancel := context.WithCancel(context.Background())
	b := &outbox{name: name, o: o, jobs: make(chan delivery, o.Queue), ctx: ctx, cancel: cancel, closing: make(chan struct{})}
	b.wg.Go(b.run)
	return b
}

// errOutboxFull is returned by enqueue when the queue is full or closed.
var errOutboxFull = errors.New("queue full")

func (b *outbox) enqueue(d delivery) error {
	select {
	case <-b.closing:
		return fmt.Errorf("%s channel closed: %s not sent", b.name, d.what)
	default:
	}
	select {
	case b.jobs <- d:
		return nil
	default:
		return fmt.Errorf("%s channel: %w: %s not sent", b.name, errOutboxFull, d.what)
	}
}

// close stops taking messages, delivers what is queued until the
// CloseTimeout deadline, then abandons the rest.
func (b *outbox) close() {
	b.once.Do(func() {
		close(b.closing)
		t := time.AfterFunc(b.o.CloseTimeout, b.cancel)
		b.wg.Wait()
		t.Stop()
		b.cancel()
	})
}

func (b *outbox) run() {
	for {
		select {
		case d := <-b.jobs:
			b.deliver(d)
		case <-b.closing:
			for {
				select {
				case d := <-b.jobs:
					if b.ctx.Err() != nil {
						b.o.Logger.Warn("notification abandoned at shutdown", "channel", b.name, "what", d.what)
						continue
					}
					b.deliver(d)
				default:
					return
				}
			}
		}
	}
}

func (b *outbox) deliver(d delivery) {
	delay := b.o.Backoff
	for attempt := 1; ; attempt++ {
		err := d.send(b.ctx)
		if err == nil {
			return
		}
		var perm *permanentError
		if errors.As(err, &perm) || attempt >= b.o.Attempts || b.ctx.Err() != nil {
			b.o.Logger.Warn("notification failed", "channel", b.name, "what", d.what, "attempts", attempt, "err", err)
			return
		}
		wait := jitter(delay)
		var ra *retryAfterError
		if errors.As(err, &ra) && ra.after > wait {
			wait = min(ra.after, b.o.MaxBackoff)
		}
		b.o.Logger.Debug("notification failed, retrying", "channel", b.name, "what", d.what, "attempt", attempt, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-b.ctx.Done():
			t.Stop()
			b.o.Logger.Warn("notification abandoned at shutdown", "channel", b.name, "what", d.what, "attempts", attempt, "err", err)
			return
		case <-t.C:
		}
		delay = min(delay*2, b.o.MaxBackoff)
	}
}

// jitter returns a delay in [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// httpResult turns an HTTP answer into a delivery error: nil for 2xx,
// retryable for 429 and 5xx (honouring Retry-After in seconds), permanent
// otherwise.
func httpResult(service string, resp *http.Response) error {
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests:
		err := fmt.Errorf("%s answered %s", service, resp.Status)
		if s, perr := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); perr == nil && s > 0 && s < 3600 {
			return &retryAfterError{err, time.Duration(s * float64(time.Second))}
		}
		return err
	case resp.StatusCode >= 500:
		return fmt.Errorf("%s answered %s", service, resp.Status)
	default:
		return permanent(fmt.Errorf("%s answered %s", service, resp.Status))
	}
}
