package notify

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/approvaltest"
	"github.com/wardenhq/warden/internal/store"
)

// A receiver that fails twice then succeeds gets the message once; one
// that answers 4xx is not retried.
func TestNotifyRetry(t *testing.T) {
	t.Parallel()
	var calls, ok atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusInternalServerError)
		case 2:
			w.Header().Set("Retry-After", "0.01")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			ok.Add(1)
			close(done)
		}
	}))
	defer srv.Close()
	s, _ := NewSlack(srv.URL, "", &Options{Backoff: time.Millisecond})
	if err := s.Notify(t.Context(), hostileReq); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("not delivered after retries")
	}
	s.Close()
	if calls.Load() != 3 || ok.Load() != 1 {
		t.Errorf("%d calls, %d delivered; want 3 and 1", calls.Load(), ok.Load())
	}

	var bad atomic.Int64
	srv4 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bad.Add(1)
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "no_service")
	}))
	defer srv4.Close()
	d, _ := NewDiscord(srv4.URL, "", &Options{Backoff: time.Millisecond})
	d.Notify(t.Context(), hostileReq)
	d.Close() // drains: the one attempt is made before Close returns
	if bad.Load() != 1 {
		t.Errorf("%d calls for a 404, want 1", bad.Load())
	}
}

// A channel whose receiver hangs never blocks Notify, Ask, or the other
// channels; the request is decided as usual and Close ends at its deadline.
func TestNotifyFailingChannelDoesNotBlock(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	var hung atomic.Int64
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hung.Add(1)
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer dead.Close()
	defer close(hang)
	var failing atomic.Int64
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failing.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer broken.Close()
	good := newHookServer(t)

	no := &Options{Backoff: time.Millisecond, Queue: 2, CloseTimeout: 200 * time.Millisecond}
	slow, _ := NewSlack(dead.URL, "", no)
	flaky, _ := NewDiscord(broken.URL, "", no)
	fine, _ := NewSlack(good.srv.URL, "", no)
	s := approvaltest.Store(t)
	b := approvaltest.Broker(t, s, func(o *approval.Options) {
		o.Channels = []approval.Channel{slow, flaky, fine}
		// Long enough for a loaded machine under -race: a Notify that
		// blocked on the hanging channel would hold Ask until this runs out.
		o.Timeout = 30 * time.Second
	})

	start := time.Now()
	res := approvaltest.Ask(t.Context(), b, approvaltest.LsReq)
	id := approvaltest.PendingID(t, s)
	good.next(t) // the working channel got its message meanwhile
	if _, err := b.Decide(t.Context(), id, "alice", true, ""); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.Err != nil || !r.Out.Approved || r.Out.By != "alice" {
		t.Fatalf("outcome %+v %v", r.Out, r.Err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("Ask took %s with a hanging channel", time.Since(start))
	}
	// A full queue refuses at once instead of blocking.
	for range 5 {
		slow.Notify(t.Context(), hostileReq)
	}
	t0 := time.Now()
	err := slow.Notify(t.Context(), hostileReq)
	if err == nil || !strings.Contains(err.Error(), "queue full") || time.Since(t0) > 100*time.Millisecond {
		t.Errorf("full queue: %v after %s", err, time.Since(t0))
	}
	t0 = time.Now()
	slow.Close()
	flaky.Close()
	fine.Close()
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("Close took %s past its deadline", el)
	}
	if failing.Load() < 2 || failing.Load() > 5 {
		t.Errorf("the failing channel was tried %d times, want bounded retries", failing.Load())
	}
	if a, _ := s.Get(t.Context(), id); a.State != store.Approved && a.State != store.Executed {
		t.Errorf("state %s", a.State)
	}
}

// With only a channel whose every delivery fails, a request still times
// out (and is denied) exactly on time: no channel decides anything, and
// retrying delays nothing but the channel itself.
func TestNotifyDeadChannelTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tries atomic.Int64
		ch := &failing{box: NewOutbox("dead", (&Options{Backoff: time.Millisecond, Attempts: 1000, MaxBackoff: 50 * time.Millisecond,
			CloseTimeout: 100 * time.Millisecond}).WithDefaults()), tries: &tries}
		defer ch.box.Close()
		b := approvaltest.Broker(t, approvaltest.MemStore(t), func(o *approval.Options) {
			o.Channels = []approval.Channel{ch}
			o.Timeout = 300 * time.Millisecond
		})
		start := time.Now()
		out, err := b.Ask(context.Background(), approvaltest.LsReq)
		if err != nil || out.Approved || out.State != store.TimedOut {
			t.Fatalf("outcome %+v %v", out, err)
		}
		if el := time.Since(start); el != 300*time.Millisecond {
			t.Errorf("timed out after %s, want 300ms", el)
		}
		if tries.Load() < 5 {
			t.Errorf("the channel was tried %d times in 300ms", tries.Load())
		}
	})
}

// failing is a channel whose deliveries all fail.
type failing struct {
	box   *Outbox
	tries *atomic.Int64
}

func (f *failing) Notify(_ context.Context, p *approval.Pending) error {
	return f.box.Enqueue(Delivery{What: "request " + p.ID, Send: func(context.Context) error {
		f.tries.Add(1)
		return errors.New("unreachable")
	}})
}

func TestJitter(t *testing.T) {
	t.Parallel()
	for range 1000 {
		if j := Jitter(time.Second); j < 500*time.Millisecond || j >= time.Second {
			t.Fatalf("Jitter(1s) = %s", j)
		}
	}
}

// A chat webhook's URL is its secret: no failure log shows it, whether the
// server answers an error or cannot be reached at all.
func TestNotifyLogsNoWebhookURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer srv.Close()
	// Nothing listens on port 1 (a closed ephemeral port could be taken
	// by a parallel test's server meanwhile, which answers instead).
	closed := "http://127.0.0.1:1"
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const secretPath = "/services/T000/B000/XsecretWebhookTokenX"
	for _, base := range []string{srv.URL, closed} {
		s, _ := NewSlack(base+secretPath, "", &Options{Backoff: time.Millisecond, Attempts: 2, Logger: log})
		s.Notify(t.Context(), hostileReq)
		s.Close()
	}
	out := logs.String()
	if !strings.Contains(out, "notification failed") || !strings.Contains(out, "403") || !strings.Contains(out, "connection refused") {
		t.Errorf("failures not logged:\n%s", out)
	}
	if strings.Contains(out, "XsecretWebhookTokenX") {
		t.Errorf("the webhook URL is in the log:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
