package jail

import (
	"os"
	"path/filepath"
	"testing"
)

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	return err == nil
}

// The placeholders of missing masks exist while a jail holds them and are
// gone once the last hold is released: nothing is left in the user's tree.
func TestHoldRemovesPlaceholdersLastOut(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mask := []string{"secrets/**"}
	_, h1, err := PrepareMasks(ws, mask, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, secrets, toml := filepath.Join(ws, ".env"), filepath.Join(ws, "secrets"), filepath.Join(ws, "warden.toml")
	for _, p := range []string{env, secrets, toml} {
		if !exists(t, p) {
			t.Fatalf("%s: no placeholder while a jail holds the workspace", p)
		}
	}
	// A second jail of the workspace takes the existing placeholders as
	// its own.
	m2, h2, err := PrepareMasks(ws, mask, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Placeholders) != 4 {
		t.Errorf("second jail knows placeholders %q, want .env, secrets, warden.toml, warden.yaml", m2.Placeholders)
	}
	if err := h1.Release(); err != nil {
		t.Fatal(err)
	}
	if !exists(t, env) || !exists(t, secrets) {
		t.Fatal("placeholders removed while another jail still stands on them")
	}
	if err := h2.Release(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{env, secrets, toml} {
		if exists(t, p) {
			t.Errorf("%s left in the workspace after the last jail", p)
		}
	}
	if err := h2.Release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	var nilHold *Hold
	if err := nilHold.Release(); err != nil {
		t.Errorf("nil release: %v", err)
	}
}

// What the user made or wrote into is never removed: a placeholder written
// into, an empty file or directory the user created, a file planted in a
// placeholder directory.
func TestHoldKeepsWhatTheUserMade(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The user's own empty .env.local and keys/ (masked, existing).
	if err := os.WriteFile(filepath.Join(ws, ".env.local"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, h, err := PrepareMasks(ws, []string{"secrets/**", "keys/**", ".env.local"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// While the jail runs, the user fills in .env and puts a file in
	// secrets/ on the host.
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "secrets", "k"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".env", "secrets/k", ".env.local", "keys"} {
		if !exists(t, filepath.Join(ws, p)) {
			t.Errorf("%s was removed; only warden's empty placeholders may be", p)
		}
	}
	if exists(t, filepath.Join(ws, "warden.toml")) {
		t.Error("warden.toml placeholder left behind")
	}
}

// A placeholder left by a jail that never released it (its process was
// killed) is removed by the next jail's release.
func TestHoldRemovesLeftovers(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, h1, err := PrepareMasks(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h1.dir.Close() // the process died: the kernel dropped its lock
	h1.dir = nil
	if !exists(t, filepath.Join(ws, ".env")) {
		t.Fatal("no placeholder")
	}
	_, h2, err := PrepareMasks(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Release(); err != nil {
		t.Fatal(err)
	}
	if exists(t, filepath.Join(ws, ".env")) {
		t.Error("leftover placeholder not removed")
	}
}

// A symbolic link at a placeholder's path is never followed or removed.
func TestHoldLeavesSymlinks(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, h, err := PrepareMasks(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(ws, ".env")
	if err := os.Remove(env); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, env); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if !exists(t, env) || !exists(t, outside) {
		t.Error("a symbolic link, or what it points to, was removed")
	}
}
