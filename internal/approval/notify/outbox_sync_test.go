package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// attempts runs one delivery through an Outbox with o, failing with
// fail(n) on attempt n (nil succeeds), and returns when each attempt was
// made, relative to the enqueue, in the bubble's time.
func attempts(t *testing.T, o Options, fail func(n int) error) []time.Duration {
	t.Helper()
	var at []time.Duration
	done := make(chan struct{})
	box := NewOutbox("test", o.WithDefaults())
	start := time.Now()
	err := box.Enqueue(Delivery{What: "a message", Send: func(ctx context.Context) error {
		at = append(at, time.Since(start))
		if err := fail(len(at)); err != nil {
			return err
		}
		close(done)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	box.Close() // delivers what is queued, retries included, up to CloseTimeout
	return at
}

// Each retry waits the backoff with jitter, [d/2, d), doubling up to
// MaxBackoff, for at most Attempts tries.
func TestOutboxBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := Options{Attempts: 6, Backoff: time.Second, MaxBackoff: 4 * time.Second, CloseTimeout: time.Hour}
		at := attempts(t, o, func(int) error { return errors.New("503") })
		if len(at) != 6 {
			t.Fatalf("%d attempts, want 6: %v", len(at), at)
		}
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
		for i, d := range want {
			if wait := at[i+1] - at[i]; wait < d/2 || wait >= d {
				t.Errorf("wait before attempt %d: %s, want [%s, %s)", i+2, wait, d/2, d)
			}
		}
	})
}

// A success ends the retries; a permanent failure is never retried.
func TestOutboxStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := Options{Attempts: 5, Backoff: time.Second, CloseTimeout: time.Hour}
		if at := attempts(t, o, func(n int) error {
			if n < 3 {
				return errors.New("502")
			}
			return nil
		}); len(at) != 3 {
			t.Errorf("%d attempts for a success at the third, want 3", len(at))
		}
		if at := attempts(t, o, func(int) error { return Permanent(errors.New("404")) }); len(at) != 1 {
			t.Errorf("%d attempts for a permanent failure, want 1", len(at))
		}
	})
}

// A 429's Retry-After is honoured over a shorter backoff, capped at
// MaxBackoff.
func TestOutboxRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := Options{Attempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Second, CloseTimeout: time.Hour}
		at := attempts(t, o, func(n int) error {
			return &RetryAfterError{Err: errors.New("429"), After: map[int]time.Duration{1: 7 * time.Second, 2: time.Minute}[n]}
		})
		if len(at) != 3 || at[1]-at[0] != 7*time.Second || at[2]-at[1] != 20*time.Second {
			t.Errorf("attempts at %v, want 7s then 20s (the cap) apart", at)
		}
	})
}

// Close delivers what is queued until CloseTimeout, then abandons the
// rest: a hanging receiver delays shutdown by CloseTimeout, not more. A
// full queue refuses at once, and a closed one refuses too.
func TestOutboxCloseAndFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := NewOutbox("test", (&Options{Queue: 2, CloseTimeout: 5 * time.Second, Attempts: 1}).WithDefaults())
		var sent []string
		hang := func(what string) Delivery {
			return Delivery{What: what, Send: func(ctx context.Context) error {
				sent = append(sent, what)
				<-ctx.Done() // a receiver that never answers
				return ctx.Err()
			}}
		}
		for i := range 3 { // one in flight, two queued
			if err := box.Enqueue(hang(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		if err := box.Enqueue(hang("3")); err == nil || !strings.Contains(err.Error(), "queue full") {
			t.Errorf("a full queue took a message: %v", err)
		}
		start := time.Now()
		box.Close()
		if el := time.Since(start); el != 5*time.Second {
			t.Errorf("Close took %s, want the 5s CloseTimeout", el)
		}
		if strings.Join(sent, ",") != "0" {
			t.Errorf("sent %v; the queued ones should be abandoned once the deadline passed", sent)
		}
		if err := box.Enqueue(hang("4")); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("a closed outbox took a message: %v", err)
		}
	})
}
