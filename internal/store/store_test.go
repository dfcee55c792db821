package store

import (
	"context"
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

var reqN atomic.Int64

func pending(t *testing.T, s Store, ttl time.Duration) *Approval {
	t.Helper()
	now := time.Now()
	a := &Approval{
		ID: fmt.Sprintf("%032x", reqN.Add(1)), Tool: "run_command", Args: json.RawMessage(`{"command":"ls"}`),
		ArgsHash: "h", State: Pending, CreatedAt: now, ExpiresAt: now.Add(ttl), Owner: CurrentOwner(),
	}
	if err := s.Create(context.Background(), a, &audit.Record{Event: "approval_request", Tool: a.Tool}); err != nil {
		t.Fatal(err)
	}
	return a
}

func approve(by string) Transition {
	return Transition{To: Approved, Decision: "approved", By: by}
}

func TestDecideExactlyOneWins(t *testing.T) { eachBackend(t, decideExactlyOneWins) }

func decideExactlyOneWins(t *testing.T, b backend) {
	s := b.open(t, nil)
	a := pending(t, s, time.Minute)
	const n = 50
	var wins, conflicts atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tr := approve(fmt.Sprintf("sup%d", i))
			if i%2 == 1 {
				tr = Transition{To: Denied, Decision: "denied", By: tr.By, Reason: "no"}
			}
			_, err := s.Decide(context.Background(), a.ID, tr, &audit.Record{Event: "approval", Decision: audit.Decision(tr.Decision), DecidedBy: tr.By})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrConflict):
				conflicts.Add(1)
			default:
				t.Errorf("decision %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("wins=%d conflicts=%d, want 1 and %d", wins.Load(), conflicts.Load(), n-1)
	}
	rows, err := s.Audit(context.Background(), AuditFilter{Event: "approval"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d decision audit rows, want 1", len(rows))
	}
	got, _ := s.Get(context.Background(), a.ID)
	if got.DecidedBy != rows[0].Record.DecidedBy {
		t.Errorf("stored decided_by %q, audited %q", got.DecidedBy, rows[0].Record.DecidedBy)
	}
	// Claims race the same way: one executor.
	if got.State == Approved {
		var claims atomic.Int64
		for range n {
			wg.Go(func() {
				if _, err := s.Claim(context.Background(), a.ID); err == nil {
					claims.Add(1)
				}
			})
		}
		wg.Wait()
		if claims.Load() != 1 {
			t.Fatalf("%d claims won, want 1", claims.Load())
		}
	}
	if _, _, err := s.VerifyAudit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestTransitions(t *testing.T) { eachBackend(t, transitions) }

func transitions(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, nil)

	// A decision after the expiry is refused, and the request stays PENDING
	// for its owner to time out.
	exp := pending(t, s, -time.Second)
	if _, err := s.Decide(ctx, exp.ID, approve("alice"), nil); !errors.Is(err, ErrExpired) {
		t.Fatalf("late decision: %v, want ErrExpired", err)
	}
	if _, err := s.Resolve(ctx, exp.ID, Transition{To: TimedOut, Decision: "timed_out", By: "timeout"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, exp.ID, approve("alice"), nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("decision after timeout: %v, want ErrConflict", err)
	}

	// Unknown id.
	if _, err := s.Decide(ctx, "nope", approve("alice"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}

	// Approve → claim → executed, each once; a second decision is refused.
	a := pending(t, s, time.Minute)
	if _, err := s.MarkExecuted(ctx, a.ID, "x", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("executing a pending request: %v", err)
	}
	if _, err := s.Claim(ctx, a.ID); !errors.Is(err, ErrConflict) {
		t.Fatalf("claiming a pending request: %v", err)
	}
	if _, err := s.Decide(ctx, a.ID, approve("alice"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.Decide(ctx, a.ID, Transition{To: Denied, Decision: "denied", By: "bob"}, nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.State != Approved || ce.By != "alice" {
		t.Fatalf("second decision: %v, want a conflict naming APPROVED by alice", err)
	}
	if _, err := s.MarkExecuted(ctx, a.ID, "x", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("executing an unclaimed request: %v", err)
	}
	if _, err := s.Claim(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkExecuted(ctx, a.ID, "ok", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkExecuted(ctx, a.ID, "again", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("second execution: %v", err)
	}
	got, _ := s.Get(ctx, a.ID)
	if got.State != Executed || got.ExecutionResult != "ok" {
		t.Fatalf("got %s %q", got.State, got.ExecutionResult)
	}

	// Only approve/deny are decisions.
	p := pending(t, s, time.Minute)
	if _, err := s.Decide(ctx, p.ID, Transition{To: Executed}, nil); err == nil {
		t.Fatal("Decide accepted EXECUTED")
	}

	// Changes come in order and cover every transition.
	ch, err := s.Changes(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ch); i++ {
		if ch[i].Seq <= ch[i-1].Seq {
			t.Fatalf("changes out of order: %d then %d", ch[i-1].Seq, ch[i].Seq)
		}
	}
	list, err := s.List(ctx, Filter{State: Pending})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{p.ID}, ids(list)); diff != "" {
		t.Errorf("pending list (-want +got):\n%s", diff)
	}
}

func ids(as []*Approval) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func TestSweepOrphans(t *testing.T) { eachBackend(t, sweepOrphans) }

func sweepOrphans(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, nil)
	live := pending(t, s, time.Minute)
	dead := pending(t, s, time.Minute)
	deadApproved := pending(t, s, time.Minute)
	deadClaimed := pending(t, s, time.Minute)
	for _, id := range []string{deadApproved.ID, deadClaimed.ID} {
		if _, err := s.Decide(ctx, id, approve("alice"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Claim(ctx, deadClaimed.ID); err != nil {
		t.Fatal(err)
	}
	// Make three of them belong to a process that is gone: same pid, other start time.
	for _, id := range []string{dead.ID, deadApproved.ID, deadClaimed.ID} {
		rawExec(t, s, "UPDATE approvals SET owner_start = owner_start + 1 WHERE request_id = ?", id)
	}
	got, err := s.SweepOrphans(ctx, Alive)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{dead.ID, deadApproved.ID}, ids(got)); diff != "" {
		t.Errorf("swept (-want +got):\n%s", diff)
	}
	for id, want := range map[string]State{live.ID: Pending, dead.ID: Cancelled, deadApproved.ID: Cancelled, deadClaimed.ID: Approved} {
		a, _ := s.Get(ctx, id)
		if a.State != want {
			t.Errorf("%s: %s, want %s", id, a.State, want)
		}
	}
	if _, err := s.Claim(ctx, deadApproved.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("a cancelled request was claimed: %v", err)
	}
	rows, _ := s.Audit(ctx, AuditFilter{Event: "approval"})
	var cancelled int
	for _, r := range rows {
		if r.Record.Decision == "cancelled" {
			cancelled++
		}
	}
	if cancelled != 2 {
		t.Errorf("%d cancellation audit rows, want 2", cancelled)
	}
}

func TestAlive(t *testing.T) {
	t.Parallel()
	me := CurrentOwner()
	if me.Start == 0 {
		t.Fatal("no start time for this process")
	}
	cases := []struct {
		name string
		o    Owner
		want bool
	}{
		{"self", me, true},
		{"reused pid", Owner{Host: me.Host, PID: me.PID, Start: me.Start + 1}, false},
		{"no such pid", Owner{Host: me.Host, PID: 1 << 30}, false},
		{"zero pid", Owner{Host: me.Host}, false},
		{"other host", Owner{Host: me.Host + "-elsewhere", PID: 1 << 30}, true},
	}
	for _, c := range cases {
		if got := Alive(c.o); got != c.want {
			t.Errorf("%s: Alive = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	tail := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 20 21"
	cases := []struct {
		in    string
		start int64
		state byte
		ok    bool
	}{
		{"12 (bash)" + tail, 777, 'S', true},
		{"12 (a) b) (c)" + tail, 777, 'S', true}, // a command name that fakes the end of the name
		{"12 (zombie) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99 20", 99, 'Z', true},
		{"12 bash S 1", 0, 0, false},
		{"12 (x) S 1 2", 0, 0, false},
		{"12 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 nope", 0, 0, false},
	}
	for _, c := range cases {
		start, state, err := parseProcStat(c.in)
		if (err == nil) != c.ok || start != c.start || state != c.state {
			t.Errorf("parseProcStat(%q) = %d, %q, %v; want %d, %q, ok=%v", c.in, start, state, err, c.start, c.state, c.ok)
		}
	}
}

func TestAuditChainTamper(t *testing.T) { eachBackend(t, auditChainTamper) }

func auditChainTamper(t *testing.T, b backend) {
	ctx := context.Background()
	cases := []struct {
		name   string
		tamper string
		row    int64
	}{
		{"edit record", `UPDATE audit SET record = replace(record, '"denied"', '"approved"') WHERE id = 2`, 2},
		{"edit event column", `UPDATE audit SET event = 'x' WHERE id = 2`, 2},
		{"edit time", `UPDATE audit SET time = time + 1 WHERE id = 4`, 4},
		{"delete a row", `DELETE FROM audit WHERE id = 2`, 3},
		{"rehash one row", "", 4}, // set below: row 3 rewritten with a valid own hash
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t, nil)
			for i := range 5 {
				dec := "denied"
				if i%2 == 0 {
					dec = "approved"
				}
				if _, err := s.AppendAudit(ctx, &audit.Record{Event: "approval", Decision: audit.Decision(dec), RequestID: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			if n, _, err := s.VerifyAudit(ctx); err != nil || n != 5 {
				t.Fatalf("intact chain: %d rows, %v", n, err)
			}
			tamper := c.tamper
			if tamper == "" {
				// A forger who recomputes the edited row's own hash still breaks the next link.
				var prev, body, event, req string
				var ms int64
				rawQueryRow(s, "SELECT prev_hash, record, event, request_id, time FROM audit WHERE id = 3").Scan(&prev, &body, &event, &req, &ms)
				body = body[:len(body)-1] + `,"x":1}`
				h := ChainHash(prev, 3, ms, event, req, body)
				tamper = fmt.Sprintf("UPDATE audit SET record = '%s', hash = '%s' WHERE id = 3", body, h)
			}
			rawExec(t, s, tamper)
			_, _, err := s.VerifyAudit(ctx)
			var ce *ChainError
			if !errors.As(err, &ce) || ce.Row != c.row {
				t.Fatalf("VerifyAudit after %q: %v, want a break at row %d", tamper, err, c.row)
			}
		})
	}
}

func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	s, err := OpenSQLite(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	rawQueryRow(s, "PRAGMA user_version").Scan(&v)
	if v != schemaVersion {
		t.Fatalf("user_version %d", v)
	}
	var mode string
	rawQueryRow(s, "PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode %q, want wal", mode)
	}
	rawExec(t, s, "PRAGMA user_version = 99")
	s.Close()
	if _, err := OpenSQLite(path, nil); err == nil {
		t.Fatal("opened a database from a newer warden")
	}
	// Reopening at the current version keeps the data.
	p2 := filepath.Join(t.TempDir(), "w2.db")
	s2, _ := OpenSQLite(p2, nil)
	a := pending(t, s2, time.Minute)
	s2.Close()
	s3, err := OpenSQLite(p2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if _, err := s3.Get(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSQLite(filepath.Join(t.TempDir(), "a?b"), nil); err == nil {
		t.Error("accepted a path with '?'")
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("WARDEN_DB", "")
	t.Setenv("XDG_STATE_HOME", "/state")
	if p, _ := DefaultPath(); p != "/state/warden/warden.db" {
		t.Errorf("XDG: %s", p)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/home/u/.local/state/warden/warden.db" {
		t.Errorf("relative XDG ignored: %s", p)
	}
	t.Setenv("WARDEN_DB", "/x.db")
	if p, _ := DefaultPath(); p != "/x.db" {
		t.Errorf("WARDEN_DB: %s", p)
	}
}

func TestSetOwner(t *testing.T) { eachBackend(t, setOwner) }

// setOwner hands a request to no process and back, as a caller that stops
// waiting and a later identical call do: only the current owner can hand
// it over, and a request owned by no process is never swept as an orphan.
func setOwner(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t, nil)
	a := pending(t, s, time.Minute)
	other := Owner{Host: "elsewhere", PID: 7, Start: 9}
	if ok, err := s.SetOwner(ctx, a.ID, other, Unowned); err != nil || ok {
		t.Fatalf("a process that does not own the request handed it over: ok=%v err=%v", ok, err)
	}
	if ok, err := s.SetOwner(ctx, a.ID, a.Owner, Unowned); err != nil || !ok {
		t.Fatalf("hand to no process: ok=%v err=%v", ok, err)
	}
	if ok, _ := s.SetOwner(ctx, a.ID, a.Owner, Unowned); ok {
		t.Fatal("the former owner handed the request over a second time")
	}
	swept, err := s.SweepOrphans(ctx, func(Owner) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if len(swept) != 0 {
		t.Fatalf("a request owned by no process was swept: %v", ids(swept))
	}
	got, _ := s.Get(ctx, a.ID)
	if got.State != Pending || got.Owner != Unowned {
		t.Fatalf("after the sweep: %s owned by %+v, want PENDING and unowned", got.State, got.Owner)
	}
	if ok, err := s.SetOwner(ctx, a.ID, Unowned, other); err != nil || !ok {
		t.Fatalf("take it back: ok=%v err=%v", ok, err)
	}
	if got, _ = s.Get(ctx, a.ID); got.Owner != other {
		t.Fatalf("owner %+v, want %+v", got.Owner, other)
	}
}
