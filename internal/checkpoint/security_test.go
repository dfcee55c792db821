package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/workspace"
)

const secret = "SECRET-7d1e93"

// storeBytes returns every byte of every file of the store.
func storeBytes(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		all = append(all, b...)
		return err
	}))
	return all
}

// Masked files are never read into a checkpoint: no byte of them reaches
// the store, whatever their case, depth or the links that lead to them;
// an undo leaves them alone.
func TestMaskedNeverStored(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	files := map[string]string{
		".env": secret, "sub/.env.local": secret, "keys/id.pem": secret, "KEYS/Id_Rsa.PEM": secret,
		".ssh/config": secret, "deep/a/b/.aws/credentials": secret, ".ENV": secret, "private/notes.txt": secret,
		"ok.txt": "fine",
	}
	for p, c := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, p), []byte(c), 0o600))
	}
	must(t, os.Symlink(".env", filepath.Join(ws, "link-to-env")))
	must(t, os.Symlink("keys", filepath.Join(ws, "keydir")))
	must(t, os.WriteFile(filepath.Join(base, "outside-secret"), []byte(secret), 0o600))
	must(t, os.Link(filepath.Join(base, "outside-secret"), filepath.Join(ws, "hardlink")))
	root, err := workspace.Open(ws, &workspace.Options{Mask: []string{"private/**"}})
	must(t, err)
	defer root.Close()
	s, err := Open(root, &Options{StateDir: filepath.Join(base, "state")})
	must(t, err)
	c, err := s.Checkpoint(context.Background(), Call{Tool: "run_command"})
	must(t, err)
	if got := storeBytes(t, s.Dir()); bytes.Contains(got, []byte(secret)) {
		t.Fatal("a masked (or hard-linked) file's content reached the store")
	}
	if c.Files != 2 { // ok.txt and nothing else recorded as a file... plus links
		t.Logf("files recorded: %d", c.Files)
	}
	if !strings.Contains(c.Note(), "hardlink (has other hard links)") {
		t.Errorf("note %q does not name the hard link", c.Note())
	}

	// Changes to masked files are not undone; deleted ones are said to be
	// unrecoverable.
	must(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("NEW"), 0o600))
	must(t, os.Remove(filepath.Join(ws, "keys/id.pem")))
	must(t, os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("changed"), 0o600))
	res, err := s.Undo(context.Background(), c, nil)
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(ws, ".env")); string(b) != "NEW" {
		t.Errorf(".env = %q after undo: a masked file was written", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "ok.txt")); string(b) != "fine" {
		t.Errorf("ok.txt = %q after undo", b)
	}
	if !strings.Contains(strings.Join(res.Plan.Notes, "\n"), "keys/id.pem was masked") {
		t.Errorf("plan notes %q do not say keys/id.pem cannot be restored", res.Plan.Notes)
	}
	if target, _ := os.Readlink(filepath.Join(ws, "link-to-env")); target != ".env" {
		t.Errorf("link-to-env -> %q", target)
	}
}

// A symbolic link planted where the checkpoint had a directory, pointing
// outside, is removed and the directory restored: nothing is written
// through it. A link the checkpoint recorded is restored as a link.
func TestPlantedSymlinkNotFollowed(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.write(t, "d/a.txt", "a", 0o644)
	fx.write(t, "d/sub/b.txt", "b", 0o644)
	must(t, os.Symlink(filepath.Join(fx.out, "secret"), fx.path("l")))
	before := snapshot(t, fx.ws)
	outBefore := snapshot(t, fx.out)
	c := fx.checkpoint(t)

	must(t, os.RemoveAll(fx.path("d")))
	must(t, os.Symlink(fx.out, fx.path("d")))                     // d -> outside
	must(t, os.Remove(fx.path("l")))                              // l becomes a file
	must(t, os.WriteFile(fx.path("l"), []byte("x"), 0o644))       //
	must(t, os.Symlink(filepath.Join(fx.out, "x"), fx.path("n"))) // new link out
	fx.undo(t, c)
	sameTree(t, before, snapshot(t, fx.ws), "after undo")
	sameTree(t, outBefore, snapshot(t, fx.out), "outside")
}

// A link swapped in for a directory in the middle of an undo makes the
// writes below it fail, confined: nothing reaches the outside, the undo
// is left pending, and resuming it finishes the restore.
func TestSwapDuringUndo(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	for _, p := range []string{"a/1", "d/2", "d/3", "z/4"} {
		fx.write(t, p, "v1 "+p, 0o644)
	}
	before := snapshot(t, fx.ws)
	outBefore := snapshot(t, fx.out)
	c := fx.checkpoint(t)
	for _, p := range []string{"a/1", "d/2", "d/3", "z/4"} {
		fx.write(t, p, "v2 "+p, 0o644)
	}
	swapped := false
	_, err := fx.store.Undo(context.Background(), c, &UndoOptions{testOnlyAfterOp: func(int) {
		if !swapped {
			swapped = true
			must(t, os.Rename(fx.path("d"), fx.path("d.moved")))
			must(t, os.Symlink(fx.out, fx.path("d")))
		}
	}})
	if err == nil || !errors.Is(err, workspace.ErrEscapes) {
		t.Fatalf("undo with d swapped for a link out = %v, want a confined failure", err)
	}
	sameTree(t, outBefore, snapshot(t, fx.out), "outside after the attack")
	if _, err := fx.store.Checkpoint(context.Background(), Call{}); !errors.Is(err, ErrUndoPending) {
		t.Fatalf("checkpoint with an undo pending = %v, want ErrUndoPending", err)
	}
	must(t, os.RemoveAll(fx.path("d.moved")))
	if _, err := fx.store.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameTree(t, before, snapshot(t, fx.ws), "after resume")
	sameTree(t, outBefore, snapshot(t, fx.out), "outside")
	if j, _ := fx.store.Pending(); j != nil {
		t.Fatalf("journal left after resume: %+v", j)
	}
}

// A store inside the workspace, or inside a path the jail binds, is
// refused: what it protects against could read or forge it.
func TestStoreExposure(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	root, err := workspace.Open(ws, nil)
	must(t, err)
	defer root.Close()
	if _, err := Open(root, &Options{StateDir: filepath.Join(ws, ".local/state/warden")}); !errors.Is(err, ErrExposed) {
		t.Errorf("store inside the workspace: %v, want ErrExposed", err)
	}
	other := t.TempDir()
	if _, err := Open(root, &Options{StateDir: filepath.Join(other, "state"), Exposed: []string{other}}); !errors.Is(err, ErrExposed) {
		t.Errorf("store inside an rw_path: %v, want ErrExposed", err)
	}
	// Through a link too.
	must(t, os.Symlink(ws, filepath.Join(other, "ws-link")))
	if _, err := Open(root, &Options{StateDir: filepath.Join(other, "ws-link", "state")}); !errors.Is(err, ErrExposed) {
		t.Errorf("store inside the workspace through a link: %v, want ErrExposed", err)
	}
	s, err := Open(root, &Options{StateDir: filepath.Join(other, "state2")})
	must(t, err)
	for _, d := range []string{s.Dir(), filepath.Join(s.Dir(), "packs"), filepath.Join(s.Dir(), "records")} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, st.Mode(), err)
		}
	}
	c, err := s.Checkpoint(context.Background(), Call{})
	must(t, err)
	must(t, filepath.WalkDir(s.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
				t.Errorf("%s is %v, want 0600", p, st.Mode().Perm())
			}
		}
		return err
	}))
	_ = c
}

// A damaged store gives a clear error and restores nothing.
func TestCorruptStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
	}{
		{"flipped byte in a pack", func(t *testing.T, dir string) {
			for _, p := range packs(t, dir) {
				b, _ := os.ReadFile(p)
				i := bytes.Index(b, []byte("content of"))
				if i >= 0 {
					b[i] ^= 1
					must(t, os.WriteFile(p, b, 0o600))
				}
			}
		}},
		{"truncated pack", func(t *testing.T, dir string) {
			for _, p := range packs(t, dir) {
				must(t, os.Truncate(p, 10))
			}
		}},
		{"missing pack", func(t *testing.T, dir string) {
			for _, p := range packs(t, dir) {
				must(t, os.Remove(p))
			}
		}},
		{"record names another tree", func(t *testing.T, dir string) {
			ents, _ := os.ReadDir(filepath.Join(dir, "records"))
			p := filepath.Join(dir, "records", ents[0].Name())
			b, _ := os.ReadFile(p)
			i := bytes.Index(b, []byte(`"tree": "`)) + len(`"tree": "`)
			if b[i] == '0' {
				b[i] = '1'
			} else {
				b[i] = '0'
			}
			must(t, os.WriteFile(p, b, 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, nil)
			for i := range 20 {
				fx.write(t, filepath.Join("d", string(rune('a'+i))), "content of "+string(rune('a'+i)), 0o644)
			}
			c := fx.checkpoint(t)
			must(t, os.RemoveAll(fx.path("d")))
			fx.write(t, "new", "new", 0o644)
			changed := snapshot(t, fx.ws)
			tc.break_(t, fx.store.Dir())
			c, err := fx.store.Get(c.ID)
			if err == nil {
				_, err = fx.store.Undo(context.Background(), c, nil)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("undo from a damaged store = %v, want ErrCorrupt", err)
			}
			sameTree(t, changed, snapshot(t, fx.ws), "workspace after a refused undo")
			if j, _ := fx.store.Pending(); j != nil {
				t.Fatalf("a refused undo left a journal")
			}
		})
	}
}

func packs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	must(t, err)
	if len(m) == 0 {
		t.Fatal("no packs")
	}
	return m
}
