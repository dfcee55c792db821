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
)

func TestPutFile(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"d/", "old=old"}, nil)
	for _, durable := range []bool{true, false} {
		must(t, fx.w.PutFile("d/new", strings.NewReader("new"), 0o751|fs.ModeSetuid, durable))
		must(t, fx.w.PutFile("old", strings.NewReader("replaced"), 0o600, durable))
	}
	must(t, fx.w.Sync())
	for name, want := range map[string]struct {
		data string
		perm fs.FileMode
	}{"d/new": {"new", 0o751}, "old": {"replaced", 0o600}} {
		st, err := os.Lstat(filepath.Join(fx.ws, name))
		must(t, err)
		if st.Mode() != want.perm {
			t.Errorf("%s: mode %v, want exactly %v (no umask, no setuid)", name, st.Mode(), want.perm)
		}
		if b, _ := os.ReadFile(filepath.Join(fx.ws, name)); string(b) != want.data {
			t.Errorf("%s = %q", name, b)
		}
	}
	// A failing reader leaves the old content and no temporary file.
	err := fx.w.PutFile("old", io.MultiReader(strings.NewReader("partial"), errReader{}), 0o644, false)
	if err == nil {
		t.Fatal("PutFile with a failing reader succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(fx.ws, "old")); string(b) != "replaced" {
		t.Errorf("old = %q after a failed put", b)
	}
	ents, _ := os.ReadDir(fx.ws)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".warden-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("source broke") }

// The restore operations go through the same guards as WriteFile: nothing
// outside, nothing masked or protected, no write through a final link.
func TestPutAttacks(t *testing.T) {
	t.Parallel()
	lines := []string{"d/", "file", "out => $OUT", "outfile => $OUT/secret", "in => d", ".git/config", ".git/hooks/"}
	ops := map[string]func(w *Root, p string) error{
		"put":     func(w *Root, p string) error { return w.PutFile(p, strings.NewReader("x"), 0o644, true) },
		"symlink": func(w *Root, p string) error { return w.Symlink("/etc/passwd", p) },
		"chmod":   func(w *Root, p string) error { return w.Chmod(p, 0o777) },
	}
	for _, tc := range []struct {
		path string
		want error
		ops  string
	}{
		{"../x", ErrEscapes, "put symlink chmod"},
		{"/tmp/x", ErrEscapes, "put symlink chmod"},
		{"out/secret", ErrEscapes, "put symlink chmod"},
		{"outfile", ErrSymlink, "put chmod"},
		{".env", ErrMasked, "put symlink chmod"},
		{"d/.ENV", ErrMasked, "put symlink chmod"},
		{"in/key.pem", ErrMasked, "put symlink chmod"},
		{".git/config", ErrProtected, "put symlink chmod"},
		{".git/hooks/pre-commit", ErrProtected, "put symlink"},
		{".", ErrInvalid, "put symlink chmod"},
	} {
		for _, op := range strings.Fields(tc.ops) {
			t.Run(op+"/"+tc.path, func(t *testing.T) {
				t.Parallel()
				fx := makefs(t, lines, nil)
				before := snapshot(t, fx.out)
				st0, _ := os.Stat(filepath.Join(fx.out, "secret"))
				err := ops[op](fx.w, strings.ReplaceAll(tc.path, "$OUT", fx.out))
				if !errors.Is(err, tc.want) {
					t.Errorf("%s(%q) = %v, want %v", op, tc.path, err, tc.want)
				}
				if after := snapshot(t, fx.out); !equalMaps(before, after) {
					t.Errorf("%s(%q) changed the outside", op, tc.path)
				}
				if st1, _ := os.Stat(filepath.Join(fx.out, "secret")); st1.Mode() != st0.Mode() {
					t.Errorf("%s(%q) changed the mode of an outside file", op, tc.path)
				}
			})
		}
	}
}

func TestSymlinkAndChmod(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"d/", "f", "l => f"}, nil)
	must(t, fx.w.Symlink("../../somewhere", "f")) // replaces a file
	must(t, fx.w.Symlink("d", "l"))               // replaces a link
	for name, want := range map[string]string{"f": "../../somewhere", "l": "d"} {
		got, err := os.Readlink(filepath.Join(fx.ws, name))
		if err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
	if err := fx.w.Symlink("x", "d"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Symlink over a directory = %v, want EISDIR", err)
	}
	must(t, fx.w.Chmod("d", 0o500))
	if st, _ := os.Lstat(filepath.Join(fx.ws, "d")); st.Mode().Perm() != 0o500 {
		t.Errorf("d mode %v", st.Mode())
	}
	if err := fx.w.Chmod("l", 0o700); !errors.Is(err, ErrSymlink) {
		t.Errorf("Chmod of a link = %v, want ErrSymlink", err)
	}
	if err := fx.w.PutFile("l", strings.NewReader("x"), 0o644, true); !errors.Is(err, ErrSymlink) {
		t.Errorf("PutFile over a link = %v, want ErrSymlink", err)
	}
	if err := fx.w.PutFile("d", strings.NewReader("x"), 0o644, true); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("PutFile over a directory = %v, want EISDIR", err)
	}
}

func TestOpenDir(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"d/a", ".ssh/id", "out => $OUT"}, nil)
	f, err := fx.w.OpenDir("d")
	must(t, err)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil || len(names) != 1 || names[0] != "a" {
		t.Errorf("OpenDir(d) lists %v, %v", names, err)
	}
	for p, want := range map[string]error{".ssh": ErrMasked, "out": ErrEscapes, "../": ErrEscapes} {
		if _, err := fx.w.OpenDir(p); !errors.Is(err, want) {
			t.Errorf("OpenDir(%q) = %v, want %v", p, err, want)
		}
	}
}

// MaskedEntry agrees with MaskRule for every entry of an unmasked directory.
func TestMaskedEntryAgrees(t *testing.T) {
	t.Parallel()
	fx := makefs(t, nil, &Options{Mask: []string{"secrets/*.txt", "**/private", "build/out.bin", "*.log"}})
	for _, rel := range []string{
		"a", ".env", ".env.local", "src/.env", "x.pem", "d/y.KEY", ".ssh", "a/.aws", "warden.toml", "src/warden.toml",
		"secrets/a.txt", "secrets/a.md", "x/private", "private", "build/out.bin", "build/out", "a.log", "d/a.log", "README",
	} {
		r1, ok1 := fx.w.MaskRule(rel)
		r2, ok2 := fx.w.MaskedEntry(rel)
		if ok1 != ok2 || r1 != r2 {
			t.Errorf("%s: MaskRule = %q %v, MaskedEntry = %q %v", rel, r1, ok1, r2, ok2)
		}
	}
}
