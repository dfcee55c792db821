package tools

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/workspace"
)

func commandEnv(t *testing.T) (*Env, string) {
	t.Helper()
	env, dir := newEnv(t, map[string]string{"sub/f.txt": "x"})
	env.Runner = &command.Local{Root: env.Root.Dir()}
	return env, dir
}

func TestRunCommandGuards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     map[string]any
		edit     func(*Env)
		wantRule string
		wantErr  string
	}{
		{"blocklist", map[string]any{"command": "rm -rf /"}, nil, "rm-recursive-root", "cannot be turned off"},
		{"blocklist inside a wrapper", map[string]any{"command": "nice -n 5 sh -c 'sudo id'"}, nil, "privilege-escalation", ""},
		{"parse error is denied", map[string]any{"command": "echo $("}, nil, "parse-error", ""},
		{"user pattern", map[string]any{"command": "terraform destroy -auto-approve"}, func(e *Env) {
			e.Config.Commands.BlockedPatterns = []string{`terraform\s+destroy`}
		}, "user-pattern", ""},
		{"allowed_only refuses dangerous", map[string]any{"command": "python3 -c 'print(1)'"}, func(e *Env) {
			e.Config.Commands.AllowedOnly = true
		}, "allowed-only", "allowed_only"},
		{"commands disabled", map[string]any{"command": "ls"}, func(e *Env) { e.Config.Commands.Enabled = false }, "commands-disabled", ""},
		{"cwd escapes", map[string]any{"command": "ls", "cwd": "../.."}, nil, "", "escapes the workspace"},
		{"cwd masked", map[string]any{"command": "ls", "cwd": ".ssh"}, nil, "", "is masked"},
		{"empty", map[string]any{"command": "  "}, nil, "", "empty"},
		{"negative timeout", map[string]any{"command": "ls", "timeout": -1}, nil, "", "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := commandEnv(t)
			if tt.edit != nil {
				tt.edit(env)
			}
			_, err := call(t, RunCommand(), env, tt.args)
			if err == nil {
				t.Fatal("the guard let it through")
			}
			var ge *GuardError
			if tt.wantRule != "" && (!errors.As(err, &ge) || ge.Rule != tt.wantRule) {
				t.Errorf("err = %v, want rule %s", err, tt.wantRule)
			}
			if tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunCommandRuns(t *testing.T) {
	t.Parallel()
	env, dir := commandEnv(t)
	out, err := call(t, RunCommand(), env, map[string]any{"command": "pwd; cat f.txt", "cwd": "sub"})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(filepath.Join(dir, "sub"))
	if want := real + "\nx"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	out, err = call(t, RunCommand(), env, map[string]any{"command": "echo failing >&2; exit 4"})
	if err == nil || !strings.Contains(err.Error(), "status 4") || !strings.Contains(out, "failing") {
		t.Errorf("failing command: out %q err %v", out, err)
	}
}

func TestRunCommandEnvironmentHasNoSecrets(t *testing.T) {
	// Not parallel: it sets environment variables of the test process.
	t.Setenv("WARDEN_TEST_CANARY_API_KEY", "canary-d41d8cd98f00")
	t.Setenv("GITHUB_TOKEN", "canary-ghp-0000")
	t.Setenv("LANG", "C.UTF-8")
	env, _ := commandEnv(t)
	out, err := call(t, RunCommand(), env, map[string]any{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "canary") {
		t.Fatalf("a secret reached the command:\n%s", out)
	}
	if !strings.Contains(out, "LANG=C.UTF-8") {
		t.Errorf("an allowlisted variable is missing:\n%s", out)
	}
	env.Config.Commands.EnvAllowlist = []string{"WARDEN_TEST_CANARY_API_KEY"}
	out, _ = call(t, RunCommand(), env, map[string]any{"command": "env"})
	if !strings.Contains(out, "canary-d41d8cd98f00") || strings.Contains(out, "canary-ghp") {
		t.Errorf("env_allowlist not applied exactly:\n%s", out)
	}
}

func TestRunCommandTimeoutIsCapped(t *testing.T) {
	t.Parallel()
	env, _ := commandEnv(t)
	env.Config.Commands.MaxTimeout = 1
	_, err := call(t, RunCommand(), env, map[string]any{"command": "sleep 30", "timeout": 600})
	if err == nil || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunCommandCwdThroughSymlinkOut(t *testing.T) {
	t.Parallel()
	env, dir := commandEnv(t)
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	_, err := call(t, RunCommand(), env, map[string]any{"command": "pwd", "cwd": "out"})
	if !errors.Is(err, workspace.ErrEscapes) {
		t.Fatalf("cwd through a symlink out: %v", err)
	}
}

// TestRunCommandBareRepositoryAttack: files an agent can write (HEAD,
// config, objects/, refs/) make a directory a bare git repository whose
// config names a program; "safe" git commands must not run it.
func TestRunCommandBareRepositoryAttack(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: ", err)
	}
	env, dir := commandEnv(t)
	env.Config.Security.ConfirmMode = "yolo"
	files := map[string]string{
		"sub/HEAD":          "ref: refs/heads/main\n",
		"sub/config":        "[core]\n\tbare = true\n[diff]\n\texternal = touch pwned-by-diff\n",
		"sub/objects/.keep": "",
		"sub/refs/.keep":    "",
		"sub/x":             "a\n",
		"sub/y":             "b\n",
	}
	for name, content := range files {
		_, err := call(t, WriteFile(), env, map[string]any{"path": name, "content": content})
		if errors.Is(err, workspace.ErrProtected) && name == "sub/config" {
			// Refused once HEAD and refs/ make sub a repository; written
			// before them, it is not: plant it as such.
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []string{"git diff --no-index x y", "cd sub && git diff --no-index x y"} {
		_, _ = call(t, RunCommand(), env, map[string]any{"command": cmd, "cwd": "sub"})
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "pwned-by-diff")); err == nil {
		t.Fatal("a bare repository written as files ran diff.external")
	}
}
