package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLocate: where a change lands, links in parents followed, the last
// component and missing directories as named, guards applied.
func TestLocate(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{
		"docs/readme", ".github/workflows/ci.yml", "wf => .github/workflows", "chain => wf",
		"link => docs/readme", ".git/config", "g => .git",
	}, nil)
	tests := []struct {
		name, want string
		err        error
	}{
		{name: "docs/notes.yml", want: "docs/notes.yml"},
		{name: "wf/notes.yml", want: ".github/workflows/notes.yml"},
		{name: "chain/notes.yml", want: ".github/workflows/notes.yml"},
		{name: "wf/new/deeper/x.yml", want: ".github/workflows/new/deeper/x.yml"},
		{name: "missing/a/b.txt", want: "missing/a/b.txt"},
		{name: "link", want: "link"}, // the last component is not followed: a write there is refused as a link
		{name: "./docs/../docs/readme", want: "docs/readme"},
		{name: "g/config", err: ErrProtected},
		{name: ".env", err: ErrMasked},
		{name: "../x", err: ErrEscapes},
		{name: "docs/readme/x", err: fs.ErrNotExist}, // ENOTDIR is not ENOENT; see below
		{name: ".", err: ErrInvalid},
	}
	for _, tt := range tests {
		got, err := fx.w.Locate("write", tt.name)
		switch {
		case tt.name == "docs/readme/x":
			if err == nil {
				t.Errorf("Locate(%q) = %q, want an error (a file on the way)", tt.name, got)
			}
		case tt.err != nil:
			if !errors.Is(err, tt.err) {
				t.Errorf("Locate(%q) = %q, %v; want %v", tt.name, got, err, tt.err)
			}
		case err != nil || got != tt.want:
			t.Errorf("Locate(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestPinnedWriteRefusesAMovedTarget: the write a person approved for
// docs/notes.yml (docs a directory then) must not land in
// .github/workflows once docs is a link to it — neither the file nor a
// directory the write would have made.
func TestPinnedWriteRefusesAMovedTarget(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"docs/notes.yml", "docs/new/sub/notes.yml"} {
		fx := makefs(t, []string{"docs/readme", ".github/workflows/ci.yml"}, nil)
		pin, err := fx.w.Locate("write", name)
		must(t, err)
		if pin != name {
			t.Fatalf("Locate(%q) = %q", name, pin)
		}
		// Now docs is a link to the workflows.
		must(t, os.Rename(filepath.Join(fx.ws, "docs"), filepath.Join(fx.ws, "docs.old")))
		must(t, os.Symlink(".github/workflows", filepath.Join(fx.ws, "docs")))
		before := snapshot(t, filepath.Join(fx.ws, ".github"))
		err = fx.w.WriteFileAt(name, pin, []byte("on: push"), 0o644)
		if !errors.Is(err, ErrMoved) {
			t.Fatalf("WriteFileAt(%q) = %v, want ErrMoved", name, err)
		}
		t.Log(err)
		if after := snapshot(t, filepath.Join(fx.ws, ".github")); !equalMaps(before, after) {
			t.Errorf("the workflows changed:\nbefore %v\nafter  %v", before, after)
		}
		// Unpinned, the same write would have landed there: the pin is what refuses.
		must(t, fx.w.WriteFile(name, []byte("on: push"), 0o644))
		if _, err := os.Stat(filepath.Join(fx.ws, ".github/workflows", name[len("docs/"):])); err != nil {
			t.Errorf("control: the unpinned write did not land in the workflows: %v", err)
		}
	}
}

// TestPinnedRemoveRefusesAMovedTarget is the same for a delete.
func TestPinnedRemoveRefusesAMovedTarget(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"docs/ci.yml", ".github/workflows/ci.yml"}, nil)
	pin, err := fx.w.Locate("delete", "docs/ci.yml")
	must(t, err)
	must(t, os.Rename(filepath.Join(fx.ws, "docs"), filepath.Join(fx.ws, "docs.old")))
	must(t, os.Symlink(".github/workflows", filepath.Join(fx.ws, "docs")))
	if err := fx.w.RemoveAt("docs/ci.yml", pin); !errors.Is(err, ErrMoved) {
		t.Fatalf("RemoveAt = %v, want ErrMoved", err)
	}
	if _, err := os.Stat(filepath.Join(fx.ws, ".github/workflows/ci.yml")); err != nil {
		t.Errorf("the workflow is gone: %v", err)
	}
	// Where it still leads where it did, the pinned change is done.
	must(t, fx.w.RemoveAt("docs.old/ci.yml", "docs.old/ci.yml"))
	must(t, fx.w.WriteFileAt("docs.old/x", "docs.old/x", []byte("x"), 0o644))
}

// TestPinnedWriteRace flips docs between a directory and a link to the
// workflows (RENAME_EXCHANGE, atomic) while pinned writes to docs/notes.yml
// run: none may ever land in the workflows.
func TestPinnedWriteRace(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"docs/readme", ".github/workflows/ci.yml", "docs.alt => .github/workflows"}, nil)
	var stop atomic.Bool
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(fx.ws, "docs"), unix.AT_FDCWD, filepath.Join(fx.ws, "docs.alt"), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
			flips.Add(1)
			runtime.Gosched()
		}
	}()
	var ok, moved int
	for range 2000 {
		switch err := fx.w.WriteFileAt("docs/notes.yml", "docs/notes.yml", []byte("x"), 0o644); {
		case err == nil:
			ok++
		case errors.Is(err, ErrMoved):
			moved++
		default:
			t.Logf("other refusal: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(fx.ws, ".github/workflows/notes.yml")); err == nil {
			t.Fatal("a pinned write landed in .github/workflows")
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d flips, %d writes done, %d refused as moved", flips.Load(), ok, moved)
	if ok == 0 || moved == 0 {
		t.Errorf("the race did not race: want writes done and refused")
	}
}
