package command

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/testenv"
)

// TestGitHardening plants, in a repository's own configuration, each
// program git would run for an everyday command, and runs that command the
// way warden runs every command (Local, with Environ): nothing planted may
// run. The same command without GitHardening is the oracle: it must run
// the planted program, or the case proves nothing.
func TestGitHardening(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "git", "script")
	tests := []struct {
		name   string
		config string            // appended to .git/config; MARK is the marker
		files  map[string]string // workspace files, made executable
		line   string
	}{
		{name: "core.fsmonitor under git status", config: "[core]\n\tfsmonitor = \"touch MARK; false\"\n", line: "git status"},
		{name: "a hook under git commit", files: map[string]string{".git/hooks/pre-commit": "#!/bin/sh\ntouch MARK\n"}, line: "git commit -qam x"},
		{name: "a hooks directory in the work tree under git commit", config: "[core]\n\thooksPath = .husky\n",
			files: map[string]string{".husky/pre-commit": "#!/bin/sh\ntouch MARK\n"}, line: "git commit -qam x"},
		{name: "core.pager under git log on a terminal", config: "[core]\n\tpager = \"touch MARK; cat\"\n", line: "script -qec 'git log' /dev/null"},
		{name: "an alias of a bare repository the agent wrote", config: "",
			files: map[string]string{"evil/HEAD": "ref: refs/heads/main\n", "evil/config": "[core]\n\tbare = true\n[alias]\n\tst = \"!touch MARK\"\n"},
			line:  "mkdir -p evil/objects evil/refs && cd evil && git st"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, hardened := range []bool{false, true} {
				repo, mark := plantedRepo(t, tt.config, tt.files)
				env := gitEnv(t, hardened)
				l := &Local{Root: repo}
				res, err := l.Run(context.Background(), Spec{Shell: tt.line, Env: env})
				if err != nil {
					t.Fatal(err)
				}
				_, statErr := os.Stat(mark)
				switch {
				case hardened && statErr == nil:
					t.Errorf("%s ran the planted program under GitHardening (output: %s)", tt.line, res.Output)
				case !hardened && statErr != nil:
					t.Fatalf("oracle: without GitHardening, %s did not run the planted program; the case proves nothing (output: %s)", tt.line, res.Output)
				}
			}
		})
	}
}

// plantedRepo makes a repository with one commit and an uncommitted
// change, plants config and files in it, and returns it with the path of
// the marker the planted programs create.
func plantedRepo(t *testing.T, config string, files map[string]string) (repo, mark string) {
	t.Helper()
	repo, mark = t.TempDir(), filepath.Join(t.TempDir(), "MARK")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = gitEnv(t, false)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(repo, "f.txt"), []byte("one\n"), 0o644))
	git("add", "f.txt")
	git("commit", "-qm", "first")
	must(t, os.WriteFile(filepath.Join(repo, "f.txt"), []byte("two\n"), 0o644))
	f, err := os.OpenFile(filepath.Join(repo, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(strings.ReplaceAll(config, "MARK", mark))
	must(t, err)
	must(t, f.Close())
	for name, content := range files {
		p := filepath.Join(repo, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(strings.ReplaceAll(content, "MARK", mark)), 0o755))
	}
	return repo, mark
}

// gitEnv is the environment warden gives a command (Environ), with a HOME of
// its own and an identity for commits; without hardening, the same minus
// GIT_CONFIG_PARAMETERS.
func gitEnv(t *testing.T, hardened bool) []string {
	home := t.TempDir()
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@example.com", "GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@example.com"}
	env := Environ([]string{"GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"},
		func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if hardened {
		return env
	}
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_CONFIG_PARAMETERS=") {
			out = append(out, kv)
		}
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
