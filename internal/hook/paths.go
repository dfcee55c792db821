package hook

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symbolic links followed resolving one path, as the
// kernel's own limit does (ELOOP).
const maxLinks = 40

// errLoop means a path's symbolic links do not end.
var errLoop = errors.New("too many levels of symbolic links")

// resolve returns where the absolute, clean path p really leads: every
// symbolic link among its existing components is followed (relative links
// from their own directory), and the part that does not exist yet is kept
// as written. What the host opens is what is then judged; a link inside the
// workspace that points out of it, or at a masked file, is judged as its
// target.
func resolve(p string) (string, error) {
	links := 0
	done := "/"
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		st, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR) {
			// Not there (yet): the rest is created as written.
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return "", &fs.PathError{Op: "resolve", Path: p, Err: errLoop}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done, nil
}

// mapper turns the paths a host names into what warden's guards judge.
type mapper struct {
	ws  string // the workspace, absolute, links resolved
	cwd string // the host's working directory (absolute)
	// masked reports whether a workspace-relative name is refused by a
	// mask (or, for write, a protected path), as the workspace names it.
	refused func(rel string, write bool) bool
}

// path returns the name the guards judge for a path the host names:
// relative to the workspace when it leads inside it, else the absolute
// place it leads to (judged, and refused, as outside). A relative path is
// taken from the host's working directory. When the name as written is
// masked or protected, that name is kept even if it is a link elsewhere:
// the user masked the name.
func (m *mapper) path(p string, write bool) (string, error) {
	if p == "" {
		return "", nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return p, nil // the guard refuses it, naming it
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(m.cwd, abs)
	}
	abs = filepath.Clean(abs)
	if rel, ok := m.inside(abs); ok && m.refused != nil && m.refused(rel, write) {
		return rel, nil
	}
	real, err := resolve(abs)
	if err != nil {
		return "", err
	}
	if rel, ok := m.inside(real); ok {
		return rel, nil
	}
	return real, nil
}

// inside returns abs relative to the workspace, slash-separated, when it
// lies in it ("." for the workspace itself).
func (m *mapper) inside(abs string) (string, bool) {
	rel, err := filepath.Rel(m.ws, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
