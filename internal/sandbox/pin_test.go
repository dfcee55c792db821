package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/internal/workspace"
)

// TestJailPinnedChanges: the jail's file system locates a change where the
// host's workspace does, and refuses a pinned write or removal (ErrMoved,
// across the protocol) once the path leads elsewhere — here because a
// jailed command made docs a link to .github/workflows.
func TestJailPinnedChanges(t *testing.T) {
	w, dir := startJail(t, nil, map[string]string{"docs/a.yml": "a", ".github/workflows/ci.yml": "on: push"})
	var fsys workspace.PinnedFS = w.FS()
	host, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for _, name := range []string{"docs/notes.yml", "docs/a.yml", "docs/new/x.yml"} {
		got, err := fsys.Locate("write", name)
		want, herr := host.Locate("write", name)
		if err != nil || herr != nil || got != want || got != name {
			t.Errorf("Locate(%q): jail %q %v, host %q %v", name, got, err, want, herr)
		}
	}
	if _, err := fsys.Locate("write", ".git/config"); !errors.Is(err, workspace.ErrProtected) {
		t.Errorf("Locate(.git/config) = %v, want ErrProtected", err)
	}
	if res := run(t, w, "mv docs docs.old && ln -s .github/workflows docs"); res.ExitCode != 0 {
		t.Fatalf("swap: %s", res.Output)
	}
	if err := fsys.WriteFileAt("docs/notes.yml", "docs/notes.yml", []byte("x"), 0o644); !errors.Is(err, workspace.ErrMoved) {
		t.Errorf("pinned write after the swap: %v, want ErrMoved", err)
	}
	if err := fsys.WriteFileAt("docs/new/x.yml", "docs/new/x.yml", []byte("x"), 0o644); !errors.Is(err, workspace.ErrMoved) {
		t.Errorf("pinned write to a new directory after the swap: %v, want ErrMoved", err)
	}
	if err := fsys.RemoveAt("docs/ci.yml", "docs/ci.yml"); !errors.Is(err, workspace.ErrMoved) {
		t.Errorf("pinned remove after the swap: %v, want ErrMoved", err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, ".github/workflows"))
	if err != nil || len(ents) != 1 {
		t.Errorf("the workflows changed: %v %v", ents, err)
	}
	if got, err := fsys.Locate("write", "docs/notes.yml"); err != nil || got != ".github/workflows/notes.yml" {
		t.Errorf("Locate after the swap: %q %v", got, err)
	}
	// Where the path still leads where it did, pinned changes are made.
	if err := fsys.WriteFileAt("docs.old/b.yml", "docs.old/b.yml", []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsys.RemoveAt("docs.old/a.yml", "docs.old/a.yml"); err != nil {
		t.Fatal(err)
	}
}
