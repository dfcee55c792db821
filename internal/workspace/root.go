package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Sentinel errors; every refusal wraps one of them in a *PathError.
var (
	ErrEscapes   = errors.New("escapes the workspace")
	ErrMasked    = errors.New("is masked: it is hidden from tools")
	ErrProtected = errors.New("is protected: tools may read it but not change it")
	ErrInvalid   = errors.New("is not a valid workspace path")
	ErrTooLarge  = errors.New("is too large")
	ErrHardLink  = errors.New("has other hard links, which may lead outside the workspace")
)

// DefaultMask and DefaultProtected are always in force; configuration only adds to them.
var (
	DefaultMask = []string{
		".env", ".env.*", "**/.env", "**/.env.*",
		"**/*.pem", "**/*.key",
		"**/.ssh", "**/.ssh/**", "**/.aws", "**/.aws/**", "**/.gnupg", "**/.gnupg/**",
		"warden.toml", "warden.yaml",
	}
	DefaultProtected = []string{".git/hooks", ".git/hooks/**", ".git/config"}
)

// PathError records a refused or failed operation on a workspace path.
type PathError struct {
	Op   string // read, write, list, ...
	Path string // the path as the caller gave it
	Rule string // the mask or protected pattern that matched, if any
	Err  error
}

func (e *PathError) Error() string {
	msg := fmt.Sprintf("Path '%s' %v", e.Path, e.Err)
	if e.Rule != "" {
		msg += fmt.Sprintf(" (rule %q)", e.Rule)
	}
	return msg
}

func (e *PathError) Unwrap() error { return e.Err }

// Options adds to the built-in masks and protected paths.
type Options struct {
	Mask      []string // doublestar patterns, matched case-insensitively
	Protected []string
}

// Root is a workspace directory opened for confined access.
type Root struct {
	dir       string // absolute, symlinks resolved
	root      *os.Root
	mask      []string
	protected []string
}

var _ FS = (*Root)(nil)

// Open opens the workspace at dir.
func Open(dir string, opts *Options) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	w := &Root{dir: abs, root: r}
	w.mask = append(append([]string(nil), DefaultMask...), lower(optsMask(opts))...)
	w.protected = append(append([]string(nil), DefaultProtected...), lower(optsProtected(opts))...)
	return w, nil
}

func optsMask(o *Options) []string {
	if o == nil {
		return nil
	}
	return o.Mask
}

func optsProtected(o *Options) []string {
	if o == nil {
		return nil
	}
	return o.Protected
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// Dir returns the absolute host path of the workspace.
func (w *Root) Dir() string { return w.dir }

// Close releases the workspace.
func (w *Root) Close() error { return w.root.Close() }

// Clean checks name's syntax and returns it cleaned, slash-separated and
// relative ("." for the workspace itself).
func (w *Root) Clean(op, name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", &PathError{Op: op, Path: name, Err: ErrInvalid}
	}
	if name == "" {
		name = "."
	}
	if filepath.IsAbs(name) || strings.HasPrefix(name, "/") {
		return "", &PathError{Op: op, Path: name, Err: ErrEscapes}
	}
	c := path.Clean(filepath.ToSlash(name))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", &PathError{Op: op, Path: name, Err: ErrEscapes}
	}
	return c, nil
}

// MaskRule returns the mask pattern matching rel, if any.
func (w *Root) MaskRule(rel string) (string, bool) { return match(w.mask, rel) }

// ProtectRule returns the protected pattern matching rel, if any.
func (w *Root) ProtectRule(rel string) (string, bool) { return match(w.protected, rel) }

func match(patterns []string, rel string) (string, bool) {
	l := strings.ToLower(rel)
	for _, p := range patterns {
		if ok, _ := doublestar.Match(p, l); ok {
			return p, true
		}
		// A pattern that names a directory covers everything below it.
		for d := path.Dir(l); d != "." && d != "/"; d = path.Dir(d) {
			if ok, _ := doublestar.Match(p, d); ok {
				return p, true
			}
		}
	}
	return "", false
}

func (w *Root) check(op, name string, write bool) (string, error) {
	rel, err := w.Clean(op, name)
	if err != nil {
		return "", err
	}
	if rule, ok := w.MaskRule(rel); ok {
		return "", &PathError{Op: op, Path: name, Rule: rule, Err: ErrMasked}
	}
	if write {
		if rule, ok := w.ProtectRule(rel); ok {
			return "", &PathError{Op: op, Path: name, Rule: rule, Err: ErrProtected}
		}
	}
	return rel, nil
}

func (w *Root) wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *PathError
	if errors.As(err, &pe) {
		return err
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		return &PathError{Op: op, Path: name, Err: ErrEscapes}
	}
	var ospe *fs.PathError
	if errors.As(err, &ospe) {
		return &PathError{Op: op, Path: name, Err: ospe.Err}
	}
	return &PathError{Op: op, Path: name, Err: err}
}

// ReadFile implements FS.
func (w *Root) ReadFile(name string, limit int64) ([]byte, error) {
	rc, err := w.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f := rc.(*os.File)
	st, err := f.Stat()
	if err != nil {
		return nil, w.wrap("read", name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, &PathError{Op: "read", Path: name, Err: errors.New("is not a regular file")}
	}
	if limit > 0 && st.Size() > limit {
		return nil, &PathError{Op: "read", Path: name, Err: fmt.Errorf("%w (%d bytes, limit %d)", ErrTooLarge, st.Size(), limit)}
	}
	r := io.Reader(f)
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, w.wrap("read", name, err)
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, &PathError{Op: "read", Path: name, Err: fmt.Errorf("%w (limit %d bytes)", ErrTooLarge, limit)}
	}
	return data, nil
}

// Open implements FS.
func (w *Root) Open(name string) (io.ReadCloser, error) {
	rel, err := w.check("read", name, false)
	if err != nil {
		return nil, err
	}
	f, err := w.root.Open(rel)
	if err != nil {
		return nil, w.wrap("read", name, err)
	}
	if err := w.checkOpened("read", name, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkOpened applies the masks to where an opened file really is, so that a
// symbolic link inside the workspace cannot lead to a masked file.
func (w *Root) checkOpened(op, name string, f *os.File) error {
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return w.wrap(op, name, err)
	}
	rel, err := filepath.Rel(w.dir, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return &PathError{Op: op, Path: name, Err: ErrEscapes}
	}
	rel = filepath.ToSlash(rel)
	if rule, ok := w.MaskRule(rel); ok {
		return &PathError{Op: op, Path: name, Rule: rule, Err: ErrMasked}
	}
	st, err := f.Stat()
	if err != nil {
		return w.wrap(op, name, err)
	}
	if st.Mode().IsRegular() && linkCount(st) > 1 {
		return &PathError{Op: op, Path: name, Err: ErrHardLink}
	}
	return nil
}

// Stat implements FS.
func (w *Root) Stat(name string) (fs.FileInfo, error) {
	rel, err := w.check("stat", name, false)
	if err != nil {
		return nil, err
	}
	st, err := w.root.Stat(rel)
	return st, w.wrap("stat", name, err)
}

// ReadDir implements FS.
func (w *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	rel, err := w.check("list", name, false)
	if err != nil {
		return nil, err
	}
	f, err := w.root.Open(rel)
	if err != nil {
		return nil, w.wrap("list", name, err)
	}
	defer f.Close()
	if err := w.checkOpened("list", name, f); err != nil {
		return nil, err
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, w.wrap("list", name, err)
	}
	out := ents[:0]
	for _, e := range ents {
		if _, masked := w.MaskRule(path.Join(rel, e.Name())); !masked {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out, nil
}

// WriteFile implements FS.
func (w *Root) WriteFile(name string, data []byte, perm fs.FileMode) error {
	rel, err := w.check("write", name, true)
	if err != nil {
		return err
	}
	if rel == "." {
		return &PathError{Op: "write", Path: name, Err: errors.New("is the workspace directory")}
	}
	dir, base := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	if err := w.root.MkdirAll(dir, 0o755); err != nil {
		return w.wrap("write", name, err)
	}
	d, err := w.root.OpenRoot(dir)
	if err != nil {
		return w.wrap("write", name, err)
	}
	defer d.Close()
	if st, err := d.Lstat(base); err == nil {
		if st.IsDir() {
			return &PathError{Op: "write", Path: name, Err: errors.New("is a directory")}
		}
		if st.Mode().IsRegular() {
			perm = st.Mode().Perm()
		}
	}
	return w.wrap("write", name, atomicWrite(d, base, data, perm))
}

// Remove implements FS.
func (w *Root) Remove(name string) error {
	rel, err := w.check("delete", name, true)
	if err != nil {
		return err
	}
	if rel == "." {
		return &PathError{Op: "delete", Path: name, Err: errors.New("is the workspace directory")}
	}
	return w.wrap("delete", name, w.root.Remove(rel))
}

// MkdirAll implements FS.
func (w *Root) MkdirAll(name string, perm fs.FileMode) error {
	rel, err := w.check("mkdir", name, true)
	if err != nil {
		return err
	}
	return w.wrap("mkdir", name, w.root.MkdirAll(rel, perm))
}

// Walk implements FS.
func (w *Root) Walk(name string, fn fs.WalkDirFunc) error {
	rel, err := w.check("list", name, false)
	if err != nil {
		return err
	}
	fsys := w.root.FS()
	return fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
		if p != rel {
			if _, masked := w.MaskRule(p); masked {
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		return fn(p, d, err)
	})
}
