package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The operations in this file restore a recorded state (warden undo): they
// set exact permission bits, stream content, recreate symbolic links and
// let the caller defer durability to one Sync. They apply the same guards as
// WriteFile: name checks, masks and protected paths on the name and on the
// real location of its parent, confined lookups, and no write through a
// symbolic link in the last component.

// PutFile replaces name with the contents of r and exactly the permission
// bits perm (setuid, setgid and sticky are dropped), atomically: a new
// temporary file in the same directory is renamed over the name, so a
// reader or a crash sees the old file or the new one, never half. The
// parent directory must exist. A symbolic link or directory at name is
// refused (ErrSymlink, EISDIR); remove it first. With durable, the file and
// the rename are synced before PutFile returns; without, the caller calls
// Sync before relying on them. An error from r aborts the write and leaves
// the old file in place.
func (w *Root) PutFile(name string, r io.Reader, perm fs.FileMode, durable bool) error {
	const op = "write"
	d, real, err := w.entryParent(op, name)
	if err != nil {
		return err
	}
	defer d.close()
	base := path.Base(real)
	var st unix.Stat_t
	switch err := unix.Fstatat(d.fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch m := fileMode(st.Mode); {
		case m.IsDir():
			return &PathError{Op: op, Path: name, Err: syscall.EISDIR}
		case m&fs.ModeSymlink != 0:
			return &PathError{Op: op, Path: name, Err: fmt.Errorf("%w; remove it before restoring a file there", ErrSymlink)}
		}
	case err != unix.ENOENT:
		return &PathError{Op: op, Path: name, Err: err}
	}
	if err := atomicCopy(d.fd, base, r, perm.Perm(), durable); err != nil {
		return &PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// Symlink makes name a symbolic link to target, replacing a file or link
// already there atomically (a directory is refused). Like os.Root.Symlink it
// does not validate target: the link is created as recorded and is never
// followed here; later lookups through it are confined as always.
func (w *Root) Symlink(target, name string) error {
	const op = "symlink"
	if target == "" || strings.IndexByte(target, 0) >= 0 || len(target) > maxName {
		return &PathError{Op: op, Path: name, Err: fmt.Errorf("%w: bad link target", ErrInvalid)}
	}
	d, real, err := w.entryParent(op, name)
	if err != nil {
		return err
	}
	defer d.close()
	base := path.Base(real)
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && fileMode(st.Mode).IsDir() {
		return &PathError{Op: op, Path: name, Err: syscall.EISDIR}
	}
	tmp := tempName()
	if err := unix.Symlinkat(target, d.fd, tmp); err != nil {
		return &PathError{Op: op, Path: name, Err: err}
	}
	if err := unix.Renameat(d.fd, tmp, d.fd, base); err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return &PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// Chmod sets the permission bits of the file or directory name to exactly
// perm (setuid, setgid and sticky are dropped). It never follows a symbolic
// link in the last component (ErrSymlink): the change applies to the entry
// name names, which the guards checked.
func (w *Root) Chmod(name string, perm fs.FileMode) error {
	const op = "chmod"
	d, real, err := w.entryParent(op, name)
	if err != nil {
		return err
	}
	defer d.close()
	fd, err := unix.Openat(d.fd, path.Base(real), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &PathError{Op: op, Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &PathError{Op: op, Path: name, Err: err}
	}
	if fileMode(st.Mode)&fs.ModeSymlink != 0 {
		return &PathError{Op: op, Path: name, Err: ErrSymlink}
	}
	// An O_PATH descriptor cannot be fchmod'ed; its /proc link names the
	// very inode opened, so chmod through it follows nothing further.
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(perm.Perm())); err != nil {
		return &PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// Sync makes every change written in the workspace's file system durable
// (syncfs(2)); PutFile without durable relies on it.
func (w *Root) Sync() error {
	return w.rootAt(func(rootfd int) error {
		fd, err := unix.Openat(rootfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &PathError{Op: "sync", Path: ".", Err: err}
		}
		defer unix.Close(fd)
		if err := unix.Syncfs(fd); err != nil {
			return &PathError{Op: "sync", Path: ".", Err: err}
		}
		return nil
	})
}

// OpenDir opens the directory name for listing and returns it as an
// *os.File, for callers that walk a tree relative to directory descriptors
// (openat with O_NOFOLLOW, one component at a time) and so never leave it.
// The directory is found and checked like ReadDir's; what the caller does
// below it is the caller's to confine, and masks below it are the caller's
// to apply (MaskRule).
func (w *Root) OpenDir(name string) (*os.File, error) {
	rel, err := w.check("list", name, false)
	if err != nil {
		return nil, err
	}
	n, err := w.open("list", name, slash(name, rel), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(n.fd), path.Join(w.dir, n.real)), nil
}

// entryParent checks name for a change, opens its parent directory and
// applies the guards to the entry's real path. The entry itself is not
// the workspace.
func (w *Root) entryParent(op, name string) (*node, string, error) {
	rel, err := w.check(op, name, true)
	if err != nil {
		return nil, "", err
	}
	if rel == "." || strings.HasSuffix(name, "/") {
		return nil, "", &PathError{Op: op, Path: name, Err: ErrInvalid}
	}
	d, real, err := w.parent(op, name, rel, false, 0)
	if err != nil {
		return nil, "", err
	}
	if err := w.guard(op, name, real, true); err != nil {
		d.close()
		return nil, "", err
	}
	return d, real, nil
}

func tempName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return ".warden-" + hex.EncodeToString(b[:]) + ".tmp"
}

// atomicCopy is atomicWrite for a stream, with exactly perm and the sync
// left to the caller when durable is false.
func atomicCopy(dirfd int, name string, r io.Reader, perm fs.FileMode, durable bool) (err error) {
	tmp := tempName()
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	if _, err := io.Copy(f, r); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if durable {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	err, f = f.Close(), nil
	if err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return err
	}
	if durable {
		if dfd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			unix.Fsync(dfd)
			unix.Close(dfd)
		}
	}
	return nil
}

// MaskedEntry is MaskRule for an entry of a directory known to be
// unmasked (a walk that never enters a masked directory): only the entry's
// own path needs testing, which is cheaper.
func (w *Root) MaskedEntry(rel string) (string, bool) { return matchEntry(w.mask, rel) }
