package workspace

import (
	"errors"
	"fmt"
	"syscall"
)

// Sentinel errors; every refusal wraps one of them in a *PathError.
var (
	ErrEscapes   = errors.New("escapes the workspace")
	ErrMasked    = errors.New("is masked: it is hidden from tools")
	ErrProtected = errors.New("is protected: tools may read it but not change it")
	ErrInvalid   = errors.New("is not a valid workspace path")
	ErrTooLarge  = errors.New("is too large")
	ErrHardLink  = errors.New("has other hard links, which may lead outside the workspace")
	// ErrSymlink refuses a write whose last component is a symbolic link:
	// tools never write through links.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrNotRegular refuses to read a device, pipe or socket as a file.
	ErrNotRegular = errors.New("is not a regular file")
	// ErrMoved refuses a change pinned to a location (WriteFileAt,
	// RemoveAt) when the name now leads somewhere else: a directory on
	// the way was replaced by a link, or a link changed.
	ErrMoved = errors.New("leads somewhere else than when the change was approved")
)

// PathError records a refused or failed operation on a workspace path.
// Err is one of the sentinels above (possibly wrapped with detail) or the
// system's error number, so errors.Is(err, fs.ErrNotExist) keeps working.
type PathError struct {
	Op   string // read, write, list, ...
	Path string // the path as the caller gave it
	Rule string // the mask or protected pattern that matched, if any
	Err  error
}

// Error reads as a sentence a model can act on, for example
// "Path '../../etc/passwd' escapes the workspace".
func (e *PathError) Error() string {
	msg := fmt.Sprintf("Path '%s' %s", e.Path, describe(e.Op, e.Err))
	if e.Rule != "" {
		msg += fmt.Sprintf(" (rule %q)", e.Rule)
	}
	return msg
}

func (e *PathError) Unwrap() error { return e.Err }

// describe turns a system error into the end of a sentence that starts with
// "Path 'x' ...".
func describe(op string, err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	switch errno {
	case syscall.ENOENT:
		return "does not exist"
	case syscall.EEXIST:
		return "already exists"
	case syscall.ENOTDIR:
		return "is not a directory, or one of its parents is not"
	case syscall.EISDIR:
		return "is a directory"
	case syscall.ENOTEMPTY:
		return "is a directory that is not empty"
	case syscall.EACCES, syscall.EPERM:
		return "cannot be accessed: permission denied"
	case syscall.ELOOP:
		return "has too many levels of symbolic links"
	case syscall.ENAMETOOLONG:
		return "is too long"
	case syscall.EROFS:
		return "is on a read-only file system"
	case syscall.ENOSPC, syscall.EDQUOT:
		return "cannot be written: no space left on the device"
	case syscall.EXDEV:
		return "cannot be moved across file systems"
	case syscall.EINVAL:
		if op == "rename" {
			return "cannot be moved into itself"
		}
	}
	return fmt.Sprintf("failed to %s: %v", op, errno.Error())
}
