package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/internal/store"
)

// leaving is lsReq from a caller that waits at most 50 s.
func leaving() *Request {
	r := *lsReq
	r.MaxWait = 50 * time.Second
	return &r
}

func requireState(t *testing.T, s store.Store, id string, want store.State) *store.Approval {
	t.Helper()
	a, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != want {
		t.Fatalf("request %s is %s, want %s", id, a.State, want)
	}
	return a
}

func countRequests(t *testing.T, s store.Store) int {
	t.Helper()
	l, err := s.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l)
}

// Past MaxWait the caller gets a *PendingError and the request stays
// PENDING, owned by no process; approved meanwhile, the same call made again
// runs once, and a third identical call asks anew.
func TestLeftRequestApprovedRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		start := time.Now()
		r := <-ask(b, t.Context(), leaving())
		var pe *PendingError
		if !errors.As(r.err, &pe) || !errors.Is(r.err, ErrPending) || r.out.Approved {
			t.Fatalf("got %+v, %v; want a *PendingError", r.out, r.err)
		}
		if got := r.at.Sub(start); got != 50*time.Second {
			t.Errorf("left after %s, want 50s", got)
		}
		a := requireState(t, s, pe.ID, store.Pending)
		if a.Owner != store.Unowned || !pe.ExpiresAt.Equal(a.ExpiresAt) {
			t.Errorf("owner %+v expires %s, want unowned, %s", a.Owner, a.ExpiresAt, pe.ExpiresAt)
		}
		// Nobody waits: a decision is still taken, and kept for the call.
		time.Sleep(2 * time.Minute)
		requireState(t, s, pe.ID, store.Pending)
		if _, err := b.Decide(t.Context(), pe.ID, "alice", true, "fine"); err != nil {
			t.Fatal(err)
		}
		r2 := <-ask(b, t.Context(), leaving())
		if r2.err != nil || !r2.out.Approved || r2.out.ID != pe.ID || r2.out.By != "alice" {
			t.Fatalf("the same call again: %+v, %v; want request %s approved", r2.out, r2.err, pe.ID)
		}
		if err := b.Executed(t.Context(), pe.ID, true, "ok"); err != nil {
			t.Fatal(err)
		}
		// It ran once: a third identical call is a new request.
		r3 := <-ask(b, t.Context(), leaving())
		if !errors.As(r3.err, &pe) || r3.out.ID == r2.out.ID {
			t.Fatalf("third call: %+v, %v; want a new pending request", r3.out, r3.err)
		}
		if n := countRequests(t, s); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

// The same call made again while its request is still pending waits on that
// request (no second row), and a decision then reaches it.
func TestLeftRequestTakenUpWhilePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		r := <-ask(b, t.Context(), leaving())
		var pe *PendingError
		if !errors.As(r.err, &pe) {
			t.Fatal(r.err)
		}
		ch := ask(b, t.Context(), leaving())
		time.Sleep(10 * time.Second)
		if _, err := b.Decide(t.Context(), pe.ID, "bob", false, "not today"); err != nil {
			t.Fatal(err)
		}
		r2 := <-ch
		if r2.err != nil || r2.out.Approved || r2.out.State != "DENIED" || r2.out.Reason != "not today" || r2.out.ID != pe.ID {
			t.Fatalf("got %+v, %v", r2.out, r2.err)
		}
		if n := countRequests(t, s); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
		rows, _ := s.Audit(t.Context(), store.AuditFilter{Event: "approval_resumed"})
		if len(rows) != 1 || rows[0].Record.RequestID != pe.ID {
			t.Errorf("resumed audit rows: %+v", rows)
		}
	})
}

// A denial nobody received answers the same call made again, once, with
// its reason; the call after that is asked anew.
func TestLeftRequestDenied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		r := <-ask(b, t.Context(), leaving())
		var pe *PendingError
		if !errors.As(r.err, &pe) {
			t.Fatal(r.err)
		}
		if _, err := b.Decide(t.Context(), pe.ID, "bob", false, "use the staging db"); err != nil {
			t.Fatal(err)
		}
		r = <-ask(b, t.Context(), leaving())
		if r.err != nil || r.out.State != "DENIED" || r.out.Reason != "use the staging db" || r.out.ID != pe.ID {
			t.Fatalf("got %+v, %v", r.out, r.err)
		}
		first := pe.ID
		r = <-ask(b, t.Context(), leaving())
		if !errors.As(r.err, &pe) || pe.ID == first {
			t.Fatalf("after the denial was told: %+v, %v", r.out, r.err)
		}
		if n := countRequests(t, s); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

// A denial the waiting caller received is not taken up by the next call.
func TestDeliveredDenialNotRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		ch := ask(b, t.Context(), leaving())
		id := pendingID(t, s)
		if _, err := b.Decide(t.Context(), id, "bob", false, "no"); err != nil {
			t.Fatal(err)
		}
		if r := <-ch; r.out.State != "DENIED" {
			t.Fatalf("got %+v, %v", r.out, r.err)
		}
		r := <-ask(b, t.Context(), leaving())
		var pe *PendingError
		if !errors.As(r.err, &pe) || pe.ID == id {
			t.Fatalf("the next call: %+v, %v; want a new request", r.out, r.err)
		}
	})
}

// A caller whose context ends (an MCP client that gave up, a host that
// killed its hook) leaves its request pending: nothing is cancelled because
// a client gave up.
func TestLeftRequestSurvivesCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		ctx, cancel := context.WithCancel(t.Context())
		ch := ask(b, ctx, leaving())
		id := pendingID(t, s)
		time.Sleep(5 * time.Second)
		cancel()
		r := <-ch
		if !errors.Is(r.err, ErrPending) {
			t.Fatalf("got %+v, %v", r.out, r.err)
		}
		synctest.Wait()
		requireState(t, s, id, store.Pending)
		if _, err := b.Decide(t.Context(), id, "alice", true, ""); err != nil {
			t.Fatalf("decide after the caller left: %v", err)
		}
	})
}

// Two identical calls in flight share one request; both leave it.
func TestLeftRequestCollapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		c1 := ask(b, t.Context(), leaving())
		time.Sleep(20 * time.Second)
		c2 := ask(b, t.Context(), leaving())
		r1, r2 := <-c1, <-c2
		var p1, p2 *PendingError
		if !errors.As(r1.err, &p1) || !errors.As(r2.err, &p2) || p1.ID != p2.ID {
			t.Fatalf("got %v and %v, want one pending request", r1.err, r2.err)
		}
		if n := countRequests(t, s); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

// An expired request nobody waits on is timed out by the next broker, and
// a request of another call is never taken up.
func TestLeftRequestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		r := <-ask(b, t.Context(), leaving())
		var pe *PendingError
		if !errors.As(r.err, &pe) {
			t.Fatal(r.err)
		}
		other := leaving()
		other.Args = json.RawMessage(`{"command":"rm -rf dist"}`)
		r2 := <-ask(b, t.Context(), other)
		if !errors.As(r2.err, new(*PendingError)) || r2.out.ID == pe.ID {
			t.Fatalf("another call took up request %s: %+v %v", pe.ID, r2.out, r2.err)
		}
		time.Sleep(6 * time.Minute)
		newBroker(t, s, nil)
		a := requireState(t, s, pe.ID, store.TimedOut)
		if a.DecidedBy != "timeout" {
			t.Errorf("decided by %q", a.DecidedBy)
		}
	})
}

// Foresee says what Ask decides before asking a person, with no side
// effect: the auto-approve rule by name, then an active grant.
func TestForesee(t *testing.T) {
	t.Parallel()
	s := fileStore(t)
	auto, err := CompileAutoApprove(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newBroker(t, s, func(o *Options) { o.Auto = auto })
	f, err := b.Foresee(t.Context(), lsReq)
	if err != nil || f.Rule != "" || f.Grant != nil {
		t.Fatalf("no rule, no grant: %+v %v", f, err)
	}
	ch := ask(b, t.Context(), lsReq)
	id := pendingID(t, s)
	_, g, err := b.ApproveWithGrant(t.Context(), id, "alice", "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	f, err = b.Foresee(t.Context(), lsReq)
	if err != nil || f.Grant == nil || f.Grant.ID != g.ID {
		t.Fatalf("grant not foreseen: %+v %v", f, err)
	}
	if got, _ := s.GetGrant(t.Context(), g.ID); got.Uses != 0 {
		t.Errorf("Foresee used the grant: %d uses", got.Uses)
	}
	other := *lsReq
	other.Session = "s2"
	if f, _ := b.Foresee(t.Context(), &other); f.Grant != nil {
		t.Error("a grant of session s1 foreseen for s2")
	}
}

const leavingChildEnv = "WARDEN_TEST_APPROVAL_LEAVING_CHILD_DB"

func init() {
	if db := os.Getenv(leavingChildEnv); db != "" {
		os.Exit(leavingChild(db))
	}
}

// leavingChild asks as a hook process does: it waits a little, leaves the
// request and exits.
func leavingChild(db string) int {
	s, err := store.OpenSQLite(db, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	b, err := New(context.Background(), Options{Store: s, Supervisors: []string{"alice"}, Remote: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	req := leaving()
	req.MaxWait = 200 * time.Millisecond
	_, err = b.Ask(context.Background(), req)
	fmt.Println(err)
	if !errors.Is(err, ErrPending) {
		return 1
	}
	return 0
}

// A process that left its request pending and exited (a hook process): the
// next start does not sweep the request as an orphan; approved later, the
// same call from another process runs it once.
func TestLeftRequestOutlivesProcess(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "warden.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leavingChildEnv+"="+db)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s, err := store.OpenSQLite(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := newBroker(t, s, func(o *Options) { o.Poll = 10 * time.Millisecond }) // the next start sweeps orphans
	l, _ := s.List(t.Context(), store.Filter{})
	if len(l) != 1 || l[0].State != store.Pending || l[0].Owner != store.Unowned {
		t.Fatalf("requests after the child left: %+v", l)
	}
	id := l[0].ID
	if _, err := b.Decide(t.Context(), id, "alice", true, ""); err != nil {
		t.Fatal(err)
	}
	out, err := b.Ask(t.Context(), leaving())
	if err != nil || !out.Approved || out.ID != id {
		t.Fatalf("the same call from another process: %+v, %v", out, err)
	}
}

// A request left waiting for a change is bound to where the change lands
// (Targets). The same call made again, resolving to the same place, runs
// the approval once; the same arguments leading elsewhere (a directory on
// the way swapped for a link meanwhile) never take it up: they ask anew.
func TestLeftRequestTakenUpOnlyForTheSameTargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		write := func(real string) *Request {
			return &Request{Tool: "write_file", Args: json.RawMessage(`{"content":"x","path":"docs/a.md"}`),
				Workspace: "/ws", Session: "s1", MaxWait: 50 * time.Second,
				Targets: []Target{{Path: "docs/a.md", Real: real}}}
		}
		r := <-ask(b, t.Context(), write("docs/a.md"))
		var pe *PendingError
		if !errors.As(r.err, &pe) {
			t.Fatalf("got %+v, %v; want a *PendingError", r.out, r.err)
		}
		if _, err := b.Decide(t.Context(), pe.ID, "alice", true, "fine"); err != nil {
			t.Fatal(err)
		}
		moved := <-ask(b, t.Context(), write("elsewhere/a.md"))
		if moved.out.ID == pe.ID || moved.out.Approved {
			t.Fatalf("a call landing elsewhere took up request %s: %+v, %v", pe.ID, moved.out, moved.err)
		}
		same := <-ask(b, t.Context(), write("docs/a.md"))
		if same.err != nil || !same.out.Approved || same.out.ID != pe.ID {
			t.Fatalf("the same call again: %+v, %v; want request %s approved", same.out, same.err, pe.ID)
		}
		if err := b.Executed(t.Context(), pe.ID, true, "ok"); err != nil {
			t.Fatal(err)
		}
	})
}
