package bwrap

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// planCase is what a plan is built from: the settings and masks the layout
// comes from, and the plan's own fields.
type planCase struct {
	s jail.Settings
	m jail.Masks
	p Plan
}

func (c *planCase) plan(t *testing.T) *Plan {
	t.Helper()
	l, err := jail.NewLayout("/work/ws", "/usr/local/bin/warden", c.s, &c.m)
	if err != nil {
		t.Fatal(err)
	}
	p := c.p
	p.Layout, p.Lockdown = l, c.s.Lockdown
	return &p
}

func baseCase() *planCase {
	return &planCase{p: Plan{
		System:  []SystemDir{{Path: "/usr"}, {Path: "/bin", Symlink: "usr/bin"}},
		Etc:     []string{"/etc/passwd"},
		Env:     []string{"PATH=" + jail.JailPATH, "HOME=" + jail.JailHome},
		Command: []string{jail.JailExe, "worker"},
	}}
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
		tweak func(*planCase)
		check func(t *testing.T, a []string)
	}{
		{"hardening flags always", func(*planCase) {}, func(t *testing.T, a []string) {
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
			if got := pairs(a, "--ro-bind", 2); !slices.ContainsFunc(got, func(p []string) bool { return cmp.Equal(p, []string{"/usr/local/bin/warden", jail.JailExe}) }) {
				t.Errorf("warden not bound at %s: %v", jail.JailExe, got)
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
			// HOME is a private tmpfs: --perms 0700 applies to the next --tmpfs.
			if i := slices.Index(a, "--perms"); i < 0 || a[i+1] != "0700" || a[i+2] != "--tmpfs" || a[i+3] != jail.JailHome {
				t.Errorf("HOME is not a 0700 tmpfs: %v", a)
			}
			if got := pairs(a, "--chdir", 1); !cmp.Equal(got, [][]string{{"/work/ws"}}) {
				t.Errorf("--chdir: %v", got)
			}
		}},
		{"network", func(c *planCase) { c.s.Network, c.p.Network = true, true }, func(t *testing.T, a []string) {
			if !slices.Contains(a, "--share-net") {
				t.Error("network = true did not share the network")
			}
		}},
		{"lockdown wins over network", func(c *planCase) {
			c.s.Lockdown, c.p.Network = true, true
			c.s.RWPaths = []string{"/work/ws/build"}
		}, func(t *testing.T, a []string) {
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
		{"masks come last and cover binds", func(c *planCase) {
			c.s.RWPaths = []string{"/work/ws/sub"}
			c.m.Files = []string{"/work/ws/.env", "/work/ws/sub/k.pem"}
			c.m.Dirs = []string{"/work/ws/.ssh"}
			c.m.Protect = []string{"/work/ws/.git/config"}
			c.p.DataFD = 7
		}, func(t *testing.T, a []string) {
			if got := pairs(a, "--ro-bind-data", 2); !cmp.Equal(got, [][]string{{"7", "/work/ws/.env"}, {"8", "/work/ws/sub/k.pem"}}) {
				t.Errorf("file masks: %v", got)
			}
			if i, j := slices.Index(a, "--bind-try"), slices.Index(a, "--ro-bind-data"); i > j {
				t.Error("a rw bind comes after the masks and would uncover them")
			}
			if i, j := slices.Index(a, "--bind-try"), slices.Index(a, "/work/ws/.git/config"); i > j {
				t.Error("a rw bind comes after a protected path")
			}
			if got := pairs(a, "--tmpfs", 1); !slices.ContainsFunc(got, func(p []string) bool { return p[0] == "/work/ws/.ssh" }) {
				t.Errorf("dir mask: %v", got)
			}
		}},
		{"gpu only when asked", func(c *planCase) { c.p.GPU = []string{"/dev/dri"} }, func(t *testing.T, a []string) {
			if got := pairs(a, "--dev-bind-try", 2); !cmp.Equal(got, [][]string{{"/dev/dri", "/dev/dri"}}) {
				t.Errorf("gpu: %v", got)
			}
		}},
		{"fds", func(c *planCase) { c.p.SeccompFD, c.p.InfoFD, c.p.BlockFD = 3, 4, 5 }, func(t *testing.T, a []string) {
			for flag, fd := range map[string]string{"--seccomp": "3", "--info-fd": "4", "--block-fd": "5"} {
				if got := pairs(a, flag, 1); !cmp.Equal(got, [][]string{{fd}}) {
					t.Errorf("%s: %v", flag, got)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := baseCase()
			tc.tweak(c)
			a, err := c.plan(t).Args()
			if err != nil {
				t.Fatal(err)
			}
			if a[len(a)-3] != "--" || a[len(a)-2] != jail.JailExe {
				t.Errorf("command not at the end after --: %v", a[len(a)-3:])
			}
			tc.check(t, a)
		})
	}
}

// TestPlanRefuses: what bubblewrap adds to the layout. The layout's own
// refusals (workspace, rw and ro paths, masks) are jail.TestNewLayoutRefuses.
func TestPlanRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tweak func(*planCase)
	}{
		{"etc shadow", func(c *planCase) { c.p.Etc = append(c.p.Etc, "/etc/shadow") }},
		{"etc gshadow", func(c *planCase) { c.p.Etc = append(c.p.Etc, "/etc/gshadow-") }},
		{"etc sudoers.d", func(c *planCase) { c.p.Etc = append(c.p.Etc, "/etc/sudoers.d") }},
		{"etc ssh", func(c *planCase) { c.p.Etc = append(c.p.Etc, "/etc/ssh/ssh_host_ed25519_key") }},
		{"etc outside etc", func(c *planCase) { c.p.Etc = append(c.p.Etc, "/root/.ssh") }},
		{"file mask without fd", func(c *planCase) { c.m.Files = []string{"/work/ws/.env"} }},
		{"secret env", func(c *planCase) { c.p.Env = append(c.p.Env, "OPENAI_API_KEY=sk-x") }},
		{"gh token env", func(c *planCase) { c.p.Env = append(c.p.Env, "GH_TOKEN=x") }},
		{"malformed env", func(c *planCase) { c.p.Env = append(c.p.Env, "NOEQUALS") }},
		{"not gpu", func(c *planCase) { c.p.GPU = []string{"/dev/sda"} }},
		{"no command", func(c *planCase) { c.p.Command = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := baseCase()
			tc.tweak(c)
			if a, err := c.plan(t).Args(); err == nil {
				t.Errorf("accepted: %v", a)
			}
		})
	}
	if _, err := (&Plan{Command: []string{"x"}}).Args(); err == nil {
		t.Error("a plan without a layout was accepted")
	}
}
