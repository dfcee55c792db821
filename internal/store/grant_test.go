package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/audit"
)

// clock is a settable store clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// call is what a grant is matched on.
type call struct{ tool, args, hash, ws, session string }

var base = call{tool: "run_command", args: `{"command":"make test"}`, hash: "H1", ws: "/w", session: "s1"}

func pendingCall(t *testing.T, s Store, c call, now time.Time) *Approval {
	t.Helper()
	a := &Approval{
		ID: fmt.Sprintf("%032x", reqN.Add(1)), Tool: c.tool, Args: json.RawMessage(c.args), ArgsHash: c.hash,
		Workspace: c.ws, Session: c.session, State: Pending, CreatedAt: now, ExpiresAt: now.Add(time.Minute), Owner: CurrentOwner(),
	}
	if err := s.Create(context.Background(), a, &audit.Record{Event: "approval_request", Tool: a.Tool}); err != nil {
		t.Fatal(err)
	}
	return a
}

// laterCall is an identical-or-not call arriving after the grant, as the
// broker builds it before asking.
func laterCall(c call, now time.Time) *Approval {
	return &Approval{
		ID: fmt.Sprintf("%032x", reqN.Add(1)), Tool: c.tool, Args: json.RawMessage(c.args), ArgsHash: c.hash,
		Workspace: c.ws, Session: c.session, State: Pending, CreatedAt: now, ExpiresAt: now.Add(time.Minute), Owner: CurrentOwner(),
	}
}

func grantOn(t *testing.T, s *DB, id string, d time.Duration) *Grant {
	t.Helper()
	_, g, err := s.DecideWithGrant(context.Background(), id, approve("alice"), fmt.Sprintf("g%031x", reqN.Add(1)), d,
		&audit.Record{Event: "approval", Decision: "approved", DecidedBy: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Each row tries to get a call past a grant that does not cover it.
func TestGrantScope(t *testing.T) { eachBackend(t, grantScope) }

func grantScope(t *testing.T, b backend) {
	tests := []struct {
		name string
		c    call
		want bool
	}{
		{"identical call", base, true},
		{"other hash", call{base.tool, base.args, "H2", base.ws, base.session}, false},
		{"other args, same hash (a forged row)", call{base.tool, `{"command":"make test "}`, base.hash, base.ws, base.session}, false},
		{"other tool", call{"write_file", base.args, base.hash, base.ws, base.session}, false},
		{"other workspace", call{base.tool, base.args, base.hash, "/other", base.session}, false},
		{"other session", call{base.tool, base.args, base.hash, base.ws, "s2"}, false},
		{"no session", call{base.tool, base.args, base.hash, base.ws, ""}, false},
	}
	s, c := b.openClocked(t)
	a := pendingCall(t, s, base, c.now())
	g := grantOn(t, s, a.ID, 10*time.Minute)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := laterCall(tt.c, c.now())
			got, err := s.UseGrant(context.Background(), l, &audit.Record{Event: "approval", Tool: l.Tool})
			if (err == nil) != tt.want || (err != nil && !errors.Is(err, ErrNoGrant)) {
				t.Fatalf("UseGrant = %v, %v; want covered %v", got, err, tt.want)
			}
			_, gerr := s.Get(context.Background(), l.ID)
			if !tt.want {
				if !errors.Is(gerr, ErrNotFound) {
					t.Errorf("an uncovered call was stored: %v", gerr)
				}
				return
			}
			if got.ID != g.ID {
				t.Errorf("used grant %s, want %s", got.ID, g.ID)
			}
			st, err := s.Get(context.Background(), l.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := struct {
				State          State
				Decision, By   string
				Claimed        bool
				ReasonHasGrant bool
			}{Approved, "granted", "alice", true, true}
			gotv := want
			gotv.State, gotv.Decision, gotv.By, gotv.Claimed, gotv.ReasonHasGrant = st.State, st.Decision, st.DecidedBy, st.Claimed, st.Reason == "grant "+g.ID
			if d := cmp.Diff(want, gotv); d != "" {
				t.Errorf("granted row (-want +got):\n%s", d)
			}
		})
	}
}

func TestGrantLifecycle(t *testing.T) { eachBackend(t, grantLifecycle) }

func grantLifecycle(t *testing.T, b backend) {
	ctx := context.Background()
	s, c := b.openClocked(t)
	use := func() error {
		l := laterCall(base, c.now())
		_, err := s.UseGrant(ctx, l, nil)
		return err
	}

	// Expiry: used before, refused after, recorded once.
	g := grantOn(t, s, pendingCall(t, s, base, c.now()).ID, 5*time.Minute)
	if err := use(); err != nil {
		t.Fatal(err)
	}
	c.add(5*time.Minute - time.Millisecond)
	if err := use(); err != nil {
		t.Fatalf("refused just before expiry: %v", err)
	}
	c.add(time.Millisecond)
	if err := use(); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("used at expiry: %v", err)
	}
	if l, _ := s.ListGrants(ctx, GrantFilter{}); len(l) != 0 {
		t.Errorf("expired grant listed as active: %+v", l)
	}
	exp, err := s.ExpireGrants(ctx)
	if err != nil || len(exp) != 1 || exp[0].ID != g.ID || exp[0].Uses != 2 || exp[0].LastEvent != "expired" {
		t.Fatalf("ExpireGrants = %+v, %v", exp, err)
	}
	if again, _ := s.ExpireGrants(ctx); len(again) != 0 {
		t.Errorf("expiry recorded twice: %+v", again)
	}
	if _, err := s.RevokeGrant(ctx, g.ID, "alice"); !errors.Is(err, ErrConflict) {
		t.Errorf("revoked an expired grant: %v", err)
	}

	// Revoke: refused after, twice is a conflict, unknown is not found.
	g2 := grantOn(t, s, pendingCall(t, s, base, c.now()).ID, time.Hour)
	if err := use(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeGrant(ctx, g2.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := use(); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("used after revoke: %v", err)
	}
	var gse *GrantStateError
	if _, err := s.RevokeGrant(ctx, g2.ID, "alice"); !errors.As(err, &gse) || gse.State != "revoked" || gse.By != "bob" {
		t.Errorf("second revoke: %v", err)
	}
	if _, err := s.RevokeGrant(ctx, "nope", "alice"); !errors.Is(err, ErrGrantNotFound) {
		t.Errorf("revoke unknown: %v", err)
	}

	// The audit chain has every event and still verifies.
	rows, err := s.Audit(ctx, AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Record.Event]++
	}
	want := map[string]int{"approval_request": 2, "approval": 2, "grant_created": 2, "grant_used": 3, "grant_expired": 1, "grant_revoked": 1}
	if d := cmp.Diff(want, count); d != "" {
		t.Errorf("audit events (-want +got):\n%s", d)
	}
	if _, _, err := s.VerifyAudit(ctx); err != nil {
		t.Fatal(err)
	}
	all, _ := s.GrantChanges(ctx, 0, 0)
	if len(all) != 2 || all[0].ID != g.ID || all[1].LastEvent != "revoked" {
		t.Errorf("GrantChanges = %+v", all)
	}
}

// A grant only comes with an approval of a live PENDING request with a session.
func TestGrantRefused(t *testing.T) { eachBackend(t, grantRefused) }

func grantRefused(t *testing.T, b backend) {
	ctx := context.Background()
	s, c := b.openClocked(t)
	deny := Transition{To: Denied, Decision: "denied", By: "alice", Reason: "no"}
	tests := []struct {
		name  string
		setup func(id string)
		c     call
		t     Transition
		want  error
	}{
		{"denied request", func(id string) { s.Decide(ctx, id, deny, nil) }, base, approve("alice"), ErrConflict},
		{"approved request", func(id string) { s.Decide(ctx, id, approve("bob"), nil) }, base, approve("alice"), ErrConflict},
		{"executed request", func(id string) {
			s.Decide(ctx, id, approve("bob"), nil)
			s.Claim(ctx, id)
			s.MarkExecuted(ctx, id, "ok", nil)
		}, base, approve("alice"), ErrConflict},
		{"timed out request", func(id string) {
			s.Resolve(ctx, id, Transition{To: TimedOut, Decision: "timed_out", By: "timeout"}, nil)
		}, base, approve("alice"), ErrConflict},
		{"expired, still pending", func(string) { c.add(2 * time.Minute) }, base, approve("alice"), ErrExpired},
		{"no session", func(string) {}, call{base.tool, base.args, base.hash, base.ws, ""}, approve("alice"), ErrGrantScope},
		{"a denial", func(string) {}, base, deny, nil},
	}
	for _, tt := range tests {
		a := pendingCall(t, s, tt.c, c.now())
		tt.setup(a.ID)
		before, _ := s.Get(ctx, a.ID)
		_, g, err := s.DecideWithGrant(ctx, a.ID, tt.t, NewTestID(), time.Hour, nil)
		if err == nil || g != nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: DecideWithGrant = %v, %v; want %v", tt.name, g, err, tt.want)
		}
		after, _ := s.Get(ctx, a.ID)
		if before.State != after.State || before.Seq != after.Seq {
			t.Errorf("%s: the refused grant changed the request: %s → %s", tt.name, before.State, after.State)
		}
	}
	if l, _ := s.ListGrants(ctx, GrantFilter{All: true}); len(l) != 0 {
		t.Errorf("refused grants were stored: %+v", l)
	}
	if _, _, err := s.VerifyAudit(ctx); err != nil {
		t.Fatal(err)
	}
}

// NewTestID is a fresh grant id.
func NewTestID() string { return fmt.Sprintf("t%031x", reqN.Add(1)) }

// Approve-with-grant races deny and plain approvals: one wins, and a grant
// exists only if the grant won.
func TestGrantRace(t *testing.T) { eachBackend(t, grantRace) }

func grantRace(t *testing.T, b backend) {
	ctx := context.Background()
	s, c := b.openClocked(t)
	for round := range 10 {
		a := pendingCall(t, s, base, c.now())
		var wins atomic.Int64
		var granted atomic.Bool
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				var err error
				switch i % 3 {
				case 0:
					_, _, err = s.DecideWithGrant(ctx, a.ID, approve("alice"), NewTestID(), time.Hour, nil)
					if err == nil {
						granted.Store(true)
					}
				case 1:
					_, err = s.Decide(ctx, a.ID, Transition{To: Denied, Decision: "denied", By: "bob", Reason: "no"}, nil)
				default:
					_, err = s.Decide(ctx, a.ID, approve("carol"), nil)
				}
				if err == nil {
					wins.Add(1)
				} else if !errors.Is(err, ErrConflict) {
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, wins.Load())
		}
		cur, _ := s.Get(ctx, a.ID)
		var n int
		rawQueryRow(s, "SELECT COUNT(*) FROM grants WHERE approval_id = ?", a.ID).Scan(&n)
		if want := map[bool]int{true: 1, false: 0}[granted.Load()]; n != want || (granted.Load() && cur.DecidedBy != "alice") {
			t.Fatalf("round %d: state %s by %s, %d grants, grant won %v", round, cur.State, cur.DecidedBy, n, granted.Load())
		}
	}
	if _, _, err := s.VerifyAudit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A database written by a warden of schema version 1 (no grants, no
// leases, no schema_migrations: only PRAGMA user_version) is brought up to
// date and keeps its requests.
func TestMigrateV1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(schemaV1 + "PRAGMA user_version = 1;"); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`INSERT INTO approvals (request_id, tool, arguments, args_hash, state, created_at, expires_at, owner_pid, seq)
		VALUES ('old', 'run_command', '{}', 'h', 'PENDING', 1, 2, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := OpenSQLite(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	s.DB().QueryRow("PRAGMA user_version").Scan(&v)
	if v != schemaVersion {
		t.Errorf("user_version %d after migration", v)
	}
	got, err := s.SchemaVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int{1, 2, 3, 4}, got); d != "" {
		t.Errorf("schema_migrations (-want +got):\n%s", d)
	}
	if a, err := s.Get(ctx, "old"); err != nil || a.Owner.Lease != "" {
		t.Fatalf("old request: %+v, %v", a, err)
	}
	if _, err := s.ListGrants(ctx, GrantFilter{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, CurrentOwner(), time.Minute); err != nil {
		t.Fatal(err)
	}
}
