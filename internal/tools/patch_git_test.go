package tools

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/testenv"
	"github.com/wardenhq/warden/internal/workspace"
)

// patchBase is the tree every oracle patch applies to.
var patchBase = map[string]string{
	"a.txt": "one\n", "src/a.go": "one\n", "a.go": "x\n", "old.txt": "bye\n",
	"sp ace.txt": "one\n", "x.c": "one\n", "sql.txt": "-- comment\nselect 1\n",
}

// patchOracle is a table of patches applied both by apply_patch and by
// git apply (the oracle): where apply_patch applies a patch, the tree must
// be exactly git's; where git refuses one, apply_patch must too. The only
// other outcome allowed is a refusal as ambiguous, listed here, where git
// would strip a directory of the path.
var patchOracle = []struct {
	name      string
	patch     string
	ambiguous bool
}{
	{name: "bare new file, b/ prefix", patch: "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n"},
	{name: "bare new file, b/ prefix, in a directory", patch: "--- /dev/null\n+++ b/src/new.go\n@@ -0,0 +1 @@\n+x\n"},
	{name: "bare new file, no prefix, no slash", patch: "--- /dev/null\n+++ new.txt\n@@ -0,0 +1 @@\n+x\n"},
	{name: "bare new file, no prefix, in a directory", patch: "--- /dev/null\n+++ src/new.go\n@@ -0,0 +1 @@\n+x\n", ambiguous: true},
	{name: "bare new file, a/ prefix", patch: "--- /dev/null\n+++ a/new.txt\n@@ -0,0 +1 @@\n+x\n"},
	{name: "bare new file, empty name", patch: "--- /dev/null\n+++ b/\n@@ -0,0 +1 @@\n+x\n"},
	{name: "bare new file, double slash", patch: "--- /dev/null\n+++ b//src//new.go\n@@ -0,0 +1 @@\n+x\n"},
	{name: "bare new file, epoch timestamp", patch: "--- a/new.txt\t1970-01-01 00:00:00.000000000 +0000\n+++ b/new.txt\t2024-05-01 10:00:00.000000000 +0200\n@@ -0,0 +1 @@\n+x\n"},
	{name: "modify, no prefix, no slash (-p0)", patch: "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "modify, a/ b/", patch: "--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "modify, a/ a/", patch: "--- a/a.txt\n+++ a/a.txt\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "modify, no prefix, same directory", patch: "--- src/a.go\n+++ src/a.go\n@@ -1 +1 @@\n-one\n+two\n", ambiguous: true},
	{name: "modify, diff -ru style with timestamps", patch: "--- old/a.txt\t2024-05-01 10:00:00.000000000 +0200\n+++ new/a.txt\t2024-05-01 10:01:00.000000000 +0200\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "modify, names differ: the shorter prefix wins", patch: "--- a/x.c\n+++ b/x.c.orig\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "modify, quoted names", patch: "--- \"a/sp ace.txt\"\n+++ \"b/sp ace.txt\"\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "modify, a hunk line that looks like a header", patch: "--- a/sql.txt\n+++ b/sql.txt\n@@ -1,2 +1,2 @@\n--- comment\n+++ x\n select 1\n"},
	{name: "modify, one side without prefix (-p1 for both)", patch: "--- a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "delete, a/ prefix", patch: "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"},
	{name: "delete, no prefix", patch: "--- old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"},
	{name: "two plain files, a/ b/", patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "two plain files, -p0 then a/ b/ (git keeps -p0)", patch: "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-one\n+two\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "two plain files, a/ b/ then -p0 names", patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n--- a.go\n+++ a.go\n@@ -1 +1 @@\n-x\n+y\n"},
	{name: "email with a diffstat before the diff", patch: "Subject: x\n\n---\n a.txt | 2 +-\n\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "git: modify", patch: "diff --git a/a.txt b/a.txt\nindex 5626abf..f719efd 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "git: new file", patch: "diff --git a/n/new.txt b/n/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n/new.txt\n@@ -0,0 +1 @@\n+x\n"},
	{name: "git: rename", patch: "diff --git a/old.txt b/renamed.txt\nsimilarity index 100%\nrename from old.txt\nrename to renamed.txt\n"},
	{name: "git: delete", patch: "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"},
	{name: "git: --no-prefix names", patch: "diff --git src/a.go src/a.go\n--- src/a.go\n+++ src/a.go\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "git after -p0 plain", patch: "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-one\n+two\ndiff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-x\n+y\n", ambiguous: true},
	{name: "plain after git", patch: "diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-x\n+y\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"},
	{name: "escape in a bare diff", patch: "--- /dev/null\n+++ b/../escaped.txt\n@@ -0,0 +1 @@\n+x\n"},
}

// TestApplyPatchMatchesGitApply runs the table against git apply.
func TestApplyPatchMatchesGitApply(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "git")
	for _, tt := range patchOracle {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gitTree, gitErr := gitApply(t, patchBase, tt.patch)
			env, dir := newEnv(t, patchBase)
			env.Config.Workspace.AllowDelete = true
			_, err := call(t, ApplyPatch(), env, map[string]any{"patch": tt.patch})
			ours := snapshot(t, dir)
			switch {
			case tt.ambiguous:
				if !errors.Is(err, errAmbiguousNames) {
					t.Fatalf("apply_patch: %v, want a refusal as ambiguous (git apply: %v, tree %v)", err, gitErr, gitTree)
				}
				t.Logf("refused: %v (git apply: err %v)", err, gitErr)
			case gitErr != nil:
				if err == nil {
					t.Errorf("git apply refused (%v) but apply_patch applied it: %v", gitErr, ours)
				}
			case err != nil:
				t.Errorf("git apply applied it (%v) but apply_patch refused: %v", gitTree, err)
			}
			if err == nil {
				if diff := cmp.Diff(gitTree, ours); diff != "" {
					t.Errorf("apply_patch and git apply differ (-git +apply_patch):\n%s", diff)
				}
			} else if diff := cmp.Diff(patchBase, ours); diff != "" {
				t.Errorf("a refused patch changed the workspace (-base +after):\n%s", diff)
			}
		})
	}
}

// gitApply applies patch with git apply at the top of a fresh repository
// holding files, and returns the work tree (without .git) or git's error.
func gitApply(t *testing.T, files map[string]string, patch string) (map[string]string, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	init := exec.Command("git", "init", "-q")
	init.Dir, init.Env = dir, env
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	cmd := exec.Command("git", "apply", "-")
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(patch)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, errors.New(strings.TrimSpace(string(out)))
	}
	tree := snapshot(t, dir)
	for k := range tree {
		if k == ".git" || strings.HasPrefix(k, ".git/") {
			delete(tree, k)
		}
	}
	return tree, nil
}

// TestApplyPatchPreviewNamesRealPaths: the person deciding sees the paths
// the patch will write, not the b/ of its header.
func TestApplyPatchPreviewNamesRealPaths(t *testing.T) {
	t.Parallel()
	env, _ := newEnv(t, patchBase)
	raw, _ := json.Marshal(map[string]string{"patch": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-one\n+two\n"})
	got, err := ApplyPatch().Preview(t.Context(), env, raw)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(got, "\n\n")
	if want := "Files:\n  A new.txt (+2 -0)\n  M src/a.go (+1 -1)"; head != want {
		t.Errorf("preview starts\n%s\nwant\n%s", head, want)
	}
	// A patch that cannot apply is refused before anyone is asked.
	raw, _ = json.Marshal(map[string]string{"patch": "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n"})
	if _, err := ApplyPatch().Preview(t.Context(), env, raw); !errors.Is(err, workspace.ErrProtected) {
		t.Errorf("preview of a patch to a hook: %v, want ErrProtected", err)
	}
}

// FuzzApplyPatchGit is the oracle test on arbitrary patches: a patch both
// apply_patch and git apply apply must give the same tree (the same files,
// under the same names); a patch apply_patch refuses must leave the
// workspace as it was.
func FuzzApplyPatchGit(f *testing.F) {
	if testenv.Look("git") == "" {
		f.Skip("git is not installed")
	}
	for _, tt := range patchOracle {
		f.Add(tt.patch)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		env, dir := newEnv(t, patchBase)
		env.Config.Workspace.AllowDelete = true
		raw, _ := json.Marshal(map[string]string{"patch": patch})
		_, err := ApplyPatch().Guard(env, raw)
		if err == nil {
			_, err = ApplyPatch().Run(t.Context(), env, raw)
		}
		ours := snapshot(t, dir)
		if err != nil {
			if diff := cmp.Diff(patchBase, ours); diff != "" {
				t.Fatalf("a refused patch (%v) changed the workspace (-base +after):\n%s", err, diff)
			}
			return
		}
		gitTree, gitErr := gitApply(t, patchBase, patch)
		if gitErr != nil {
			// go-gitdiff accepts some patches git calls corrupt (a last
			// line without its newline, a header git finds no name in);
			// what it applies is what its parse, and the preview, say.
			return
		}
		if diff := cmp.Diff(gitTree, ours); diff != "" {
			t.Fatalf("apply_patch and git apply differ on %q (-git +apply_patch):\n%s", patch, diff)
		}
	})
}
