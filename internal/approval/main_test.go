package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wardenhq/warden/internal/store"
)

const childEnv = "WARDEN_TEST_APPROVAL_CHILD_DB"

func TestMain(m *testing.M) {
	if db := os.Getenv(childEnv); db != "" {
		os.Exit(waitingChild(db))
	}
	goleak.VerifyTestMain(m)
}

// waitingChild asks for approval and waits, as a `warden tool call` would.
func waitingChild(db string) int {
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
	out, err := b.Ask(context.Background(), lsReq)
	json.NewEncoder(os.Stdout).Encode(out)
	if err != nil || !out.Approved {
		return 1
	}
	fmt.Println("EXECUTED") // the parent must never see this for a killed child
	return 0
}

// A process killed while its request is pending: at the next start the
// request is CANCELLED, with an audit row, and never executed.
func TestKilledOwnerCancelled(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "warden.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+db)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenSQLite(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var id string
	for deadline := time.Now().Add(20 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if l, _ := s.List(t.Context(), store.Filter{State: store.Pending}); len(l) == 1 {
			id = l[0].ID
		}
	}
	if id == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child never asked")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// A supervisor approves after the death but before any restart: the
	// approval is stored, and still never executed.
	if _, err := s.Decide(t.Context(), id, store.Transition{To: store.Approved, Decision: "approved", By: "alice"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := New(t.Context(), Options{Store: s}); err != nil { // the next start
		t.Fatal(err)
	}
	a, _ := s.Get(t.Context(), id)
	if a.State != store.Cancelled {
		t.Fatalf("state %s after restart, want CANCELLED", a.State)
	}
	if _, err := s.Claim(t.Context(), id); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a cancelled request could be claimed: %v", err)
	}
	rows, _ := s.Audit(t.Context(), store.AuditFilter{Event: "approval"})
	if last := rows[len(rows)-1].Record; last.Decision != "cancelled" || last.RequestID != id {
		t.Errorf("last audit row %+v", last)
	}
	if _, _, err := s.VerifyAudit(t.Context()); err != nil {
		t.Error(err)
	}
}
