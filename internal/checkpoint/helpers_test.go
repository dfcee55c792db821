package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/workspace"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture is a workspace with its checkpoint store in a private state
// directory, next to an outside directory nothing may touch.
type fixture struct {
	ws, state, out string
	root           *workspace.Root
	store          *Store
}

func newFixture(t testing.TB, opts *Options) *fixture {
	t.Helper()
	base := t.TempDir()
	fx := &fixture{ws: filepath.Join(base, "ws"), state: filepath.Join(base, "state"), out: filepath.Join(base, "outside")}
	must(t, os.MkdirAll(fx.ws, 0o755))
	must(t, os.MkdirAll(fx.out, 0o755))
	must(t, os.WriteFile(filepath.Join(fx.out, "secret"), []byte("OUTSIDE"), 0o644))
	fx.open(t, opts)
	return fx
}

func (fx *fixture) open(t testing.TB, opts *Options) {
	t.Helper()
	root, err := workspace.Open(fx.ws, &workspace.Options{GitDirContents: true}) // as the app opens it
	must(t, err)
	t.Cleanup(func() { root.Close() })
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.StateDir = fx.state
	s, err := Open(root, &o)
	must(t, err)
	fx.root, fx.store = root, s
}

func (fx *fixture) path(rel string) string { return filepath.Join(fx.ws, filepath.FromSlash(rel)) }

func (fx *fixture) write(t testing.TB, rel, content string, perm fs.FileMode) {
	t.Helper()
	p := fx.path(rel)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	os.Remove(p)
	must(t, os.WriteFile(p, []byte(content), perm))
	must(t, os.Chmod(p, perm))
}

func (fx *fixture) checkpoint(t testing.TB) *Checkpoint {
	t.Helper()
	c, err := fx.store.Checkpoint(context.Background(), Call{Tool: "test"})
	must(t, err)
	return c
}

func (fx *fixture) undo(t testing.TB, c *Checkpoint) *UndoResult {
	t.Helper()
	res, err := fx.store.Undo(context.Background(), c, nil)
	must(t, err)
	return res
}

// snapshot describes every entry under dir, as plain os calls see it,
// without following links: kind, permission bits, content hash or target.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch m := info.Mode(); {
		case m.IsDir():
			out[rel] = fmt.Sprintf("dir %04o", m.Perm())
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link " + target
		case m.IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("file %04o %d %s", m.Perm(), len(b), hex.EncodeToString(sum[:6]))
		default:
			out[rel] = "other " + m.Type().String()
		}
		return nil
	})
	must(t, err)
	return out
}

func sameTree(t testing.TB, want, got map[string]string, what string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

// names mixes ASCII, unicode (composed and decomposed), spaces, quotes and
// leading dashes: what a tree of real projects holds.
var names = []string{
	"main.go", "README.md", "Makefile", "naïve.txt", "nai\u0308ve.txt", "日本語.md", "emoji-🚀.txt",
	"with space.c", "-dash", "quote'd", "back\\slash", "tab\tname", "ünïcödé", "x", "a.b.c", ".hidden",
}

// genTree fills dir with n files in nested directories, with modes, empty
// and binary files, unicode names and symbolic links (inside, outside,
// dangling, to directories). It is deterministic for a seed.
func genTree(t testing.TB, dir string, seed uint64, n int, out string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dirs := []string{"."}
	for i := 0; i < n; i++ {
		if r.IntN(8) == 0 || len(dirs) < 4 {
			parent := dirs[r.IntN(len(dirs))]
			d := filepath.Join(parent, fmt.Sprintf("d%d-%s", i, names[r.IntN(len(names))]))
			if strings.Count(d, "/") < 8 {
				perm := []fs.FileMode{0o755, 0o700, 0o750, 0o775}[r.IntN(4)]
				must(t, os.Mkdir(filepath.Join(dir, d), perm))
				must(t, os.Chmod(filepath.Join(dir, d), perm))
				dirs = append(dirs, d)
			}
		}
		parent := dirs[r.IntN(len(dirs))]
		name := fmt.Sprintf("%s-%d", names[r.IntN(len(names))], i)
		p := filepath.Join(dir, parent, name)
		switch k := r.IntN(20); {
		case k == 0:
			must(t, os.Symlink("../"+name, p)) // maybe dangling
		case k == 1:
			must(t, os.Symlink(filepath.Join(out, "secret"), p)) // outside
		case k == 2:
			must(t, os.Symlink(".", p)) // a loop
		default:
			var data []byte
			switch r.IntN(6) {
			case 0: // empty
			case 1: // binary
				data = make([]byte, r.IntN(64<<10))
				for i := range data {
					data[i] = byte(r.UintN(256))
				}
			default:
				var b strings.Builder
				for l := r.IntN(200); l > 0; l-- {
					fmt.Fprintf(&b, "line %d of %s: value = %d\n", l, name, r.IntN(1000))
				}
				data = []byte(b.String())
			}
			perm := []fs.FileMode{0o644, 0o600, 0o755, 0o444, 0o640}[r.IntN(5)]
			must(t, os.WriteFile(p, data, perm))
			must(t, os.Chmod(p, perm))
		}
	}
}
