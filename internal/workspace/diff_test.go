package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// benignTree holds no masks, no protected paths, no links out: on it the
// workspace must behave exactly as plain os does.
var benignTree = []string{
	"README.md=# hello\n", "empty=", "src/main.go=package main\n", "src/lib/a.go=package lib\n",
	"src/lib/b_test.go", "docs/", "docs/guide/", "link => src/main.go", "dlink => src/lib",
	"weird name with spaces", "ünïcødé", "%2e%2e", `back\slash`,
}

var benignPaths = []string{
	".", "README.md", "empty", "src", "src/", "./src/main.go", "src/lib/a.go", "src/lib/../main.go",
	"docs", "docs/guide", "link", "dlink", "dlink/a.go", "weird name with spaces", "ünïcødé", "%2e%2e",
	`back\slash`, "missing", "missing/deeper", "README.md/x", "src/lib/a.go/", "link/", "dlink/",
}

// errKind reduces an error to what a caller can branch on.
func errKind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, fs.ErrNotExist):
		return "not exist"
	case errors.Is(err, syscall.ENOTDIR):
		return "not dir"
	case errors.Is(err, syscall.EISDIR):
		return "is dir"
	case errors.Is(err, fs.ErrExist):
		return "exists"
	}
	return "other: " + err.Error()
}

type statView struct {
	Name  string
	Size  int64
	Mode  fs.FileMode
	MTime int64
	Err   string
}

func viewStat(fi fs.FileInfo, err error) statView {
	if err != nil {
		return statView{Err: errKind(err)}
	}
	v := statView{Name: fi.Name(), Mode: fi.Mode(), MTime: fi.ModTime().UnixNano()}
	if !fi.IsDir() {
		v.Size = fi.Size()
	}
	return v
}

func TestConsistencyWithOS(t *testing.T) {
	t.Parallel()
	fx := makefs(t, benignTree, nil)
	w := fx.w
	host := func(p string) string { return fx.ws + "/" + p } // no Clean: keep trailing slashes
	for _, p := range benignPaths {
		t.Run(p, func(t *testing.T) {
			// ReadFile: same bytes or same kind of error (reading a
			// directory is EISDIR for both).
			gotB, gotErr := w.ReadFile(p, 0)
			wantB, wantErr := os.ReadFile(host(p))
			if errKind(gotErr) != errKind(wantErr) || string(gotB) != string(wantB) {
				t.Errorf("ReadFile: got %q, %v; os: %q, %v", gotB, gotErr, wantB, wantErr)
			}
			// Stat and Lstat (os names the entry by its base name).
			// os names the workspace itself by its base name, os.Root
			// and the workspace by ".".
			osStat, osLstat := viewStat(os.Stat(host(p))), viewStat(os.Lstat(host(p)))
			if p == "." {
				osStat.Name, osLstat.Name = ".", "."
			}
			if diff := cmp.Diff(osStat, viewStat(w.Stat(p))); diff != "" {
				t.Errorf("Stat (-os +workspace):\n%s", diff)
			}
			if diff := cmp.Diff(osLstat, viewStat(w.Lstat(p))); diff != "" {
				t.Errorf("Lstat (-os +workspace):\n%s", diff)
			}
			// ReadDir: same names and types, same order.
			type ent struct {
				Name string
				Type fs.FileMode
			}
			list := func(ents []fs.DirEntry, err error) ([]ent, string) {
				var out []ent
				for _, e := range ents {
					out = append(out, ent{e.Name(), e.Type()})
				}
				return out, errKind(err)
			}
			gotE, gotK := list(w.ReadDir(p))
			wantE, wantK := list(os.ReadDir(host(p)))
			if gotK != wantK {
				t.Errorf("ReadDir error: got %s, os %s", gotK, wantK)
			}
			if diff := cmp.Diff(wantE, gotE); diff != "" {
				t.Errorf("ReadDir (-os +workspace):\n%s", diff)
			}
		})
	}
}

func TestWriteConsistencyWithOS(t *testing.T) {
	t.Parallel()
	a := makefs(t, benignTree, nil)
	b := makefs(t, benignTree, nil)
	writes := []struct {
		path string
		data string
		perm fs.FileMode
	}{
		{"README.md", "changed", 0o600}, // existing: mode kept (0644)
		{"new.txt", "new", 0o640},
		{"empty", "", 0o644},
		{"src/lib/c.go", "package lib", 0o644},
		{"docs", "x", 0o644},        // a directory
		{"README.md/x", "x", 0o644}, // under a file
		{"ünïcødé", "ü", 0o644},
		{"new/", "x", 0o644}, // a trailing slash names a directory
	}
	for _, wr := range writes {
		gotErr := a.w.WriteFile(wr.path, []byte(wr.data), wr.perm)
		wantErr := os.WriteFile(b.ws+"/"+wr.path, []byte(wr.data), wr.perm)
		if errKind(gotErr) != errKind(wantErr) {
			t.Errorf("WriteFile(%q): got %v, os %v", wr.path, gotErr, wantErr)
		}
	}
	// Both trees now hold the same names, contents and modes.
	view := func(root string) map[string]string {
		m := map[string]string{}
		must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			must(t, err)
			rel, _ := filepath.Rel(root, p)
			fi, _ := d.Info()
			v := fi.Mode().String()
			if fi.Mode().IsRegular() {
				data, _ := os.ReadFile(p)
				v += " " + string(data)
			}
			m[rel] = v
			return nil
		}))
		return m
	}
	if diff := cmp.Diff(view(b.ws), view(a.ws)); diff != "" {
		t.Errorf("trees differ after the same writes (-os +workspace):\n%s", diff)
	}
}
