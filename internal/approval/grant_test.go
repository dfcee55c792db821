package approval

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/store"
)

// grantFixture asks for lsReq, approves it with a 15-minute grant (as
// alice) and runs it. Call it in a synctest bubble: the store's clock is
// the bubble's. Unanswered asks time out after a second.
func grantFixture(t *testing.T) (*Broker, *store.SQLite, *store.Grant) {
	t.Helper()
	s := memStore(t)
	b := newBroker(t, s, func(o *Options) { o.Timeout = time.Second; o.GrantMax = 30 * time.Minute })
	ch := ask(b, t.Context(), lsReq)
	id := pendingID(t, s)
	a, g, err := b.ApproveWithGrant(t.Context(), id, "alice", "fine for a while", 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != store.Approved || g.ApprovalID != id || g.CreatedBy != "alice" || g.Session != "s1" || g.Workspace != "/w" {
		t.Fatalf("approval %+v, grant %+v", a, g)
	}
	r := <-ch
	if r.err != nil || !r.out.Approved || r.out.Grant != "" {
		t.Fatalf("the approved request itself: %+v %v", r.out, r.err)
	}
	if err := b.Executed(t.Context(), id, true, "ok"); err != nil {
		t.Fatal(err)
	}
	return b, s, g
}

// granted asks for req and reports whether a grant let it through without
// asking; a call that was asked times out (nobody answers) and is denied.
func granted(t *testing.T, b *Broker, req *Request) (Outcome, bool) {
	t.Helper()
	r := <-ask(b, t.Context(), req)
	switch {
	case r.out.Grant != "":
		if r.err != nil || !r.out.Approved || r.out.State != store.Approved {
			t.Fatalf("granted but %+v %v", r.out, r.err)
		}
		if err := b.Executed(t.Context(), r.out.ID, true, "ok"); err != nil {
			t.Fatalf("a granted call cannot record its execution: %v", err)
		}
		return r.out, true
	case r.out.State == store.TimedOut && !r.out.Approved:
		return r.out, false
	}
	t.Fatalf("neither granted nor asked: %+v %v", r.out, r.err)
	return r.out, false
}

func with(mod func(r *Request)) *Request {
	r := *lsReq
	mod(&r)
	return &r
}

// Each row tries to get a call past a grant made for another one.
func TestGrantScope(t *testing.T) {
	tests := []struct {
		name string
		req  *Request
		want bool
	}{
		{"identical call", lsReq, true},
		{"same arguments, other spacing and key order", with(func(r *Request) {
			r.Args = json.RawMessage(" {\n \"command\" :\t\"rm -rf build\" } ")
		}), true},
		{"a tool alias is the same tool", with(func(r *Request) { r.Tool = "shell" }), true},
		{"duplicated key: the last value is what runs", with(func(r *Request) {
			r.Args = json.RawMessage(`{"command":"echo hi","command":"rm -rf build"}`)
		}), true},
		{"one more byte in a value", with(func(r *Request) { r.Args = json.RawMessage(`{"command":"rm -rf build/"}`) }), false},
		{"a space inside a value", with(func(r *Request) { r.Args = json.RawMessage(`{"command":"rm -rf  build"}`) }), false},
		{"an extra argument", with(func(r *Request) { r.Args = json.RawMessage(`{"command":"rm -rf build","timeout_secs":1}`) }), false},
		{"duplicated key: the last value differs", with(func(r *Request) {
			r.Args = json.RawMessage(`{"command":"rm -rf build","command":"rm -rf /"}`)
		}), false},
		{"other session", with(func(r *Request) { r.Session = "s2" }), false},
		{"no session", with(func(r *Request) { r.Session = "" }), false},
		{"other workspace", with(func(r *Request) { r.Workspace = "/w2" }), false},
		{"other tool, same arguments", with(func(r *Request) { r.Tool = "write_file" }), false},
		{"other agent, same session", with(func(r *Request) { r.Agent = "plan" }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, s, g := grantFixture(t)
				out, ok := granted(t, b, tt.req)
				if ok != tt.want {
					t.Fatalf("granted = %v, want %v (%+v)", ok, tt.want, out)
				}
				if !ok {
					return
				}
				a, err := s.Get(t.Context(), out.ID)
				if err != nil {
					t.Fatal(err)
				}
				got := []string{string(a.State), a.Decision, a.DecidedBy, a.Reason, out.Grant, out.By}
				want := []string{string(store.Executed), "granted", "alice", "grant " + g.ID, g.ID, "alice"}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("granted request (-want +got):\n%s", d)
				}
				rows, _ := s.Audit(t.Context(), store.AuditFilter{})
				var decision, used bool
				for _, r := range rows {
					decision = decision || r.Record.RequestID == out.ID && r.Record.Event == "approval" && r.Record.Decision == "granted" && r.Record.DecidedBy == "alice"
					used = used || r.Record.RequestID == out.ID && r.Record.Event == "grant_used"
				}
				if !decision || !used {
					t.Errorf("granted call not audited (decision %v, grant_used %v)", decision, used)
				}
				if _, _, err := s.VerifyAudit(t.Context()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// A grant stops at its expiry, and the expiry is recorded.
func TestGrantExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s, g := grantFixture(t)
		time.Sleep(time.Until(g.ExpiresAt) - time.Second - time.Millisecond)
		if _, ok := granted(t, b, lsReq); !ok { // takes no time
			t.Fatal("refused before expiry")
		}
		time.Sleep(time.Until(g.ExpiresAt))
		if _, ok := granted(t, b, lsReq); ok {
			t.Fatal("a grant was used at its expiry")
		}
		if l, err := b.Grants(t.Context()); err != nil || len(l) != 0 {
			t.Fatalf("active grants after expiry: %+v %v", l, err)
		}
		rows, _ := s.Audit(t.Context(), store.AuditFilter{Event: "grant_expired"})
		if len(rows) != 1 || rows[0].Record.RequestID != g.ApprovalID {
			t.Errorf("expiry audit rows %+v", rows)
		}
		if err := b.RevokeGrant(t.Context(), g.ID, "bob"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("revoked an expired grant: %v", err)
		}
		if _, _, err := s.VerifyAudit(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestGrantRevoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, s, g := grantFixture(t)
		if l, _ := b.Grants(t.Context()); len(l) != 1 || l[0].ID != g.ID {
			t.Fatalf("Grants = %+v", l)
		}
		if err := b.RevokeGrant(t.Context(), g.ID, "mallory"); !errors.Is(err, ErrNotSupervisor) {
			t.Fatalf("a non-supervisor revoked: %v", err)
		}
		if _, ok := granted(t, b, lsReq); !ok {
			t.Fatal("a refused revoke still ended the grant")
		}
		if err := b.RevokeGrant(t.Context(), g.ID, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, ok := granted(t, b, lsReq); ok {
			t.Fatal("a revoked grant was used")
		}
		if err := b.RevokeGrant(t.Context(), g.ID, "alice"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("second revoke: %v", err)
		}
		if err := b.RevokeGrant(t.Context(), NewID(), "alice"); !errors.Is(err, store.ErrGrantNotFound) {
			t.Errorf("unknown grant: %v", err)
		}
		cur, _ := s.GetGrant(t.Context(), g.ID)
		if cur.RevokedBy != "bob" || cur.Uses != 1 || cur.LastEvent != "revoked" {
			t.Errorf("revoked grant %+v", cur)
		}
		if _, _, err := s.VerifyAudit(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// A grant comes only from a supervisor approving a live request, for a
// positive duration, capped.
func TestGrantRefused(t *testing.T) {
	tests := []struct {
		name string
		// prepare moves the pending request id on before the grant.
		prepare func(t *testing.T, b *Broker, id string, ch chan askResult)
		by      string
		d       time.Duration
		want    error
	}{
		{"non-supervisor", nil, "mallory", time.Minute, ErrNotSupervisor},
		{"empty supervisor", nil, "", time.Minute, ErrNotSupervisor},
		{"zero duration", nil, "alice", 0, ErrGrantDuration},
		{"negative duration", nil, "alice", -time.Minute, ErrGrantDuration},
		{"denied request", func(t *testing.T, b *Broker, id string, ch chan askResult) {
			if _, err := b.Decide(t.Context(), id, "bob", false, "no"); err != nil {
				t.Fatal(err)
			}
			<-ch
		}, "alice", time.Minute, store.ErrConflict},
		{"timed out request", func(t *testing.T, b *Broker, id string, ch chan askResult) { <-ch }, "alice", time.Minute, store.ErrConflict},
		{"executed request", func(t *testing.T, b *Broker, id string, ch chan askResult) {
			if _, err := b.Decide(t.Context(), id, "bob", true, ""); err != nil {
				t.Fatal(err)
			}
			<-ch
			if err := b.Executed(t.Context(), id, true, "ok"); err != nil {
				t.Fatal(err)
			}
		}, "alice", time.Minute, store.ErrConflict},
		{"unknown request", func(t *testing.T, b *Broker, id string, ch chan askResult) {
			b.Decide(t.Context(), id, "bob", false, "clean up")
			<-ch
		}, "alice", time.Minute, store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := memStore(t)
				b := newBroker(t, s, func(o *Options) { o.Timeout = time.Second })
				ch := ask(b, t.Context(), lsReq)
				id := pendingID(t, s)
				if tt.prepare != nil {
					tt.prepare(t, b, id, ch)
				}
				target := id
				if tt.want == store.ErrNotFound {
					target = NewID()
				}
				a, g, err := b.ApproveWithGrant(t.Context(), target, tt.by, "", tt.d)
				if !errors.Is(err, tt.want) || a != nil || g != nil {
					t.Fatalf("ApproveWithGrant = %+v, %+v, %v; want %v", a, g, err, tt.want)
				}
				if l, _ := s.ListGrants(t.Context(), store.GrantFilter{All: true}); len(l) != 0 {
					t.Fatalf("a refused grant was stored: %+v", l)
				}
				if tt.prepare == nil { // still pending: nothing was decided
					if cur, _ := s.Get(t.Context(), id); cur.State != store.Pending {
						t.Errorf("the refused grant decided the request: %s", cur.State)
					}
					<-ch
				}
				if _, ok := granted(t, b, lsReq); ok {
					t.Error("a call was granted without a grant")
				}
			})
		})
	}
}

// grant_minutes above grant_max_minutes is capped, not refused.
func TestGrantCapped(t *testing.T) {
	for _, tt := range []struct {
		max, asked, want time.Duration
	}{
		{0, 24 * time.Hour, DefaultGrantMax},
		{30 * time.Minute, 31 * time.Minute, 30 * time.Minute},
		{30 * time.Minute, 30 * time.Minute, 30 * time.Minute},
		{30 * time.Minute, time.Minute, time.Minute},
	} {
		synctest.Test(t, func(t *testing.T) {
			s := memStore(t)
			b := newBroker(t, s, func(o *Options) { o.GrantMax = tt.max })
			ch := ask(b, t.Context(), lsReq)
			_, g, err := b.ApproveWithGrant(t.Context(), pendingID(t, s), "alice", "", tt.asked)
			if err != nil {
				t.Fatal(err)
			}
			<-ch
			if got := g.ExpiresAt.Sub(g.CreatedAt); got != tt.want {
				t.Errorf("max %s, asked %s: grant lasts %s, want %s", tt.max, tt.asked, got, tt.want)
			}
		})
	}
}

// Approving with a grant races a denial and a plain approval: exactly one
// wins, the waiting call sees it, and a grant exists only if it won.
func TestGrantRacesDecisions(t *testing.T) {
	t.Parallel()
	s := fileStore(t)
	b := newBroker(t, s, nil)
	for round := range 8 {
		req := with(func(r *Request) { r.Session = "race" + string(rune('a'+round)) })
		ch := ask(b, t.Context(), req)
		var id string
		for id == "" {
			if l, _ := s.List(t.Context(), store.Filter{State: store.Pending}); len(l) == 1 {
				id = l[0].ID
			}
			time.Sleep(time.Millisecond)
		}
		var wins atomic.Int64
		var grantWon atomic.Bool
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 9 {
			wg.Go(func() {
				<-start
				var err error
				switch i % 3 {
				case 0:
					_, _, err = b.ApproveWithGrant(t.Context(), id, "alice", "", time.Minute)
					grantWon.CompareAndSwap(false, err == nil)
				case 1:
					_, err = b.Decide(t.Context(), id, "bob", false, "no")
				default:
					_, err = b.Decide(t.Context(), id, "bob", true, "")
				}
				if err == nil {
					wins.Add(1)
				} else if !errors.Is(err, store.ErrConflict) {
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		close(start)
		wg.Wait()
		r := <-ch
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d decisions won", round, wins.Load())
		}
		gs, _ := s.ListGrants(context.Background(), store.GrantFilter{All: true})
		n := 0
		for _, g := range gs {
			if g.ApprovalID == id {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[grantWon.Load()]; n != want || (grantWon.Load() && (!r.out.Approved || r.out.By != "alice")) {
			t.Fatalf("round %d: outcome %+v, %d grants, grant won %v", round, r.out, n, grantWon.Load())
		}
	}
	if _, _, err := s.VerifyAudit(t.Context()); err != nil {
		t.Fatal(err)
	}
}
