package approval

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/internal/store"
)

// askN starts n identical asks, each with its own context, and waits until
// they all wait (one request, n-1 collapsed into it).
func askN(t *testing.T, b *Broker, s store.Store, n int, req *Request) ([]chan askResult, []context.CancelFunc, string) {
	t.Helper()
	chs := make([]chan askResult, n)
	cancels := make([]context.CancelFunc, n)
	for i := range n {
		ctx, cancel := context.WithCancel(t.Context())
		chs[i], cancels[i] = ask(b, ctx, req), cancel
		if i == 0 {
			pendingID(t, s) // the first one is the leader
		}
	}
	synctest.Wait()
	l, _ := s.List(t.Context(), store.Filter{State: store.Pending})
	if len(l) != 1 {
		t.Fatalf("%d identical asks: %d pending requests", n, len(l))
	}
	rows, _ := s.Audit(t.Context(), store.AuditFilter{Event: "approval_collapsed"})
	joined := 0
	for _, r := range rows {
		if r.Record.RequestID == l[0].ID {
			joined++
		}
	}
	if joined != n-1 {
		t.Fatalf("%d identical asks: %d collapsed into the pending one", n, joined)
	}
	return chs, cancels, l[0].ID
}

// N identical concurrent asks make one pending request; one decision
// resolves them all; each approved call runs and is recorded once.
func TestCollapseIdentical(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approve", false: "deny"}[approve], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 6
				s := memStore(t)
				b := newBroker(t, s, nil)
				chs, _, id := askN(t, b, s, n, lsReq)
				if _, err := b.Decide(t.Context(), id, "alice", approve, "use make clean"); err != nil {
					t.Fatal(err)
				}
				for i, ch := range chs {
					r := <-ch
					if r.err != nil || r.out.ID != id || r.out.Approved != approve || r.out.By != "alice" {
						t.Fatalf("call %d: %+v %v", i, r.out, r.err)
					}
					if !approve && r.out.Reason != "use make clean" {
						t.Errorf("call %d: denial reason %q", i, r.out.Reason)
					}
					if approve && string(r.out.Args) != `{"command":"rm -rf build"}` {
						t.Errorf("call %d: args %s", i, r.out.Args)
					}
				}
				if approve {
					// Executions may be recorded through another broker of
					// the process on the same store (as mcp.Approver does).
					other := newBroker(t, s, nil)
					for i := range n {
						rec := []*Broker{b, other}[i%2]
						if err := rec.Executed(t.Context(), id, true, "ran"); err != nil {
							t.Fatalf("execution %d: %v", i, err)
						}
					}
					// Beyond the calls that waited, nothing more runs on it.
					if err := b.Executed(t.Context(), id, true, "again"); !errors.Is(err, store.ErrConflict) {
						t.Errorf("execution %d: %v", n+1, err)
					}
				}
				a, _ := s.Get(t.Context(), id)
				want := map[bool]store.State{true: store.Executed, false: store.Denied}[approve]
				if a.State != want {
					t.Errorf("request %s, want %s", a.State, want)
				}
				rows, _ := s.Audit(t.Context(), store.AuditFilter{Event: "approval_executed"})
				if want := map[bool]int{true: n, false: 0}[approve]; len(rows) != want {
					t.Errorf("%d executions audited, want %d", len(rows), want)
				}
				if l, _ := s.List(t.Context(), store.Filter{}); len(l) != 1 {
					t.Errorf("%d requests stored", len(l))
				}
				if _, _, err := s.VerifyAudit(t.Context()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// The first caller gives up: the request stays for the others, and their
// decision still comes. When the last one gives up, the request ends.
func TestCollapseWaitersLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		chs, cancels, id := askN(t, b, s, 3, lsReq)
		cancels[0]() // the leader
		r := <-chs[0]
		if !errors.Is(r.err, context.Canceled) || r.out.Approved {
			t.Fatalf("leader: %+v %v", r.out, r.err)
		}
		cancels[2]()
		if r := <-chs[2]; !errors.Is(r.err, context.Canceled) || r.out.Approved {
			t.Fatalf("follower 2: %+v %v", r.out, r.err)
		}
		synctest.Wait()
		if a, _ := s.Get(t.Context(), id); a.State != store.Pending {
			t.Fatalf("request %s while a call still waits", a.State)
		}
		if _, err := b.Decide(t.Context(), id, "alice", true, ""); err != nil {
			t.Fatal(err)
		}
		if r := <-chs[1]; r.err != nil || !r.out.Approved {
			t.Fatalf("the remaining call: %+v %v", r.out, r.err)
		}
		if err := b.Executed(t.Context(), id, true, "ok"); err != nil {
			t.Fatal(err)
		}
		if err := b.Executed(t.Context(), id, true, "ok"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a call that left was counted to run: %v", err)
		}

		// Everyone leaves: the request is cancelled, and the next
		// identical call asks anew.
		chs, cancels, id = askN(t, b, s, 2, with(func(r *Request) { r.Session = "s9" }))
		cancels[1]()
		<-chs[1]
		cancels[0]()
		if r := <-chs[0]; !errors.Is(r.err, context.Canceled) || r.out.State != store.Cancelled {
			t.Fatalf("last waiter: %+v %v", r.out, r.err)
		}
		if a, _ := s.Get(t.Context(), id); a.State != store.Cancelled {
			t.Fatalf("request %s after every caller left", a.State)
		}
		ch := ask(b, t.Context(), with(func(r *Request) { r.Session = "s9" }))
		synctest.Wait()
		l, _ := s.List(t.Context(), store.Filter{State: store.Pending})
		if len(l) != 1 || l[0].ID == id {
			t.Fatalf("the next identical call did not ask anew: %+v", l)
		}
		b.Decide(t.Context(), l[0].ID, "alice", false, "no")
		<-ch
		if _, _, err := s.VerifyAudit(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// Calls that differ in session, workspace, tool or arguments never share a
// request.
func TestCollapseOnlyIdentical(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		reqs := []*Request{
			lsReq,
			with(func(r *Request) { r.Session = "s2" }),
			with(func(r *Request) { r.Workspace = "/w2" }),
			with(func(r *Request) { r.Tool = "write_file" }),
			with(func(r *Request) { r.Args = []byte(`{"command":"rm -rf build "}`) }),
		}
		var chs []chan askResult
		for _, r := range reqs {
			chs = append(chs, ask(b, t.Context(), r))
		}
		synctest.Wait()
		l, _ := s.List(t.Context(), store.Filter{State: store.Pending})
		if len(l) != len(reqs) {
			t.Fatalf("%d pending requests for %d different calls", len(l), len(reqs))
		}
		for _, a := range l {
			if _, err := b.Decide(t.Context(), a.ID, "alice", false, "no"); err != nil {
				t.Fatal(err)
			}
		}
		for _, ch := range chs {
			if r := <-ch; r.out.Approved {
				t.Fatal("approved")
			}
		}
	})
}

// Approving collapsed calls with a grant runs each of them, and the next
// identical call is granted without a new pending request.
func TestCollapseThenGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		chs, _, id := askN(t, b, s, 3, lsReq)
		_, g, err := b.ApproveWithGrant(t.Context(), id, "bob", "", 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for i, ch := range chs {
			if r := <-ch; r.err != nil || !r.out.Approved || r.out.ID != id {
				t.Fatalf("call %d: %+v %v", i, r.out, r.err)
			}
			if err := b.Executed(t.Context(), id, true, "ok"); err != nil {
				t.Fatal(err)
			}
		}
		r := <-ask(b, t.Context(), lsReq)
		if r.err != nil || r.out.Grant != g.ID || r.out.By != "bob" {
			t.Fatalf("next identical call: %+v %v", r.out, r.err)
		}
		if l, _ := s.List(t.Context(), store.Filter{State: store.Pending}); len(l) != 0 {
			t.Errorf("%d pending requests", len(l))
		}
		if _, _, err := s.VerifyAudit(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
