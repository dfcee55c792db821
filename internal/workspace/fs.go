package workspace

import (
	"io"
	"io/fs"
)

// FS is the file access every tool goes through. *Root implements it on the
// host; the sandbox package implements it by asking the jailed worker, which
// itself uses a *Root inside the jail. Names are workspace-relative and
// slash-separated; every method refuses escapes, masked paths and (for
// writes) protected paths with a *PathError wrapping ErrEscapes, ErrMasked,
// ErrProtected or ErrInvalid; other failures are *PathError values
// wrapping the system's error, so errors.Is(err, fs.ErrNotExist) works.
type FS interface {
	// ReadFile returns the contents of the regular file name. A file larger
	// than limit bytes (when limit > 0) is an error wrapping ErrTooLarge.
	ReadFile(name string, limit int64) ([]byte, error)
	// Open opens the regular file name for reading. The result also
	// implements fs.File (Stat), io.ReaderAt and io.Seeker.
	Open(name string) (io.ReadCloser, error)
	// Stat follows symbolic links that stay inside the workspace.
	Stat(name string) (fs.FileInfo, error)
	// Lstat is Stat without following a symbolic link in the last
	// component.
	Lstat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory; masked entries are left out.
	ReadDir(name string) ([]fs.DirEntry, error)
	// WriteFile replaces name atomically (temporary file in the same
	// directory, then rename), creating missing parent directories. An
	// existing file keeps its permission bits; a new one gets perm less
	// the umask. A symbolic link in the last component is refused.
	WriteFile(name string, data []byte, perm fs.FileMode) error
	// Remove deletes the file or empty directory name.
	Remove(name string) error
	// MkdirAll creates name and any missing parents.
	MkdirAll(name string, perm fs.FileMode) error
	// Rename moves oldname to newname, replacing a file there. Both names,
	// and for a directory everything below it, must be free of masks and
	// protected paths.
	Rename(oldname, newname string) error
	// DirPath returns a host path to directory name for use as a command's
	// working directory (see the package documentation for its race).
	DirPath(name string) (string, error)
	// Walk walks the tree under name in lexical order without following
	// symbolic links (except one naming the start); masked entries are
	// never visited.
	Walk(name string, fn fs.WalkDirFunc) error
}
