package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listed returns the entry called name in the listing of dir.
func listed(t *testing.T, w *Root, dir, name string) fs.DirEntry {
	t.Helper()
	ents, err := w.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == name {
			return e
		}
	}
	t.Fatalf("%s not listed in %s", name, dir)
	return nil
}

func readEntry(w *Root, e fs.DirEntry) (string, error) {
	f, err := w.OpenEntry(e)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// TestOpenEntry: an entry opens as Open opens its path, and every change
// made to the tree after the listing meets Open's guards.
func TestOpenEntry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		why    string
		fs     []string
		dir    string
		name   string
		change func(ws, out string) error // after the listing
		want   error                      // nil: reads "inside"
	}{
		{why: "plain file", fs: []string{"sub/f=inside"}, dir: "sub", name: "f"},
		{why: "file in the root", fs: []string{"f=inside"}, dir: ".", name: "f"},
		{why: "listed through a link to a directory", fs: []string{"real/f=inside", "l => real"}, dir: "l", name: "f"},
		{why: "file replaced by a link out", fs: []string{"sub/f=inside"}, dir: "sub", name: "f",
			change: func(ws, out string) error {
				return replaceWithLink(filepath.Join(ws, "sub/f"), filepath.Join(out, "secret"))
			},
			want: ErrEscapes},
		{why: "file replaced by a link to a masked file", fs: []string{"sub/f=inside", ".env=$SECRET"}, dir: "sub", name: "f",
			change: func(ws, out string) error { return replaceWithLink(filepath.Join(ws, "sub/f"), "../.env") },
			want:   ErrMasked},
		{why: "directory replaced by a link out", fs: []string{"sub/s=inside"}, dir: "sub", name: "s",
			change: func(ws, out string) error {
				return replaceWithLink(filepath.Join(ws, "sub"), filepath.Join(out, "outdir"))
			},
			want: ErrEscapes},
		{why: "directory replaced by a link to a masked one", fs: []string{"sub/id=inside", ".ssh/id=$SECRET"}, dir: "sub", name: "id",
			change: func(ws, out string) error { return replaceWithLink(filepath.Join(ws, "sub"), ".ssh") },
			want:   ErrMasked},
		{why: "file replaced by a hard link out", fs: []string{"sub/f=inside"}, dir: "sub", name: "f",
			change: func(ws, out string) error {
				if err := os.Remove(filepath.Join(ws, "sub/f")); err != nil {
					return err
				}
				return os.Link(filepath.Join(out, "secret"), filepath.Join(ws, "sub/f"))
			},
			want: ErrHardLink},
		{why: "file replaced by a FIFO", fs: []string{"sub/f=inside"}, dir: "sub", name: "f",
			change: func(ws, out string) error {
				if err := os.Remove(filepath.Join(ws, "sub/f")); err != nil {
					return err
				}
				return unix.Mkfifo(filepath.Join(ws, "sub/f"), 0o644)
			},
			want: ErrNotRegular},
		{why: "file removed", fs: []string{"sub/f=inside"}, dir: "sub", name: "f",
			change: func(ws, out string) error { return os.Remove(filepath.Join(ws, "sub/f")) },
			want:   fs.ErrNotExist},
		{why: "a directory", fs: []string{"sub/d/"}, dir: "sub", name: "d", want: syscall.EISDIR},
	} {
		t.Run(tc.why, func(t *testing.T) {
			t.Parallel()
			fx := makefs(t, tc.fs, nil)
			e := listed(t, fx.w, tc.dir, tc.name)
			if tc.change != nil {
				if err := tc.change(fx.ws, fx.out); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readEntry(fx.w, e)
			if got == secret {
				t.Fatalf("read the secret")
			}
			switch {
			case tc.want == nil && (err != nil || got != "inside"):
				t.Fatalf("read %q, %v; want \"inside\"", got, err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func replaceWithLink(p, target string) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

// TestOpenEntryForeign: only entries this Root listed are opened; their
// names are not taken on trust from anyone else.
func TestOpenEntryForeign(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"f=inside", ".env=$SECRET"}, nil)
	other, err := Open(fx.ws, &Options{Mask: []string{"f"}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	osEnts, err := os.ReadDir(fx.ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range osEnts {
		if _, err := fx.w.OpenEntry(e); !errors.Is(err, ErrInvalid) {
			t.Errorf("OpenEntry(os entry %s): err = %v, want ErrInvalid", e.Name(), err)
		}
	}
	// An entry of a Root with other masks is not this Root's to open.
	if _, err := other.OpenEntry(listed(t, fx.w, ".", "f")); !errors.Is(err, ErrInvalid) {
		t.Errorf("entry of another Root: err = %v, want ErrInvalid", err)
	}
	if _, err := fx.w.OpenEntry(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("OpenEntry(nil): err = %v, want ErrInvalid", err)
	}
}

// TestOpenEntrySwapRace flips a listed file with a link to the outside
// secret (RENAME_EXCHANGE, atomic) while entries are opened: no open may
// return the secret.
func TestOpenEntrySwapRace(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"d/x=inside", "d/x.alt => ../../outside/secret"}, nil)
	e := listed(t, fx.w, "d", "x")
	var stop atomic.Bool
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(fx.ws, "d/x"), unix.AT_FDCWD, filepath.Join(fx.ws, "d/x.alt"), unix.RENAME_EXCHANGE)
			if err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
			flips.Add(1)
			runtime.Gosched()
		}
	}()
	// Until both outcomes were seen, so the race really ran.
	var reads, refusals int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (reads < 100 || refusals < 100); {
		got, err := readEntry(fx.w, e)
		if got == secret {
			t.Fatal("read the secret through a swapped entry")
		}
		switch {
		case err == nil:
			reads++
		case errors.Is(err, ErrEscapes), errors.Is(err, fs.ErrNotExist):
			refusals++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d reads, %d refusals, %d flips", reads, refusals, flips.Load())
	if reads < 100 || refusals < 100 {
		t.Errorf("the race did not run: %d reads, %d refusals, %d flips", reads, refusals, flips.Load())
	}
}
