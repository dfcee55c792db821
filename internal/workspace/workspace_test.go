package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"plain", "l => .git/config", ".git/config", "docs/readme", "r => docs/readme"}, nil)
	w := fx.w
	tests := []struct {
		err  error
		want string
	}{
		{err: second(w.ReadFile("../../etc/passwd", 0)), want: "Path '../../etc/passwd' escapes the workspace"},
		{err: second(w.ReadFile("/etc/passwd", 0)), want: "Path '/etc/passwd' escapes the workspace"},
		{err: second(w.ReadFile(".env", 0)), want: `Path '.env' is masked: it is hidden from tools (rule ".env")`},
		{err: w.WriteFile(".git/config", nil, 0o644), want: `Path '.git/config' is protected: tools may read it but not change it (rule "**/.git/config")`},
		{err: second(w.ReadFile("nothere", 0)), want: "Path 'nothere' does not exist"},
		{err: second(w.ReadFile("docs", 0)), want: "Path 'docs' is a directory"},
		{err: second(w.ReadFile("a\x00b", 0)), want: "Path 'a\x00b' is not a valid workspace path"},
		{err: second(w.ReadFile("plain", 3)), want: "Path 'plain' is too large (16 bytes, limit 3)"},
		{err: w.WriteFile("r", nil, 0o644), want: "Path 'r' is a symbolic link to 'docs/readme'; write to that path instead"},
		{err: w.WriteFile("l", nil, 0o644), want: "Path 'l' is a symbolic link; tools do not write through symbolic links"},
		{err: w.Remove("docs"), want: "Path 'docs' is a directory that is not empty"},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("no error, want %q", tt.want)
			continue
		}
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestMaskedEntriesAreInvisible(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{
		"plain", ".env=$SECRET", ".ENV.prod=$SECRET", "id_rsa.pem=$SECRET", ".ssh/config=$SECRET",
		"src/main.go", "src/.env=$SECRET", "src/deep/.aws/credentials=$SECRET", "src/deep/ok",
		"secrets/a.txt=$SECRET", "secrets/keep.md",
	}, &Options{Mask: []string{"SECRETS/*.txt"}})
	w := fx.w
	names := func(ents []fs.DirEntry) []string {
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	ents, err := w.ReadDir(".")
	must(t, err)
	if diff := cmp.Diff([]string{"plain", "secrets", "src"}, names(ents)); diff != "" {
		t.Errorf("ReadDir(.) (-want +got):\n%s", diff)
	}
	ents, err = w.ReadDir("secrets")
	must(t, err)
	if diff := cmp.Diff([]string{"keep.md"}, names(ents)); diff != "" {
		t.Errorf("ReadDir(secrets) (-want +got):\n%s", diff)
	}
	var walked []string
	must(t, w.Walk(".", func(p string, d fs.DirEntry, err error) error {
		walked = append(walked, p)
		return err
	}))
	want := []string{".", "plain", "secrets", "secrets/keep.md", "src", "src/deep", "src/deep/ok", "src/main.go"}
	if diff := cmp.Diff(want, walked); diff != "" {
		t.Errorf("Walk (-want +got):\n%s", diff)
	}
	// A link to the masked directory lists nothing either.
	must(t, os.Symlink("secrets", filepath.Join(fx.ws, "alias")))
	if _, err := w.ReadFile("alias/a.txt", 0); !errors.Is(err, ErrMasked) {
		t.Errorf("ReadFile(alias/a.txt) = %v, want ErrMasked", err)
	}
	ents, err = w.ReadDir("alias")
	must(t, err)
	if diff := cmp.Diff([]string{"keep.md"}, names(ents)); diff != "" {
		t.Errorf("ReadDir(alias) (-want +got):\n%s", diff)
	}
}

func TestLinksInsideAreFollowed(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"docs/readme=hello", "r => docs/readme", "d => docs", "c => d"}, nil)
	w := fx.w
	for _, p := range []string{"r", "d/readme", "c/readme"} {
		b, err := w.ReadFile(p, 0)
		if err != nil || string(b) != "hello" {
			t.Errorf("ReadFile(%q) = %q, %v", p, b, err)
		}
	}
	fi, err := w.Lstat("r")
	must(t, err)
	if fi.Mode()&fs.ModeSymlink == 0 || fi.Name() != "r" {
		t.Errorf("Lstat(r) = %v %v, want a symlink named r", fi.Name(), fi.Mode())
	}
	fi, err = w.Stat("r")
	must(t, err)
	if !fi.Mode().IsRegular() || fi.Size() != 5 {
		t.Errorf("Stat(r) = %v size %d", fi.Mode(), fi.Size())
	}
	// A write through a parent link lands at the real place.
	must(t, w.WriteFile("c/new", []byte("x"), 0o644))
	if b, err := os.ReadFile(filepath.Join(fx.ws, "docs/new")); err != nil || string(b) != "x" {
		t.Errorf("docs/new = %q, %v", b, err)
	}
	// DirPath gives the real path, without links.
	d, err := w.DirPath("c")
	must(t, err)
	if d != filepath.Join(w.Dir(), "docs") {
		t.Errorf("DirPath(c) = %q, want %q", d, filepath.Join(w.Dir(), "docs"))
	}
	if _, err := w.DirPath("r"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("DirPath(r) = %v, want ENOTDIR", err)
	}
	// Remove and Rename act on the link, not its target.
	must(t, w.Rename("r", "r2"))
	must(t, w.Remove("r2"))
	if b, err := os.ReadFile(filepath.Join(fx.ws, "docs/readme")); err != nil || string(b) != "hello" {
		t.Errorf("docs/readme after removing a link to it = %q, %v", b, err)
	}
}

func TestHardLinks(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"h ==> outside/secret", "a", "b ==> ws/a"}, nil)
	w := fx.w
	for _, p := range []string{"h", "a", "b"} {
		if _, err := w.ReadFile(p, 0); !errors.Is(err, ErrHardLink) {
			t.Errorf("ReadFile(%q) = %v, want ErrHardLink", p, err)
		}
	}
	// A write replaces the entry: the other name keeps the old content.
	must(t, w.WriteFile("h", []byte("new"), 0o644))
	if b, _ := os.ReadFile(filepath.Join(fx.out, "secret")); string(b) != secret {
		t.Errorf("outside secret = %q after a write to its hard link", b)
	}
	if b, err := w.ReadFile("h", 0); err != nil || string(b) != "new" {
		t.Errorf("ReadFile(h) after write = %q, %v", b, err)
	}
	must(t, w.WriteFile("a", []byte("A2"), 0o644))
	if b, _ := os.ReadFile(filepath.Join(fx.ws, "b")); string(b) != "content of a" {
		t.Errorf("b = %q after a write to a", b)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"exec.sh", "dir/"}, nil)
	w := fx.w
	must(t, os.Chmod(filepath.Join(fx.ws, "exec.sh"), 0o750))
	must(t, w.WriteFile("exec.sh", []byte("#!/bin/sh\n"), 0o644))
	if fi, _ := os.Stat(filepath.Join(fx.ws, "exec.sh")); fi.Mode().Perm() != 0o750 {
		t.Errorf("mode after rewrite = %v, want 0750 kept", fi.Mode())
	}
	must(t, w.WriteFile("a/b/c/new.txt", []byte("x"), 0o600))
	if fi, _ := os.Stat(filepath.Join(fx.ws, "a/b/c/new.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode = %v, want 0600", fi.Mode())
	}
	if err := w.WriteFile("dir", nil, 0o644); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("WriteFile(dir) = %v, want EISDIR", err)
	}
	if err := w.WriteFile("exec.sh/x", nil, 0o644); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("WriteFile(exec.sh/x) = %v, want ENOTDIR", err)
	}
	if err := w.WriteFile(".", nil, 0o644); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("WriteFile(.) = %v, want EISDIR", err)
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(fx.ws)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".warden-") {
			t.Errorf("stray temporary file %s", e.Name())
		}
	}
	// A mask on a directory that does not exist yet stops the mkdir too.
	if err := w.WriteFile("x/.ssh/authorized_keys", nil, 0o644); !errors.Is(err, ErrMasked) {
		t.Errorf("WriteFile into .ssh = %v, want ErrMasked", err)
	}
	if _, err := os.Lstat(filepath.Join(fx.ws, "x")); err == nil {
		t.Errorf("x was created by a refused write")
	}
}

func TestRename(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"a", "tree/x", "tree/y/z", "sub/"}, &Options{Protected: []string{"frozen/**"}})
	w := fx.w
	must(t, w.Rename("a", "sub/a"))
	must(t, w.Rename("tree", "sub/tree"))
	if b, err := w.ReadFile("sub/tree/y/z", 0); err != nil || string(b) != "content of tree/y/z" {
		t.Errorf("after rename: %q, %v", b, err)
	}
	if err := w.Rename("sub/tree", "frozen"); !errors.Is(err, ErrProtected) {
		t.Errorf("Rename into a protected tree = %v, want ErrProtected", err)
	}
	if err := w.Rename("sub/tree", "x/.ssh"); !errors.Is(err, ErrMasked) {
		t.Errorf("Rename onto a masked name = %v, want ErrMasked", err)
	}
	if err := w.Rename("sub/tree", "nodir/tree"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Rename into a missing dir = %v, want ErrNotExist", err)
	}
	if err := w.Rename("sub", "sub/inner"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Rename into itself = %v, want EINVAL", err)
	}
}

func TestMkdirAllAndRemove(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"f", "d => sub", "sub/"}, nil)
	w := fx.w
	must(t, w.MkdirAll("a/b/c", 0o755))
	must(t, w.MkdirAll("a/b/c", 0o755))
	must(t, w.MkdirAll("d", 0o755)) // a link to a directory inside is a directory
	must(t, w.MkdirAll("d/x", 0o755))
	if fi, err := os.Stat(filepath.Join(fx.ws, "sub/x")); err != nil || !fi.IsDir() {
		t.Errorf("sub/x = %v, %v", fi, err)
	}
	if err := w.MkdirAll("f", 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll(f) = %v, want ENOTDIR", err)
	}
	if err := w.MkdirAll("f/x", 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll(f/x) = %v, want ENOTDIR", err)
	}
	if err := w.Remove("a"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("Remove(a) = %v, want ENOTEMPTY", err)
	}
	must(t, w.Remove("a/b/c"))
	must(t, w.Remove("f"))
	if err := w.Remove("."); !errors.Is(err, ErrInvalid) {
		t.Errorf("Remove(.) = %v, want ErrInvalid", err)
	}
}

func TestWalkSemantics(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"a/1", "a/2", "b/skip/x", "b/y", "c", "l => a", "out => ../outside"}, nil)
	w := fx.w
	var got []string
	must(t, w.Walk(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		got = append(got, p+":"+d.Type().String())
		if p == "b/skip" {
			return fs.SkipDir
		}
		if p == "a/1" {
			return fs.SkipDir // skips the rest of a
		}
		return nil
	}))
	want := []string{".:d---------", "a:d---------", "a/1:----------", "b:d---------", "b/skip:d---------",
		"b/y:----------", "c:----------", "l:L---------", "out:L---------"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Walk (-want +got):\n%s", diff)
	}
	// The start may be a link inside; paths keep the name given.
	got = nil
	must(t, w.Walk("l", func(p string, d fs.DirEntry, err error) error {
		got = append(got, p)
		return err
	}))
	if diff := cmp.Diff([]string{"l", "l/1", "l/2"}, got); diff != "" {
		t.Errorf("Walk(l) (-want +got):\n%s", diff)
	}
	// A start outside is reported to fn and returned.
	err := w.Walk("out", func(p string, d fs.DirEntry, err error) error { return err })
	if !errors.Is(err, ErrEscapes) {
		t.Errorf("Walk(out) = %v, want ErrEscapes", err)
	}
	// SkipAll stops at once.
	n := 0
	must(t, w.Walk(".", func(string, fs.DirEntry, error) error { n++; return fs.SkipAll }))
	if n != 1 {
		t.Errorf("SkipAll: fn called %d times", n)
	}
	// Info is confined and describes the entry itself.
	must(t, w.Walk(".", func(p string, d fs.DirEntry, err error) error {
		if p == "out" {
			fi, err := d.Info()
			if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("Info(out) = %v, %v", fi, err)
			}
		}
		return nil
	}))
}

func TestOpenNeedsADirectory(t *testing.T) {
	t.Parallel()
	if _, err := Open(filepath.Join(t.TempDir(), "nothere"), nil); err == nil {
		t.Error("Open(missing) succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(f, nil, 0o644))
	if _, err := Open(f, nil); err == nil {
		t.Error("Open(file) succeeded")
	}
	if _, err := Open(t.TempDir(), &Options{Mask: []string{"[unclosed"}}); err == nil {
		t.Error("Open with a bad pattern succeeded")
	}
}

func TestSpecialFiles(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"plain"}, nil)
	must(t, syscall.Mkfifo(filepath.Join(fx.ws, "fifo"), 0o644))
	// A FIFO must neither block the read nor be read.
	if _, err := fx.w.ReadFile("fifo", 0); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(fifo) = %v, want ErrNotRegular", err)
	}
	if err := fx.w.WriteFile("fifo", nil, 0o644); !errors.Is(err, ErrNotRegular) {
		t.Errorf("WriteFile(fifo) = %v, want ErrNotRegular", err)
	}
}

func TestOpenIsReadOnly(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"dir/f=hello"}, nil)
	rc, err := fx.w.Open("dir/f")
	must(t, err)
	defer rc.Close()
	f, ok := rc.(fs.File)
	if !ok {
		t.Fatalf("Open returned %T, not an fs.File", rc)
	}
	fi, err := f.Stat()
	must(t, err)
	if fi.Name() != "f" || fi.Size() != 5 || !fi.Mode().IsRegular() {
		t.Errorf("Stat = %q %d %v", fi.Name(), fi.Size(), fi.Mode())
	}
	if _, ok := rc.(interface{ Write([]byte) (int, error) }); ok {
		t.Errorf("Open's result can be written")
	}
	if _, ok := rc.(interface{ Chmod(fs.FileMode) error }); ok {
		t.Errorf("Open's result can be chmodded")
	}
	buf := make([]byte, 3)
	if n, err := rc.(interface {
		ReadAt([]byte, int64) (int, error)
	}).ReadAt(buf, 2); err != nil || string(buf[:n]) != "llo" {
		t.Errorf("ReadAt = %q, %v", buf[:n], err)
	}
}

func TestOpenedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rc, err := w.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	f := rc.(interface {
		io.ReadCloser
		io.ReaderAt
		io.Seeker
		Stat() (fs.FileInfo, error)
	})
	b := make([]byte, 4)
	if n, err := f.ReadAt(b, 6); n != 4 || err != nil || string(b) != "6789" {
		t.Fatalf("ReadAt = %d %v %q", n, err, b)
	}
	if n, err := f.ReadAt(b, 8); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt past the end = %d %v", n, err)
	}
	if _, err := f.Seek(3, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(f)
	if err != nil || string(rest) != "3456789" {
		t.Fatalf("ReadAll after Seek = %q %v", rest, err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 10 || st.Name() != "f" {
		t.Fatalf("Stat = %v %v", st, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
	if _, err := f.Read(b); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close = %v", err)
	}
}
