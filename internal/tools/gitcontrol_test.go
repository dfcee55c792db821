package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/testenv"
	"github.com/wardenhq/warden/internal/workspace"
)

// gitControlFiles are git's control files, existing (in gitControlTree) or
// not, as a file tool would name them.
var gitControlFiles = []string{
	".git/config", ".git/config.worktree", ".git/commondir", ".git/hooks/pre-commit",
	".git/hooks/pre-commit.sample", ".git/info/attributes", ".git/info/exclude",
	".git/worktrees/wt/commondir", ".git/remotes/origin", ".git/branches/origin",
	".git/modules/lib/config", ".git/modules/lib/hooks/post-checkout", ".git/modules/lib/commondir",
	".gitmodules", "lib/.git", "new/.git", "vendor/x/.git/config", "vendor/x/.git/hooks/pre-commit",
	".GIT/config", "lib/../.git/config", ".git/./hooks/pre-push", "bare.git/config", "bare.git/hooks/update",
}

var gitControlTree = map[string]string{
	".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/.keep": "", ".git/config": "[core]\n",
	".git/hooks/pre-commit.sample": "#!/bin/sh\n", ".git/info/exclude": "# x\n",
	".git/worktrees/wt/commondir": "../..\n", ".git/modules/lib/config": "[core]\n",
	".git/modules/lib/HEAD": "ref: refs/heads/main\n", ".git/modules/lib/commondir": "x\n",
	".gitmodules": "[submodule \"lib\"]\n", "lib/.git": "gitdir: ../.git/modules/lib\n",
	"vendor/x/.git/config": "[core]\n", "bare.git/HEAD": "ref: refs/heads/main\n", "bare.git/refs/.keep": "",
	"bare.git/config": "[core]\n", "src.txt": "one\n",
}

// fileToolCalls returns, for each file tool, the arguments that would write
// (or delete) p.
func fileToolCalls(p string) map[string]struct {
	tool *Tool
	args map[string]any
} {
	const hook = "#!/bin/sh\ntouch /tmp/pwned\n"
	return map[string]struct {
		tool *Tool
		args map[string]any
	}{
		"write_file":  {WriteFile(), map[string]any{"path": p, "content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"}},
		"edit_file":   {EditFile(), map[string]any{"path": p, "old_str": "[core]", "new_str": "[core]\n\tfsmonitor = touch /tmp/pwned"}},
		"delete_file": {DeleteFile(), map[string]any{"path": p}},
		"apply_patch (git, new)": {ApplyPatch(), map[string]any{"patch": fmt.Sprintf(
			"diff --git a/%[1]s b/%[1]s\nnew file mode 100755\n--- /dev/null\n+++ b/%[1]s\n@@ -0,0 +1,2 @@\n+%[2]s", p, strings.ReplaceAll(strings.TrimSuffix(hook, "\n"), "\n", "\n+")+"\n")}},
		"apply_patch (plain, new)": {ApplyPatch(), map[string]any{"patch": fmt.Sprintf(
			"--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+x\n", p)}},
		"apply_patch (modify)": {ApplyPatch(), map[string]any{"patch": fmt.Sprintf(
			"--- a/%[1]s\n+++ b/%[1]s\n@@ -1 +1,2 @@\n [core]\n+\tfsmonitor = touch /tmp/pwned\n", p)}},
		"apply_patch (rename onto)": {ApplyPatch(), map[string]any{"patch": fmt.Sprintf(
			"diff --git a/src.txt b/%[1]s\nsimilarity index 100%%\nrename from src.txt\nrename to %[1]s\n", p)}},
		"apply_patch (rename away)": {ApplyPatch(), map[string]any{"patch": fmt.Sprintf(
			"diff --git a/%[1]s b/moved\nsimilarity index 100%%\nrename from %[1]s\nrename to moved\n", p)}},
		"apply_patch (delete)": {ApplyPatch(), map[string]any{"patch": fmt.Sprintf(
			"diff --git a/%[1]s b/%[1]s\ndeleted file mode 100644\n--- a/%[1]s\n+++ /dev/null\n@@ -1 +0,0 @@\n-[core]\n", p)}},
	}
}

// TestGitControlViaFileTools: every file tool, on every git control file,
// is refused as protected — by its guard, before anyone would be asked,
// and by the workspace when it runs even if the guard were skipped — and
// changes nothing.
func TestGitControlViaFileTools(t *testing.T) {
	t.Parallel()
	for _, p := range gitControlFiles {
		for name, c := range fileToolCalls(p) {
			t.Run(p+"/"+name, func(t *testing.T) {
				t.Parallel()
				env, dir := newEnv(t, gitControlTree)
				env.Config.Workspace.AllowDelete = true
				before := snapshot(t, dir)
				raw, _ := json.Marshal(c.args)
				if _, err := c.tool.Guard(env, raw); !errors.Is(err, workspace.ErrProtected) {
					t.Errorf("guard: %v, want ErrProtected", err)
				}
				if _, err := c.tool.Run(context.Background(), env, raw); !errors.Is(err, workspace.ErrProtected) {
					t.Errorf("run without the guard: %v, want ErrProtected", err)
				}
				if after := snapshot(t, dir); !equalSnap(before, after) {
					t.Errorf("the workspace changed:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}
}

func equalSnap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// gitReproducer is one of the reported ways to make the user's own git run
// a program: the files an agent would plant, and the git command that then
// runs it.
type gitReproducer struct {
	name  string
	setup [][]string        // git commands run first in the repository ("MARK" replaced)
	plant map[string]string // path → content; "MARK" is replaced by the marker path
	exec  string            // path among plant that must be executable
	pty   bool              // run the git command on a terminal (for the pager)
	git   []string          // the command the user runs afterwards, in dir
	dir   string
}

var gitReproducers = []gitReproducer{
	{name: "core.fsmonitor in .git/config, git status",
		plant: map[string]string{".git/config": "[core]\n\tfsmonitor = \"touch MARK; false\"\n"}, git: []string{"status"}},
	{name: "diff.external in .git/config, git diff",
		plant: map[string]string{".git/config": "[diff]\n\texternal = \"touch MARK; true\"\n"}, git: []string{"diff"}},
	{name: "core.pager in .git/config, git log on a terminal", pty: true,
		plant: map[string]string{".git/config": "[core]\n\tpager = \"touch MARK; cat\"\n"}, git: []string{"log"}},
	{name: "diff.external in .git/config.worktree, git diff", setup: [][]string{{"config", "extensions.worktreeConfig", "true"}},
		plant: map[string]string{".git/config.worktree": "[diff]\n\texternal = \"touch MARK; true\"\n"}, git: []string{"diff"}},
	{name: "commondir to a planted repository, git status",
		plant: map[string]string{"evilgit/config": "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch MARK; false\"\n",
			".git/commondir": "../evilgit\n"}, git: []string{"status"}},
	{name: "hooks/pre-commit, git commit", exec: ".git/hooks/pre-commit",
		plant: map[string]string{".git/hooks/pre-commit": "#!/bin/sh\ntouch MARK\n"}, git: []string{"commit", "-qam", "x"}},
	{name: "gitlink to a planted repository, git status in it", dir: "sub",
		plant: map[string]string{"evilgit/config": "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch MARK; false\"\n",
			"evilgit/HEAD": "ref: refs/heads/main\n", "sub/.git": "gitdir: ../evilgit\n"}, git: []string{"status"}},
	{name: "info/attributes choosing a configured driver: attributes are read-only", setup: [][]string{{"config", "diff.evil.command", "touch MARK; true"}},
		plant: map[string]string{".git/info/attributes": "* diff=evil\n"}, git: []string{"diff"}},
}

// newGitRepo makes a repository with one commit and an uncommitted change.
func newGitRepo(t *testing.T, setup [][]string, mark string) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, nil, "init", "-q", "-b", "main")
	for _, s := range setup {
		args := make([]string, len(s))
		for i, a := range s {
			args[i] = strings.ReplaceAll(a, "MARK", mark)
		}
		runGit(t, dir, nil, args...)
	}
	must(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\n"), 0o644))
	runGit(t, dir, nil, "add", "f.txt")
	runGit(t, dir, nil, "commit", "-qm", "first")
	must(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("two\n"), 0o644))
	return dir
}

// runGit runs git in dir as the user would: no hardening, an identity, no
// global or system configuration of this machine.
func runGit(t *testing.T, dir string, stdin *os.File, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.com", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.com")
	return cmd.CombinedOutput()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runUserGit runs r's git command (on a terminal through script(1) when
// r.pty), as the user would after the agent's turn.
func runUserGit(t *testing.T, repo string, r gitReproducer) {
	t.Helper()
	dir := filepath.Join(repo, r.dir)
	if !r.pty {
		runGit(t, dir, nil, r.git...)
		return
	}
	line := "git " + strings.Join(r.git, " ")
	runGit(t, dir, nil, append([]string{"-c", "alias.x=!script -qec '" + line + "' /dev/null"}, "x")...)
}

// plantContent is what r plants at p, with the marker's path filled in.
func plantContent(r gitReproducer, mark, p string) string {
	return strings.ReplaceAll(r.plant[p], "MARK", mark)
}

// TestGitReproducers plants each reported file two ways. Directly on disk
// (the oracle) it must make the user's next git command run the marker,
// which proves the file is a real way in on this machine's git. Through
// write_file, edit_file or apply_patch it must be refused, and the same git
// command must then run nothing.
func TestGitReproducers(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "git", "script", "cp")
	for _, r := range gitReproducers {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			// Oracle: the planted files do run the marker.
			mark := filepath.Join(t.TempDir(), "MARK")
			repo := newGitRepo(t, r.setup, mark)
			if strings.Contains(r.name, "planted repository") {
				copyStore(t, repo)
			}
			for p := range r.plant {
				mode := os.FileMode(0o644)
				if p == r.exec {
					mode = 0o755
				}
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755))
				content := plantContent(r, mark, p)
				if p == ".git/config" {
					old, _ := os.ReadFile(filepath.Join(repo, p))
					content = string(old) + content
				}
				must(t, os.WriteFile(filepath.Join(repo, p), []byte(content), mode))
			}
			runUserGit(t, repo, r)
			if _, err := os.Stat(mark); err != nil {
				t.Fatalf("oracle: planting %v by hand did not make git %v run the marker; the reproducer is wrong", keys(r.plant), r.git)
			}

			// Through the file tools: refused, and git runs nothing.
			mark = filepath.Join(t.TempDir(), "MARK")
			repo = newGitRepo(t, r.setup, mark)
			if strings.Contains(r.name, "planted repository") {
				copyStore(t, repo)
			}
			root, err := workspace.Open(repo, nil)
			must(t, err)
			defer root.Close()
			env := &Env{FS: root, Root: root, Config: config.Default()}
			refused := 0
			for p := range r.plant {
				content := plantContent(r, mark, p)
				attempts := []struct {
					tool *Tool
					args map[string]any
				}{
					{WriteFile(), map[string]any{"path": p, "content": content}},
					{ApplyPatch(), map[string]any{"patch": newFilePatch(p, content, p == r.exec)}},
				}
				if old, err := os.ReadFile(filepath.Join(repo, p)); err == nil && len(old) > 0 {
					attempts = append(attempts, struct {
						tool *Tool
						args map[string]any
					}{EditFile(), map[string]any{"path": p, "old_str": string(old), "new_str": string(old) + content}})
				}
				for _, a := range attempts {
					_, err := call(t, a.tool, env, a.args)
					switch {
					case errors.Is(err, workspace.ErrProtected):
						refused++
					case err != nil && !errors.Is(err, workspace.ErrProtected) && isControl(p):
						t.Errorf("%s %s: %v, want ErrProtected", a.tool.Name, p, err)
					case err == nil && isControl(p):
						t.Errorf("%s %s was written", a.tool.Name, p)
					}
				}
			}
			if refused == 0 {
				t.Fatal("nothing was refused")
			}
			runUserGit(t, repo, r)
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("git %v ran the planted program", r.git)
			}
		})
	}
}

// isControl reports whether p is one of git's control files (the planted
// repository's own files are ordinary files until something points at it).
func isControl(p string) bool { return !strings.HasPrefix(p, "evilgit/") }

// copyStore copies the repository's objects and refs into evilgit/, as the
// reported attack did.
func copyStore(t *testing.T, repo string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(repo, "evilgit"), 0o755))
	must(t, exec.Command("cp", "-r", filepath.Join(repo, ".git/objects"), filepath.Join(repo, ".git/refs"), filepath.Join(repo, "evilgit")).Run())
}

func newFilePatch(p, content string, executable bool) string {
	mode := "100644"
	if executable {
		mode = "100755"
	}
	lines := strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%[1]s b/%[1]s\nnew file mode %[2]s\n--- /dev/null\n+++ b/%[1]s\n@@ -0,0 +1,%[3]d @@\n", p, mode, len(lines))
	for _, l := range lines {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
