package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/audit"
)

// populate gives s requests in every state, grants, a lease and audit rows.
func populate(t *testing.T, s *DB) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	k, err := KeepLease(ctx, s, CurrentOwner(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	for i := range 6 {
		a := pendingCall(t, s, call{tool: "run_command", args: `{"command":"make test"}`, hash: "H" + string(rune('a'+i)), ws: "/w", session: "s1"}, now)
		switch i {
		case 0:
			s.Decide(ctx, a.ID, approve("alice"), &audit.Record{Event: "approval", Decision: "approved"})
			s.Claim(ctx, a.ID)
			s.MarkExecuted(ctx, a.ID, "ok", &audit.Record{Event: "approval_executed", Success: true})
		case 1:
			s.Decide(ctx, a.ID, Transition{To: Denied, Decision: "denied", By: "bob", Reason: "no"}, nil)
		case 2:
			s.Resolve(ctx, a.ID, Transition{To: TimedOut, Decision: "timed_out", By: "timeout"}, nil)
		case 3:
			grantOn(t, s, a.ID, time.Hour)
		}
	}
	leased := &Approval{ID: NewTestID(), Tool: "write_file", Args: []byte(`{"path":"a"}`), ArgsHash: "x", State: Pending,
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: k.Owner()}
	if err := s.Create(ctx, leased, &audit.Record{Event: "approval_request"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendAudit(ctx, &audit.Record{Event: "auth_failure", Error: "401"}); err != nil {
		t.Fatal(err)
	}
}

func TestCopy(t *testing.T) {
	t.Parallel()
	for _, from := range backends {
		for _, to := range backends {
			t.Run(from.name+"→"+to.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				src, dst := from.open(t, nil), to.open(t, nil)
				populate(t, src)
				rep, err := Copy(ctx, src, dst)
				if err != nil {
					t.Fatal(err)
				}
				srcRows, srcHead, _ := src.VerifyAudit(ctx)
				if rep.Requests != 7 || rep.Grants != 1 || rep.Leases != 1 || rep.AuditRows != srcRows || rep.Head != srcHead {
					t.Errorf("report %+v; source has %d audit rows, head %s", rep, srcRows, srcHead)
				}
				wantA, _ := src.List(ctx, Filter{})
				gotA, _ := dst.List(ctx, Filter{})
				if d := cmp.Diff(wantA, gotA); d != "" {
					t.Errorf("requests differ (-source +target):\n%s", d)
				}
				wantG, _ := src.ListGrants(ctx, GrantFilter{All: true})
				gotG, _ := dst.ListGrants(ctx, GrantFilter{All: true})
				if d := cmp.Diff(wantG, gotG); d != "" {
					t.Errorf("grants differ (-source +target):\n%s", d)
				}
				wantR, _ := src.Audit(ctx, AuditFilter{})
				gotR, _ := dst.Audit(ctx, AuditFilter{})
				if d := cmp.Diff(wantR, gotR); d != "" {
					t.Errorf("audit rows differ (-source +target):\n%s", d)
				}
				// The target carries on: the chain and the sequences continue.
				head, _ := dst.ChangeHead(ctx)
				a := pending(t, dst, time.Minute)
				if a.Seq != head+1 {
					t.Errorf("first new request on the target got seq %d after head %d", a.Seq, head)
				}
				if n, _, err := dst.VerifyAudit(ctx); err != nil || n != srcRows+1 {
					t.Errorf("target chain after a new row: %d rows, %v", n, err)
				}
				// A second copy into the same target is refused.
				if _, err := Copy(ctx, src, dst); !errors.Is(err, ErrTargetNotEmpty) {
					t.Errorf("second copy: %v, want ErrTargetNotEmpty", err)
				}
			})
		}
	}
}

// A source whose chain does not verify is not copied.
func TestCopyRefusesABrokenChain(t *testing.T) { eachBackend(t, testCopyRefusesABrokenChain) }

func testCopyRefusesABrokenChain(t *testing.T, b backend) {
	ctx := context.Background()
	src, dst := b.open(t, nil), b.open(t, nil)
	populate(t, src)
	rawExec(t, src, "UPDATE audit SET record = replace(record, '401', '200') WHERE event = 'auth_failure'")
	var ce *ChainError
	if _, err := Copy(ctx, src, dst); !errors.As(err, &ce) {
		t.Fatalf("copy of a tampered chain: %v", err)
	}
	if n, _ := dst.rowCounts(ctx); n != 0 {
		t.Errorf("the refused copy wrote %d rows", n)
	}
}
