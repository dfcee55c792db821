package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/workspace"
)

// swapDocs makes docs a link to .github/workflows (keeping the old
// directory as docs.old), as an agent's command could between a call's
// approval and its run.
func swapDocs(t *testing.T, dir string) {
	t.Helper()
	must(t, os.Rename(filepath.Join(dir, "docs"), filepath.Join(dir, "docs.old")))
	must(t, os.Symlink(".github/workflows", filepath.Join(dir, "docs")))
}

var docsTree = map[string]string{"docs/notes.yml": "old\n", "docs/a.txt": "one\n", ".github/workflows/ci.yml": "on: push\n"}

// TestChangeToolsReportLocations: the guard of each changing tool says
// where each change lands, and MovedNote tells the person when that is not
// the name.
func TestChangeToolsReportLocations(t *testing.T) {
	t.Parallel()
	env, dir := newEnv(t, docsTree)
	env.Config.Workspace.AllowDelete = true
	swapDocs(t, dir)
	calls := []struct {
		tool *Tool
		args map[string]any
		want []Location
	}{
		{WriteFile(), map[string]any{"path": "docs/notes.yml", "content": "x"}, []Location{{"docs/notes.yml", ".github/workflows/notes.yml"}}},
		{EditFile(), map[string]any{"path": "docs/ci.yml", "old_str": "push", "new_str": "pull_request"}, []Location{{"docs/ci.yml", ".github/workflows/ci.yml"}}},
		{DeleteFile(), map[string]any{"path": "docs/ci.yml"}, []Location{{"docs/ci.yml", ".github/workflows/ci.yml"}}},
		{ApplyPatch(), map[string]any{"patch": "--- /dev/null\n+++ b/docs/new.yml\n@@ -0,0 +1 @@\n+x\n--- a/docs.old/a.txt\n+++ b/docs.old/a.txt\n@@ -1 +1 @@\n-one\n+two\n"},
			[]Location{{"docs/new.yml", ".github/workflows/new.yml"}, {"docs.old/a.txt", "docs.old/a.txt"}}},
	}
	for _, c := range calls {
		raw, _ := json.Marshal(c.args)
		facts, err := c.tool.Guard(env, raw)
		if err != nil {
			t.Fatalf("%s: %v", c.tool.Name, err)
		}
		if diff := cmp.Diff(c.want, facts.Locations); diff != "" {
			t.Errorf("%s locations (-want +got):\n%s", c.tool.Name, diff)
		}
		note := c.want[0].Path + " leads to " + c.want[0].Real
		if got := MovedNote(facts.Locations); !strings.Contains(got, note) || strings.Contains(got, "docs.old") {
			t.Errorf("%s: MovedNote = %q, want %q and no line for a path that leads where it says", c.tool.Name, got, note)
		}
	}
}

// TestPinnedToolsRefuseAMovedTarget: each changing tool, judged while docs
// was a directory and run after docs became a link to .github/workflows,
// refuses (ErrMoved) and changes nothing — apply_patch none of its files.
func TestPinnedToolsRefuseAMovedTarget(t *testing.T) {
	t.Parallel()
	calls := []struct {
		tool *Tool
		args map[string]any
	}{
		{WriteFile(), map[string]any{"path": "docs/notes.yml", "content": "x"}},
		{EditFile(), map[string]any{"path": "docs/ci.yml", "old_str": "push", "new_str": "pull_request"}},
		{DeleteFile(), map[string]any{"path": "docs/ci.yml"}},
		{ApplyPatch(), map[string]any{"patch": "--- a/other.txt\n+++ b/other.txt\n@@ -1 +1 @@\n-one\n+two\n--- /dev/null\n+++ b/docs/new.yml\n@@ -0,0 +1 @@\n+x\n"}},
	}
	for _, c := range calls {
		t.Run(c.tool.Name, func(t *testing.T) {
			t.Parallel()
			tree := map[string]string{"docs/ci.yml": "on: push\n", "other.txt": "one\n", ".github/workflows/ci.yml": "on: push\n"}
			env, dir := newEnv(t, tree)
			env.Config.Workspace.AllowDelete = true
			raw, _ := json.Marshal(c.args)
			facts, err := c.tool.Guard(env, raw)
			if err != nil {
				t.Fatal(err)
			}
			swapDocs(t, dir)
			before := snapshot(t, dir)
			_, err = c.tool.Run(WithPins(context.Background(), facts.Locations), env, raw)
			if !errors.Is(err, workspace.ErrMoved) {
				t.Fatalf("run: %v, want ErrMoved", err)
			}
			if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
				t.Errorf("the workspace changed (-before +after):\n%s", diff)
			}
			// Control: unpinned, the same run does reach the workflows.
			if _, err := c.tool.Run(context.Background(), env, raw); err != nil {
				t.Fatalf("control run: %v", err)
			}
			if diff := cmp.Diff(before, snapshot(t, dir)); diff == "" {
				t.Errorf("control: the unpinned run changed nothing")
			}
		})
	}
}
