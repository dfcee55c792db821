package notify

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

// Options tune the background delivery every notifying channel shares
// (webhook, Slack, Discord, Telegram, email); nil means the defaults.
type Options struct {
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

// WithDefaults returns o (nil for none) with every unset field at its
// default.
func (o *Options) WithDefaults() Options {
	var d Options
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

// Permanent marks err as a failure a retry cannot fix: the Outbox gives
// the message up at once.
func Permanent(err error) error { return &permanentError{err} }

// IsPermanent reports whether err, or an error it wraps, was marked by
// Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// RetryAfterError asks for a retry no sooner than After (HTTP 429).
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// Delivery is one message for one destination.
type Delivery struct {
	What string // for the log: "message for request ID"
	// Send makes one attempt; an error wrapped by Permanent is not
	// retried, a *RetryAfterError is retried no sooner than it asks.
	Send func(ctx context.Context) error
}

// Outbox delivers messages in the background, one at a time, each retried
// with exponential backoff and jitter up to a bounded number of attempts.
// Enqueue never blocks: a full Outbox refuses the message. A failure is
// logged and dropped; it never reaches the request it was about.
type Outbox struct {
	name string
	o    Options
	jobs chan Delivery

	ctx     context.Context // cancelled when Close's deadline passes
	cancel  context.CancelFunc
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// NewOutbox starts delivering the messages of channel name, with o's
// retries and queue (o is taken as is: see Options.WithDefaults); Close
// stops it.
func NewOutbox(name string, o Options) *Outbox {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Outbox{name: name, o: o, jobs: make(chan Delivery, o.Queue), ctx: ctx, cancel: cancel, closing: make(chan struct{})}
	b.wg.Go(b.run)
	return b
}

// errOutboxFull is returned by Enqueue when the queue is full.
var errOutboxFull = errors.New("queue full")

// Enqueue queues d and returns at once: an error when the queue is full
// or the Outbox closed, never a delivery failure.
func (b *Outbox) Enqueue(d Delivery) error {
	select {
	case <-b.closing:
		return fmt.Errorf("%s channel closed: %s not sent", b.name, d.What)
	default:
	}
	select {
	case b.jobs <- d:
		return nil
	default:
		return fmt.Errorf("%s channel: %w: %s not sent", b.name, errOutboxFull, d.What)
	}
}

// Close stops taking messages, delivers what is queued until the
// CloseTimeout deadline, then abandons the rest.
func (b *Outbox) Close() {
	b.once.Do(func() {
		close(b.closing)
		t := time.AfterFunc(b.o.CloseTimeout, b.cancel)
		b.wg.Wait()
		t.Stop()
		b.cancel()
	})
}

func (b *Outbox) run() {
	for {
		select {
		case d := <-b.jobs:
			b.deliver(d)
		case <-b.closing:
			for {
				select {
				case d := <-b.jobs:
					b.deliver(d)
				default:
					return
				}
			}
		}
	}
}

func (b *Outbox) deliver(d Delivery) {
	if b.ctx.Err() != nil { // Close's deadline passed: what is left is dropped
		b.o.Logger.Warn("notification abandoned at shutdown", "channel", b.name, "what", d.What)
		return
	}
	delay := b.o.Backoff
	for attempt := 1; ; attempt++ {
		err := d.Send(b.ctx)
		if err == nil {
			return
		}
		if IsPermanent(err) || attempt >= b.o.Attempts || b.ctx.Err() != nil {
			b.o.Logger.Warn("notification failed", "channel", b.name, "what", d.What, "attempts", attempt, "err", err)
			return
		}
		wait := Jitter(delay)
		var ra *RetryAfterError
		if errors.As(err, &ra) && ra.After > wait {
			wait = min(ra.After, b.o.MaxBackoff)
		}
		b.o.Logger.Debug("notification failed, retrying", "channel", b.name, "what", d.What, "attempt", attempt, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-b.ctx.Done():
			t.Stop()
			b.o.Logger.Warn("notification abandoned at shutdown", "channel", b.name, "what", d.What, "attempts", attempt, "err", err)
			return
		case <-t.C:
		}
		delay = min(delay*2, b.o.MaxBackoff)
	}
}

// Jitter returns a delay in [d/2, d).
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// httpResult turns an HTTP answer into a Delivery error: nil for 2xx,
// retryable for 429 and 5xx (honouring Retry-After in seconds), permanent
// otherwise.
func httpResult(service string, resp *http.Response) error {
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests:
		err := fmt.Errorf("%s answered %s", service, resp.Status)
		if s, perr := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); perr == nil && s > 0 && s < 3600 {
			return &RetryAfterError{err, time.Duration(s * float64(time.Second))}
		}
		return err
	case resp.StatusCode >= 500:
		return fmt.Errorf("%s answered %s", service, resp.Status)
	default:
		return Permanent(fmt.Errorf("%s answered %s", service, resp.Status))
	}
}
