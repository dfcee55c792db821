package sandbox

import (
	"errors"
	"github.com/wardenhq/warden/internal/command"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/config"
)

func basePlan() *Plan {
	return &Plan{
		Workspace: "/work/ws", Exe: "/usr/local/bin/warden",
		System:  []SystemDir{{Path: "/usr"}, {Path: "/bin", Symlink: "usr/bin"}},
		Etc:     []string{"/etc/passwd"},
		Env:     []string{"PATH=" + JailPATH, "HOME=" + JailHome},
		Command: []string{JailExe, "worker"},
	}
}

// pairs returns the operands that follow each occurrence of flag.
func pairs(args []string, flag string, n int) [][]string {
	var out [][]string
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == flag && i+n < len(args) {
			out = append(out, args[i+1:i+1+n])
		}
	}
	return out
}

func TestPlanArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tweak func(*Plan)
		check func(t *testing.T, a []string)
	}{
		{"hardening flags always", func(p *Plan) {}, func(t *testing.T, a []string) {
			for _, f := range []string{"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--clearenv"} {
				if !slices.Contains(a, f) {
					t.Errorf("missing %s", f)
				}
			}
			if got := pairs(a, "--cap-drop", 1); !cmp.Equal(got, [][]string{{"ALL"}}) {
				t.Errorf("--cap-drop: %v", got)
			}
			if slices.Contains(a, "--share-net") {
				t.Error("network shared by default")
			}
			if got := pairs(a, "--bind", 2); !cmp.Equal(got, [][]string{{"/work/ws", "/work/ws"}}) {
				t.Errorf("workspace bind: %v", got)
			}
			if got := pairs(a, "--ro-bind", 2); !slices.ContainsFunc(got, func(p []string) bool { return cmp.Equal(p, []string{"/usr/local/bin/warden", JailExe}) }) {
				t.Errorf("warden not bound at %s: %v", JailExe, got)
			}
			if got := pairs(a, "--remount-ro", 1); !slices.ContainsFunc(got, func(p []string) bool { return p[0] == "/" }) {
				t.Error("jail root stays writable")
			}
			// --clearenv must precede every --setenv.
			if slices.Index(a, "--clearenv") > slices.Index(a, "--setenv") {
				t.Error("--setenv before --clearenv")
			}
			if got := pairs(a, "--symlink", 2); !cmp.Equal(got, [][]string{{"usr/bin", "/bin"}}) {
				t.Errorf("merged-usr symlink: %v", got)
			}
		}},
		{"network", func(p *Plan) { p.Network = true }, func(t *testing.T, a []string) {
			if !slices.Contains(a, "--share-net") {
				t.Error("network = true did not share the network")
			}
		}},
		{"lockdown wins over network", func(p *Plan) { p.Network, p.Lockdown = true, true; p.RW = []string{"/work/ws/build"} }, func(t *testing.T, a []string) {
			if slices.Contains(a, "--share-net") {
				t.Error("lockdown shares the network")
			}
			if len(pairs(a, "--bind", 2)) != 0 {
				t.Error("lockdown binds the workspace read-write")
			}
			if got := pairs(a, "--bind-try", 2); !cmp.Equal(got, [][]string{{"/work/ws/build", "/work/ws/build"}}) {
				t.Errorf("rw_paths under lockdown: %v", got)
			}
		}},
		{"masks come last and cover binds", func(p *Plan) {
			p.RW = []string{"/work/ws/sub"}
			p.MaskFiles = []string{"/work/ws/.env", "/work/ws/sub/k.pem"}
			p.MaskDirs = []string{"/work/ws/.ssh"}
			p.DataFD = 7
		}, func(t *testing.T, a []string) {
			if got := pairs(a, "--ro-bind-data", 2); !cmp.Equal(got, [][]string{{"7", "/work/ws/.env"}, {"8", "/work/ws/sub/k.pem"}}) {
				t.Errorf("file masks: %v", got)
			}
			if i, j := slices.Index(a, "--bind-try"), slices.Index(a, "--ro-bind-data"); i > j {
				t.Error("a rw bind comes after the masks and would uncover them")
			}
			if got := pairs(a, "--tmpfs", 1); !slices.ContainsFunc(got, func(p []string) bool { return p[0] == "/work/ws/.ssh" }) {
				t.Errorf("dir mask: %v", got)
			}
		}},
		{"gpu only when asked", func(p *Plan) { p.GPU = []string{"/dev/dri"} }, func(t *testing.T, a []string) {
			if got := pairs(a, "--dev-bind-try", 2); !cmp.Equal(got, [][]string{{"/dev/dri", "/dev/dri"}}) {
				t.Errorf("gpu: %v", got)
			}
		}},
		{"fds", func(p *Plan) { p.SeccompFD, p.InfoFD, p.BlockFD = 3, 4, 5 }, func(t *testing.T, a []string) {
			for flag, fd := range map[string]string{"--seccomp": "3", "--info-fd": "4", "--block-fd": "5"} {
				if got := pairs(a, flag, 1); !cmp.Equal(got, [][]string{{fd}}) {
					t.Errorf("%s: %v", flag, got)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := basePlan()
			tc.tweak(p)
			a, err := p.Args()
			if err != nil {
				t.Fatal(err)
			}
			if a[len(a)-3] != "--" || a[len(a)-2] != JailExe {
				t.Errorf("command not at the end after --: %v", a[len(a)-3:])
			}
			tc.check(t, a)
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tweak func(*Plan)
	}{
		{"workspace is /", func(p *Plan) { p.Workspace = "/" }},
		{"workspace is /etc", func(p *Plan) { p.Workspace = "/etc" }},
		{"workspace relative", func(p *Plan) { p.Workspace = "ws" }},
		{"workspace unclean", func(p *Plan) { p.Workspace = "/work/../etc" }},
		{"etc shadow", func(p *Plan) { p.Etc = append(p.Etc, "/etc/shadow") }},
		{"etc gshadow", func(p *Plan) { p.Etc = append(p.Etc, "/etc/gshadow-") }},
		{"etc sudoers.d", func(p *Plan) { p.Etc = append(p.Etc, "/etc/sudoers.d") }},
		{"etc ssh", func(p *Plan) { p.Etc = append(p.Etc, "/etc/ssh/ssh_host_ed25519_key") }},
		{"etc outside etc", func(p *Plan) { p.Etc = append(p.Etc, "/root/.ssh") }},
		{"ro /etc", func(p *Plan) { p.RO = []string{"/etc"} }},
		{"rw /", func(p *Plan) { p.RW = []string{"/"} }},
		{"ro /proc/1", func(p *Plan) { p.RO = []string{"/proc/1/root"} }},
		{"rw relative", func(p *Plan) { p.RW = []string{"build"} }},
		{"mask outside", func(p *Plan) { p.MaskFiles = []string{"/etc/passwd"}; p.DataFD = 3 }},
		{"mask the workspace", func(p *Plan) { p.MaskDirs = []string{"/work/ws"} }},
		{"mask prefix trick", func(p *Plan) { p.MaskDirs = []string{"/work/ws2/x"} }},
		{"file mask without fd", func(p *Plan) { p.MaskFiles = []string{"/work/ws/.env"} }},
		{"secret env", func(p *Plan) { p.Env = append(p.Env, "OPENAI_API_KEY=sk-x") }},
		{"gh token env", func(p *Plan) { p.Env = append(p.Env, "GH_TOKEN=x") }},
		{"not gpu", func(p *Plan) { p.GPU = []string{"/dev/sda"} }},
		{"no command", func(p *Plan) { p.Command = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := basePlan()
			tc.tweak(p)
			if a, err := p.Args(); err == nil {
				t.Errorf("accepted: %v", a)
			}
		})
	}
}

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
	m, err := resolveMasks(dir, []string{".env", "**/*.pem", "**/.ssh", "**/.ssh/**", "missing/dir/x"}, []string{".git/hooks/**"})
	if err != nil {
		t.Fatal(err)
	}
	j := func(ps ...string) []string {
		for i, p := range ps {
			ps[i] = filepath.Join(dir, p)
		}
		return ps
	}
	if diff := cmp.Diff(j(".env", "a/k.pem", "b/c/d.PEM", "src/x.go"), m.files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(j(".ssh", "deep/.ssh"), m.dirs); diff != "" {
		t.Errorf("dirs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(j(".env"), m.placeholders); diff != "" {
		t.Errorf("placeholders (-want +got):\n%s", diff)
	}
}
