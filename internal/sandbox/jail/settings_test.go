package jail

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
)

func TestJailEnv(t *testing.T) {
	t.Parallel()
	host := []string{"LANG=C.UTF-8", "OPENAI_API_KEY=sk-1", "GITHUB_TOKEN=g", "AWS_SECRET_ACCESS_KEY=a", "MY_VAR=1", "PATH=/evil", "HOME=/root", "DB_PASSWORD=p", "TERM=xterm"}
	got := JailEnv(host, []string{"MY_VAR", "GITHUB_TOKEN", "DB_PASSWORD"})
	want := []string{"PATH=" + JailPATH, "HOME=" + JailHome, "TMPDIR=/tmp", "WARDEN_SANDBOX=1", "GIT_CONFIG_PARAMETERS=" + command.GitHardening, "LANG=C.UTF-8", "MY_VAR=1", "TERM=xterm"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JailEnv (-want +got):\n%s", diff)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		sb           config.Sandbox
		wantErr      error
		wantLockdown bool
		wantForced   bool
		wantNetwork  bool
	}{
		{"plain", config.Sandbox{Enabled: true}, nil, false, false, false},
		{"network", config.Sandbox{Enabled: true, Network: true}, nil, false, false, true},
		{"lockdown drops network", config.Sandbox{Lockdown: true, Network: true}, nil, true, false, false},
		{"invalid → lockdown", config.Sandbox{Enabled: true, Network: true, Invalid: "sandbox.lockdown: want a boolean"}, nil, true, true, false},
		{"unknown backend → lockdown", config.Sandbox{Backend: "firecracker"}, nil, true, true, false},
		{"bad landlock → lockdown", config.Sandbox{Landlock: "maybe"}, nil, true, true, false},
		{"docker accepted (checked at start)", config.Sandbox{Backend: "docker"}, nil, false, false, false},
		{"ssh accepted (checked at start)", config.Sandbox{Backend: "ssh"}, nil, false, false, false},
		{"modal refused", config.Sandbox{Backend: "modal"}, ErrBackendUnavailable, false, false, false},
		{"modal refused even when invalid", config.Sandbox{Backend: "modal", Invalid: "x"}, ErrBackendUnavailable, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Resolve(&tc.sb)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "never runs a sandboxed workspace unsandboxed") {
					t.Errorf("refusal does not say why: %v", err)
				}
				return
			}
			if s.Lockdown != tc.wantLockdown || (s.Forced != "") != tc.wantForced || s.Network != tc.wantNetwork {
				t.Errorf("got lockdown %v forced %q network %v", s.Lockdown, s.Forced, s.Network)
			}
		})
	}
	if !Enabled(&config.Sandbox{Invalid: "x"}) || Enabled(nil) || Enabled(&config.Sandbox{}) {
		t.Error("Enabled: an invalid section must be sandboxed, no section must not")
	}
}

func TestResolveMasks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"a/k.pem", "b/c/d.PEM", ".ssh/id", "src/x.go", "deep/.ssh/config"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	os.Symlink("src/x.go", filepath.Join(dir, "link.pem"))
	os.Symlink("/etc/hostname", filepath.Join(dir, "out.pem"))
	m, err := ResolveMasks(dir, []string{".env", "**/*.pem", "**/.ssh", "**/.ssh/**", "missing/dir/x"}, []string{".git/hooks/**"})
	if err != nil {
		t.Fatal(err)
	}
	j := func(ps ...string) []string {
		for i, p := range ps {
			ps[i] = filepath.Join(dir, p)
		}
		return ps
	}
	if diff := cmp.Diff(j(".env", "a/k.pem", "b/c/d.PEM", "src/x.go"), m.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(j(".ssh", "deep/.ssh"), m.Dirs); diff != "" {
		t.Errorf("dirs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(j(".env"), m.Placeholders); diff != "" {
		t.Errorf("placeholders (-want +got):\n%s", diff)
	}
}
