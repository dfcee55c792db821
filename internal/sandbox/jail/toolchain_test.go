package jail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Which directories of a PATH the jail gets, and which it never does.
func TestToolchains(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "src", "proj")
	dirs := []string{
		"home/.cargo/bin", "home/.rustup/toolchains", "home/.nvm/versions/node/v22/bin", "home/.nvm/versions/node/v22/etc",
		"home/bin", "home/.local/bin", "home/.ssh/bin", "home/.config/tool/bin", "home/src/proj/bin", "opt/zig",
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/.cargo/credentials.toml", "home/.nvm/versions/node/v22/etc/npmrc"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("token"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(root, "home/.cargo/bin"), filepath.Join(root, "cargolink"))
	j := func(p string) string { return filepath.Join(root, p) }
	hostPATH := strings.Join([]string{
		j("home/.cargo/bin"), j("cargolink"), j("home/.nvm/versions/node/v22/bin"), j("home/bin"), j("home/.local/bin"),
		j("home/.ssh/bin"), j("home/.config/tool/bin"), j("home/src/proj/bin"), "relative/bin", j("missing/bin"),
		"/usr/bin", "/proc/self", "/bin",
	}, ":")
	tc := Toolchains(hostPATH, home, ws, []string{j("opt/zig")}, []string{"/usr", "/bin"})

	if diff := cmp.Diff([]string{
		j("opt/zig"), j("home/.cargo"), j("home/.rustup"), j("home/.nvm/versions/node/v22"), j("home/bin"), j("home/.local/bin"),
	}, tc.Binds); diff != "" {
		t.Errorf("binds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{j("home/.cargo/credentials.toml"), j("home/.nvm/versions/node/v22/etc/npmrc")}, tc.Masks); diff != "" {
		t.Errorf("masks (-want +got):\n%s", diff)
	}
	wantPATH := strings.Join([]string{
		j("opt/zig"), j("home/.cargo/bin"), j("home/.nvm/versions/node/v22/bin"), j("home/bin"), j("home/.local/bin"),
		"/usr/bin", "/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/sbin",
	}, ":")
	if tc.PATH != wantPATH {
		t.Errorf("PATH\n got %s\nwant %s", tc.PATH, wantPATH)
	}
	if diff := cmp.Diff([]string{"RUSTUP_HOME=" + j("home/.rustup")}, tc.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	for _, d := range []string{j("home/.ssh/bin"), j("home/.config/tool/bin"), j("home/src/proj/bin"), "relative/bin", j("missing/bin"), "/proc/self"} {
		if tc.Skipped[d] == "" {
			t.Errorf("%s was not left out", d)
		}
	}

	// A workspace holding a toolchain root, or HOME on the PATH, binds nothing.
	tc = Toolchains(home, home, ws, nil, nil)
	if len(tc.Binds) != 0 {
		t.Errorf("HOME bound: %q", tc.Binds)
	}
}

// AddToolchain puts the binds before the workspace's and the masks last.
func TestAddToolchain(t *testing.T) {
	t.Parallel()
	l, err := NewLayout("/w", "/usr/bin/warden", Settings{}, &Masks{Files: []string{"/w/.env"}})
	if err != nil {
		t.Fatal(err)
	}
	l.AddToolchain(&Toolchain{Binds: []string{"/t"}, Masks: []string{"/t/credentials"}})
	var got []string
	for _, m := range l.Mounts {
		got = append(got, m.Kind.String()+" "+m.Target)
	}
	want := []string{"tmpfs /tmp", "tmpfs /home/warden", "bind /run/warden/warden", "bind /t", "bind /w", "empty-file /w/.env", "empty-file /t/credentials"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	if l.Masked != 2 {
		t.Errorf("masked %d, want 2", l.Masked)
	}
}
