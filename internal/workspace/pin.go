package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"golang.org/x/sys/unix"
)

// Pinning binds a change to the place it was approved for. A name is not
// a place: "docs/notes.yml" lands in .github/workflows when docs is a link
// to it, and docs can become one after a person approved the write. So the
// caller asks Locate, when it asks the person, where the change would land
// — following links in parent directories as the change itself will —
// shows that place, binds it into what is approved, and then changes the
// file with WriteFileAt or RemoveAt, which resolve the name again in the
// very operation that changes it and refuse with ErrMoved when it now
// leads elsewhere.

// PinnedFS is implemented by file systems that can bind a change to a
// location: *Root, and the sandbox's file system, whose worker uses a Root.
type PinnedFS interface {
	// Locate returns the real workspace-relative path a change to name
	// would touch: its parent directory's real path (links inside the
	// workspace followed; directories that do not exist yet as named)
	// and its last component, which is never followed. It applies every
	// guard of a change to that path.
	Locate(op, name string) (string, error)
	// WriteFileAt is WriteFile, refused with ErrMoved unless name still
	// leads to real.
	WriteFileAt(name, real string, data []byte, perm fs.FileMode) error
	// RemoveAt is Remove, refused with ErrMoved unless name still leads
	// to real.
	RemoveAt(name, real string) error
}

var _ PinnedFS = (*Root)(nil)

// Locate implements PinnedFS.
func (w *Root) Locate(op, name string) (string, error) {
	rel, err := w.check(op, name, true)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", &PathError{Op: op, Path: name, Err: ErrInvalid}
	}
	dir, base := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	real, err := w.locateDir(op, name, path.Clean(dir))
	if err != nil {
		return "", err
	}
	real = path.Join(real, base)
	if err := w.guardChange(op, name, real); err != nil {
		return "", err
	}
	return real, nil
}

// locateDir returns the real path of directory rel, or, when it does not
// exist, that of its nearest existing parent joined with the rest.
func (w *Root) locateDir(op, name, rel string) (string, error) {
	n, err := w.open(op, name, rel, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil {
		defer n.close()
		return n.real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || rel == "." {
		return "", err
	}
	parent, last := path.Split(rel)
	if parent == "" {
		parent = "."
	}
	p, err := w.locateDir(op, name, path.Clean(parent))
	if err != nil {
		return "", err
	}
	return path.Join(p, last), nil
}

// WriteFileAt implements PinnedFS.
func (w *Root) WriteFileAt(name, real string, data []byte, perm fs.FileMode) error {
	if real == "" {
		return &PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: no location given", ErrInvalid)}
	}
	return w.writeFile(name, real, data, perm)
}

// RemoveAt implements PinnedFS.
func (w *Root) RemoveAt(name, real string) error {
	if real == "" {
		return &PathError{Op: "delete", Path: name, Err: fmt.Errorf("%w: no location given", ErrInvalid)}
	}
	return w.remove(name, real)
}

// checkPin refuses when name does not lead to pin now.
func (w *Root) checkPin(op, name, pin string) error {
	loc, err := w.Locate(op, name)
	if err != nil {
		return err
	}
	return pinned(op, name, pin, loc)
}

// pinned refuses a change whose real location is not pin ("" pins nothing).
func pinned(op, name, pin, real string) error {
	if pin == "" || pin == real {
		return nil
	}
	return &PathError{Op: op, Path: name, Err: fmt.Errorf("%w: it leads to '%s' now, to '%s' then", ErrMoved, real, pin)}
}
