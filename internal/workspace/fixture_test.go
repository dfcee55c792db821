package workspace

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// secret is the content of every file the tests place outside the workspace
// or behind a mask; no operation may ever return it.
const secret = "SECRET-4f1d0c"

// fixture is a workspace (dir/ws) next to files it must never reach
// (dir/outside).
type fixture struct {
	w   *Root
	ws  string // workspace host path
	out string // outside host path
}

// makefs builds a fixture from os.Root-style lines, inside the workspace:
//
//	"a/b/c/"            a directory
//	"f"                 a file holding "content of f"
//	"f=text"            a file holding text ("$SECRET" is replaced by secret)
//	"l => target"       a symbolic link ("$OUT" is the outside directory)
//	"h ==> target"      a hard link to target (relative to the fixture dir)
//
// The outside directory always holds secret (a file), outdir/s (a file in a
// directory) and dir/ (empty); they hold secret.
func makefs(t testing.TB, lines []string, opts *Options) *fixture {
	t.Helper()
	base := t.TempDir()
	fx := &fixture{ws: filepath.Join(base, "ws"), out: filepath.Join(base, "outside")}
	for _, p := range []string{fx.ws, filepath.Join(fx.out, "outdir"), filepath.Join(fx.out, "dir")} {
		must(t, os.MkdirAll(p, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(fx.out, "secret"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(fx.out, "outdir", "s"), []byte(secret), 0o644))
	for _, line := range lines {
		line = strings.ReplaceAll(line, "$OUT", fx.out)
		line = strings.ReplaceAll(line, "$SECRET", secret)
		switch {
		case strings.Contains(line, " ==> "):
			name, target, _ := strings.Cut(line, " ==> ")
			mkparent(t, fx.ws, name)
			must(t, os.Link(filepath.Join(base, target), filepath.Join(fx.ws, name)))
		case strings.Contains(line, " => "):
			name, target, _ := strings.Cut(line, " => ")
			mkparent(t, fx.ws, name)
			must(t, os.Symlink(target, filepath.Join(fx.ws, name)))
		case strings.HasSuffix(line, "/"):
			must(t, os.MkdirAll(filepath.Join(fx.ws, line), 0o755))
		default:
			name, text, ok := strings.Cut(line, "=")
			if !ok {
				text = "content of " + name
			}
			mkparent(t, fx.ws, name)
			must(t, os.WriteFile(filepath.Join(fx.ws, name), []byte(text), 0o644))
		}
	}
	w, err := Open(fx.ws, opts)
	must(t, err)
	t.Cleanup(func() { w.Close() })
	fx.w = w
	return fx
}

func mkparent(t testing.TB, ws, name string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot records every entry below dir: type, content and mtime.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String() + " " + info.ModTime().Format(time.RFC3339Nano)
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		snap[p] = v
		return nil
	})
	must(t, err)
	return snap
}

// leaks reports whether data carries the secret.
func leaks(data []byte) bool { return bytes.Contains(data, []byte(secret)) }

// ops runs one named FS operation on p and returns whatever it read.
var ops = map[string]func(w *Root, p string) ([]byte, error){
	"read": func(w *Root, p string) ([]byte, error) { return w.ReadFile(p, 0) },
	"open": func(w *Root, p string) ([]byte, error) {
		f, err := w.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(f)
	},
	"stat": func(w *Root, p string) ([]byte, error) {
		fi, err := w.Stat(p)
		if err != nil {
			return nil, err
		}
		return []byte(fi.Name()), nil
	},
	"lstat": func(w *Root, p string) ([]byte, error) {
		fi, err := w.Lstat(p)
		if err != nil {
			return nil, err
		}
		return []byte(fi.Name()), nil
	},
	"readdir": func(w *Root, p string) ([]byte, error) {
		ents, err := w.ReadDir(p)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return []byte(strings.Join(names, " ")), err
	},
	"walk": func(w *Root, p string) ([]byte, error) {
		var out []byte
		err := w.Walk(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			out = append(out, q+" "...)
			if d.Type().IsRegular() {
				// A walk feeds reads: read what it finds.
				if b, err := w.ReadFile(q, 0); err == nil {
					out = append(out, b...)
				}
			}
			return nil
		})
		return out, err
	},
	"dirpath": func(w *Root, p string) ([]byte, error) {
		d, err := w.DirPath(p)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(d+"/", w.Dir()+"/") {
			return []byte(secret), nil // a path outside counts as a leak
		}
		return []byte(d), nil
	},
	"write":  func(w *Root, p string) ([]byte, error) { return nil, w.WriteFile(p, []byte("pwned"), 0o644) },
	"remove": func(w *Root, p string) ([]byte, error) { return nil, w.Remove(p) },
	"mkdir":  func(w *Root, p string) ([]byte, error) { return nil, w.MkdirAll(p, 0o755) },
	"mvfrom": func(w *Root, p string) ([]byte, error) { return nil, w.Rename(p, "moved") },
	"mvto":   func(w *Root, p string) ([]byte, error) { return nil, w.Rename("plain", p) },
}

var (
	readOps  = []string{"read", "open", "stat", "lstat", "readdir", "walk", "dirpath"}
	writeOps = []string{"write", "remove", "mkdir", "mvfrom", "mvto"}
	allOps   = slices.Concat(readOps, writeOps)
)
