package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

func waitWake(t *testing.T, ch <-chan struct{}, within time.Duration, what string) time.Duration {
	t.Helper()
	t0 := time.Now()
	select {
	case <-ch:
		return time.Since(t0)
	case <-time.After(within):
		t.Fatalf("%s: no wake-up within %s", what, within)
	}
	return 0
}

func noWake(t *testing.T, ch <-chan struct{}, within time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s: woken", what)
	case <-time.After(within):
	}
}

// Watch wakes the watchers of a request when it changes in this process or
// in another store (another process's) on the same database; a watcher of
// another request is not woken; Close ends every watch.
func TestWatch(t *testing.T) { eachBackend(t, testWatch) }

func testWatch(t *testing.T, b backend) {
	ctx := context.Background()
	l := b.locate(t)
	// A slow poll: a wake-up within it came from the write (this process)
	// or from LISTEN/NOTIFY (PostgreSQL), not from the safety net. SQLite
	// has no notification across processes: there the poll is the path.
	poll := 10 * time.Second
	if b.name == "sqlite" {
		poll = 50 * time.Millisecond
	}
	here := openAt(t, l, &Options{Poll: poll})
	there := openAt(t, l, &Options{Poll: poll})
	a := pending(t, here, time.Minute)
	other := pending(t, here, time.Minute)

	mine, stopMine := here.Watch(a.ID)
	defer stopMine()
	all, stopAll := here.Watch("")
	defer stopAll()
	others, stopOthers := here.Watch(other.ID)
	defer stopOthers()
	time.Sleep(100 * time.Millisecond) // the watcher reads its starting position

	// A decision in this store.
	if _, err := here.Decide(ctx, a.ID, approve("alice"), nil); err != nil {
		t.Fatal(err)
	}
	waitWake(t, mine, 2*time.Second, "decision in this store")
	waitWake(t, all, 2*time.Second, "decision in this store, any-change watcher")
	noWake(t, others, 200*time.Millisecond, "watcher of another request")

	// A change made through the other store.
	if _, err := there.Claim(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	d := waitWake(t, mine, 2*time.Second, "claim through another store")
	t.Logf("%s: woken %s after another store's write", b.name, d)
	waitWake(t, all, 2*time.Second, "claim through another store, any-change watcher")

	// Grants wake the any-change watchers.
	g := pendingCall(t, there, base, time.Now())
	waitWake(t, all, 2*time.Second, "new request")
	grantOn(t, there, g.ID, time.Hour)
	waitWake(t, all, 2*time.Second, "grant")

	// Close ends the watches.
	here.Close()
	select {
	case _, ok := <-mine:
		if ok {
			<-mine
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end the watch")
	}
	if ch, _ := here.Watch("x"); ch != nil {
		if _, ok := <-ch; ok {
			t.Error("Watch on a closed store returned an open channel")
		}
	}
}

// A lease that cannot be renewed is lost within its period, and a caller
// holding a lost lease cannot claim its approved request.
func TestLeaseKeeper(t *testing.T) { eachBackend(t, testLeaseKeeper) }

// cutLeases fails renewals while cut is set: the network is gone.
type cutLeases struct {
	Leases
	cut atomic.Bool
}

func (c *cutLeases) RenewLease(ctx context.Context, id string, ttl time.Duration) (*Lease, error) {
	if c.cut.Load() {
		return nil, errors.New("connection refused")
	}
	return c.Leases.RenewLease(ctx, id, ttl)
}

func testLeaseKeeper(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, nil)
	const ttl = 600 * time.Millisecond
	cl := &cutLeases{Leases: s}
	k, err := KeepLease(ctx, cl, CurrentOwner(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	now := time.Now()
	a := &Approval{ID: NewTestID(), Tool: "run_command", Args: []byte(`{}`), ArgsHash: "h", State: Pending,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: k.Owner()}
	if err := s.Create(ctx, a, &audit.Record{Event: "approval_request"}); err != nil {
		t.Fatal(err)
	}
	// Renewals keep it alive well past one period.
	time.Sleep(2 * ttl)
	select {
	case <-k.Lost():
		t.Fatal("a renewed lease was lost")
	default:
	}
	if _, err := s.Decide(ctx, a.ID, approve("alice"), nil); err != nil {
		t.Fatalf("decide while the lease holds: %v", err)
	}
	// The network goes: the keeper gives up within the period.
	cl.cut.Store(true)
	cutAt := time.Now()
	waitWake(t, k.Lost(), 2*ttl, "lease keeper with renewals failing")
	if lost := time.Since(cutAt); lost > ttl+150*time.Millisecond {
		t.Errorf("lease lost %s after the cut, lease period %s", lost, ttl)
	}
	time.Sleep(ttl) // the store's view: expired
	var ce *ConflictError
	if _, err := s.Claim(ctx, a.ID); !errors.As(err, &ce) || ce.State != Cancelled {
		t.Fatalf("claim after the lease ran out: %v, want a conflict naming CANCELLED", err)
	}
	// The network comes back: the lease is not revived.
	if _, err := s.RenewLease(ctx, k.Owner().Lease, ttl); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renewing an expired lease: %v, want ErrLeaseLost", err)
	}

	// Close releases a lease at once: its requests are orphans for the
	// next sweep, without waiting for the period.
	k2, err := KeepLease(ctx, s, CurrentOwner(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a2 := &Approval{ID: NewTestID(), Tool: "run_command", Args: []byte(`{}`), ArgsHash: "h", State: Pending,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: k2.Owner()}
	if err := s.Create(ctx, a2, nil); err != nil {
		t.Fatal(err)
	}
	if swept, _ := s.SweepOrphans(ctx, nil); len(swept) != 0 {
		t.Fatalf("swept a live lease's request: %v", ids(swept))
	}
	if err := k2.Close(); err != nil {
		t.Fatal(err)
	}
	swept, err := s.SweepOrphans(ctx, nil)
	if err != nil || len(swept) != 1 || swept[0].ID != a2.ID {
		t.Fatalf("sweep after release: %v, %v", ids(swept), err)
	}
}
