// Package approvaltest helps the tests of approval channels (packages
// notify and telegram) run a real broker on a real store: a SQLite file in
// the test's temporary directory. Only tests import it.
package approvaltest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

// Supervisors are the supervisors of a Broker unless mod changes them.
var Supervisors = []string{"alice", "bob"}

// LsReq is a supervised command, as the engine asks for it.
var LsReq = &approval.Request{Tool: "run_command", Args: json.RawMessage(`{"command":"rm -rf build"}`), Workspace: "/w",
	Session: "s1", Agent: "build", Rule: "tool_policy.tools.run_command"}

// Store opens a SQLite store in t's temporary directory, closed when t
// ends.
func Store(t testing.TB) *store.SQLite {
	t.Helper()
	s, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// MemStore opens an in-memory SQLite store, closed when t ends: no file
// I/O, so it runs inside a synctest bubble, where time.Now and timers are
// the bubble's.
func MemStore(t testing.TB) *store.SQLite {
	t.Helper()
	s, err := store.OpenSQLite(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Broker is a broker on s whose Supervisors may decide from elsewhere
// (Remote), with a 5-minute timeout, as changed by mod (nil for none).
func Broker(t testing.TB, s store.Store, mod func(*approval.Options)) *approval.Broker {
	t.Helper()
	o := approval.Options{Store: s, Supervisors: Supervisors, Remote: true, Timeout: 5 * time.Minute}
	if mod != nil {
		mod(&o)
	}
	b, err := approval.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Result is what Ask returned.
type Result struct {
	Out approval.Outcome
	Err error
	At  time.Time
}

// Ask asks b in the background; the channel gets the result.
func Ask(ctx context.Context, b *approval.Broker, req *approval.Request) chan Result {
	ch := make(chan Result, 1)
	go func() {
		out, err := b.Ask(ctx, req)
		ch <- Result{out, err, time.Now()}
	}()
	return ch
}

// PendingID waits up to a few seconds for the one pending request in s and
// returns its id.
func PendingID(t testing.TB, s store.Store) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		l, err := s.List(context.Background(), store.Filter{State: store.Pending})
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 {
			return l[0].ID
		}
	}
	t.Fatal("no pending request")
	return ""
}
