package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readFlags open for reading without blocking on a FIFO and without taking
// a controlling terminal; non-regular files are refused after the open.
const readFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY

// openFile opens name for reading and refuses anything but a regular file
// with a single link.
func (w *Root) openFile(op, name string) (*node, error) {
	rel, err := w.check(op, name, false)
	if err != nil {
		return nil, err
	}
	return w.openRegular(op, name, slash(name, rel))
}

// openRegular is openFile for a rel already cleaned and checked by name.
func (w *Root) openRegular(op, name, rel string) (*node, error) {
	n, err := w.open(op, name, rel, readFlags)
	if err != nil {
		return nil, err
	}
	switch m := n.mode(); {
	case m.IsDir():
		err = &PathError{Op: op, Path: name, Err: syscall.EISDIR}
	case !m.IsRegular():
		err = &PathError{Op: op, Path: name, Err: ErrNotRegular}
	case n.st.Nlink > 1:
		err = &PathError{Op: op, Path: name, Err: ErrHardLink}
	}
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// ReadFile implements FS. It refuses directories, devices, pipes, sockets
// and regular files with more than one hard link (ErrHardLink).
func (w *Root) ReadFile(name string, limit int64) ([]byte, error) {
	n, err := w.openFile("read", name)
	if err != nil {
		return nil, err
	}
	defer n.close()
	size := n.st.Size
	if limit > 0 && size > limit {
		return nil, &PathError{Op: "read", Path: name, Err: fmt.Errorf("%w (%d bytes, limit %d)", ErrTooLarge, size, limit)}
	}
	// The size may change while we read; read to EOF but never past limit.
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := unix.Read(n.fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &PathError{Op: "read", Path: name, Err: err}
		}
		if m == 0 {
			break
		}
		buf = buf[:len(buf)+m]
		if limit > 0 && int64(len(buf)) > limit {
			return nil, &PathError{Op: "read", Path: name, Err: fmt.Errorf("%w (limit %d bytes)", ErrTooLarge, limit)}
		}
	}
	return buf, nil
}

// Open implements FS, with the refusals of ReadFile. The result also has
// ReadAt, Seek and Stat (fs.File); it grants reading and nothing else.
//
// It is a thin reader over the descriptor rather than an *os.File: only
// regular files get here, for which O_NONBLOCK changes nothing, so the
// fcntl calls and poller registration of os.NewFile are pure cost (a third
// of grep's CPU over a large tree went to them).
func (w *Root) Open(name string) (io.ReadCloser, error) {
	n, err := w.openFile("read", name)
	if err != nil {
		return nil, err
	}
	return &file{fd: n.fd, name: path.Base(path.Clean(name)), size: n.st.Size}, nil
}

// OpenEntry opens the regular file that e names, an entry of a listing by
// this Root (ReadDir or Walk), as Open does with the workspace path the
// listing found it at. That path was cleaned and checked against the masks
// when it was listed, and masks depend on the path alone, so it is not
// checked again; the open itself is Open's (one openat2 beneath the
// workspace, the real location checked when a link was followed since,
// Open's refusals). A search opening every file of a tree saves a tenth of
// its time. An entry from anywhere else is refused with ErrInvalid.
func (w *Root) OpenEntry(e fs.DirEntry) (io.ReadCloser, error) {
	d, ok := e.(*dirEntry)
	if !ok || d.w != w {
		name := "?"
		if e != nil {
			name = e.Name()
		}
		return nil, &PathError{Op: "read", Path: name, Err: ErrInvalid}
	}
	n, err := w.openRegular("read", d.real, d.real)
	if err != nil {
		return nil, err
	}
	return &file{fd: n.fd, name: d.name, size: n.st.Size}, nil
}

// file is a read-only view of an opened regular workspace file.
type file struct {
	// mu is held across every system call on fd, so a Close racing a read
	// can never let the read reach a descriptor number reused by another open.
	mu   sync.Mutex
	fd   int // -1 once closed
	name string
	size int64 // at open
}

// Size is the file's size when it was opened, so a reader can size its
// buffer and stop at the end without one more read to see EOF. A file
// written meanwhile may have grown or shrunk since.
func (f *file) Size() int64 { return f.size }

var (
	_ fs.File     = (*file)(nil)
	_ io.ReaderAt = (*file)(nil)
	_ io.Seeker   = (*file)(nil)
)

// use locks f and returns its descriptor; the caller calls f.mu.Unlock.
func (f *file) use() (int, error) {
	f.mu.Lock()
	if f.fd < 0 {
		f.mu.Unlock()
		return -1, fs.ErrClosed
	}
	return f.fd, nil
}

func (f *file) Read(b []byte) (int, error) {
	fd, err := f.use()
	if err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *file) ReadAt(b []byte, off int64) (int, error) {
	fd, err := f.use()
	if err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	total := 0
	for total < len(b) {
		n, err := unix.Pread(fd, b[total:], off+int64(total))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return total, &PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return total, io.EOF
		}
		total += n
	}
	return total, nil
}

func (f *file) Seek(off int64, whence int) (int64, error) {
	fd, err := f.use()
	if err != nil {
		return 0, err
	}
	defer f.mu.Unlock()
	return unix.Seek(fd, off, whence)
}

func (f *file) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 {
		return fs.ErrClosed
	}
	err := unix.Close(f.fd)
	f.fd = -1
	return err
}

func (f *file) Stat() (fs.FileInfo, error) {
	fd, err := f.use()
	if err != nil {
		return nil, err
	}
	defer f.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &PathError{Op: "stat", Path: f.name, Err: err}
	}
	return newFileInfo(f.name, &st), nil
}

// stat opens name without reading it (O_PATH) and describes it.
func (w *Root) stat(op, name string, follow bool) (fs.FileInfo, error) {
	rel, err := w.check(op, name, false)
	if err != nil {
		return nil, err
	}
	flags := unix.O_PATH
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	n, err := w.open(op, name, slash(name, rel), flags)
	if err != nil {
		return nil, err
	}
	defer n.close()
	return newFileInfo(path.Base(rel), &n.st), nil
}

// Stat implements FS: it follows symbolic links that stay inside the
// workspace and lead to unmasked files.
func (w *Root) Stat(name string) (fs.FileInfo, error) { return w.stat("stat", name, true) }

// Lstat implements FS: like Stat, but a symbolic link in the last component
// is described itself.
func (w *Root) Lstat(name string) (fs.FileInfo, error) { return w.stat("stat", name, false) }

// ReadDir implements FS.
func (w *Root) ReadDir(name string) ([]fs.DirEntry, error) {
	rel, err := w.check("list", name, false)
	if err != nil {
		return nil, err
	}
	n, err := w.open("list", name, slash(name, rel), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer n.close()
	ents, err := w.readDir(n.fd, n.real)
	if err != nil {
		return nil, &PathError{Op: "list", Path: name, Err: err}
	}
	out := make([]fs.DirEntry, len(ents))
	for i := range ents {
		out[i] = &ents[i]
	}
	return out, nil
}

// DirPath returns the host path of directory name, for use as a command's
// working directory. The path is the directory's real location (no symbolic
// links), checked against the masks; see the package documentation for the
// race that remains between this call and the command's chdir.
func (w *Root) DirPath(name string) (string, error) {
	rel, err := w.check("cd", name, false)
	if err != nil {
		return "", err
	}
	n, err := w.open("cd", name, slash(name, rel), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return "", err
	}
	defer n.close()
	return filepath.Join(w.dir, filepath.FromSlash(n.real)), nil
}

// WriteFile implements FS. Missing parent directories are made (0755 before
// umask), each checked like the file. A regular file is replaced by a new
// one renamed over it, so hard links to the old file keep the old content;
// an existing file's permission bits are kept. A symbolic link in the last
// component is refused (ErrSymlink): writes never go through links. A link
// in a parent directory is followed when it stays inside the workspace,
// and the guards apply to where it leads.
func (w *Root) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return w.writeFile(name, "", data, perm)
}

// writeFile is WriteFile; a pin other than "" is the real location the
// write must land at (WriteFileAt).
func (w *Root) writeFile(name, pin string, data []byte, perm fs.FileMode) error {
	rel, err := w.check("write", name, true)
	if err != nil {
		return err
	}
	if rel == "." || strings.HasSuffix(name, "/") {
		return &PathError{Op: "write", Path: name, Err: syscall.EISDIR}
	}
	if pin != "" {
		// Before any missing directory is made, at the place it now
		// leads to.
		if err := w.checkPin("write", name, pin); err != nil {
			return err
		}
	}
	d, real, err := w.parent("write", name, rel, true, 0o755)
	if err != nil {
		return err
	}
	defer d.close()
	if err := w.guardChange("write", name, real); err != nil {
		return err
	}
	if err := pinned("write", name, pin, real); err != nil {
		return err
	}
	base := path.Base(rel)
	keep := false
	var st unix.Stat_t
	switch err := unix.Fstatat(d.fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch m := fileMode(st.Mode); {
		case m.IsDir():
			return &PathError{Op: "write", Path: name, Err: syscall.EISDIR}
		case m&fs.ModeSymlink != 0:
			return w.symlinkErr("write", name, real)
		case !m.IsRegular():
			return &PathError{Op: "write", Path: name, Err: ErrNotRegular}
		}
		perm, keep = fileMode(st.Mode).Perm(), true
	case err != unix.ENOENT:
		return &PathError{Op: "write", Path: name, Err: err}
	}
	if err := atomicWrite(d.fd, base, data, perm.Perm(), keep); err != nil {
		return &PathError{Op: "write", Path: name, Err: err}
	}
	return nil
}

// symlinkErr refuses to change through the link at real, naming its target
// when the target is one the caller could write instead.
func (w *Root) symlinkErr(op, name, real string) error {
	if n, err := w.open(op, name, real, unix.O_PATH); err == nil {
		n.close()
		if _, masked := w.MaskRule(n.real); !masked {
			if _, prot := w.ProtectRule(n.real); !prot {
				return &PathError{Op: op, Path: name, Err: fmt.Errorf("%w to '%s'; write to that path instead", ErrSymlink, n.real)}
			}
		}
	}
	return &PathError{Op: op, Path: name, Err: fmt.Errorf("%w; tools do not write through symbolic links", ErrSymlink)}
}

// Remove implements FS. A symbolic link is removed itself, never its target.
func (w *Root) Remove(name string) error { return w.remove(name, "") }

// remove is Remove; a pin other than "" is the real location of what must
// be removed (RemoveAt).
func (w *Root) remove(name, pin string) error {
	rel, err := w.check("delete", name, true)
	if err != nil {
		return err
	}
	if rel == "." {
		return &PathError{Op: "delete", Path: name, Err: ErrInvalid}
	}
	d, real, err := w.parent("delete", name, rel, false, 0)
	if err != nil {
		return err
	}
	defer d.close()
	if err := w.guardChange("delete", name, real); err != nil {
		return err
	}
	if err := pinned("delete", name, pin, real); err != nil {
		return err
	}
	base := path.Base(rel)
	err = unix.Unlinkat(d.fd, base, 0)
	if err == unix.EISDIR {
		err = unix.Unlinkat(d.fd, base, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &PathError{Op: "delete", Path: name, Err: err}
	}
	return nil
}

// MkdirAll implements FS. Every directory it makes is checked against the
// masks and protected paths first, and so is name's real location even when
// it exists already.
func (w *Root) MkdirAll(name string, perm fs.FileMode) error {
	rel, err := w.check("mkdir", name, true)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	d, real, err := w.parent("mkdir", name, rel, true, perm)
	if err != nil {
		return err
	}
	defer d.close()
	if err := w.guardChange("mkdir", name, real); err != nil {
		return err
	}
	if err := unix.Mkdirat(d.fd, path.Base(rel), uint32(perm.Perm())); err != nil && err != unix.EEXIST {
		return &PathError{Op: "mkdir", Path: name, Err: err}
	}
	// It exists now; make sure it is a directory, or a link to one inside.
	n, err := w.open("mkdir", name, real, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	n.close()
	return nil
}

// Rename implements FS. Both names must be free of masks and protected
// paths, and for a directory so must everything below it, under the old
// name and under the new one. A symbolic link is moved itself. The new
// name's parent directory must exist; an existing file there is replaced.
func (w *Root) Rename(oldname, newname string) error {
	const op = "rename"
	orel, err := w.check(op, oldname, true)
	if err != nil {
		return err
	}
	nrel, err := w.check(op, newname, true)
	if err != nil {
		return err
	}
	if orel == "." {
		return &PathError{Op: op, Path: oldname, Err: ErrInvalid}
	}
	if nrel == "." {
		return &PathError{Op: op, Path: newname, Err: ErrInvalid}
	}
	od, oreal, err := w.parent(op, oldname, orel, false, 0)
	if err != nil {
		return err
	}
	defer od.close()
	nd, nreal, err := w.parent(op, newname, nrel, false, 0)
	if err != nil {
		return err
	}
	defer nd.close()
	if err := w.guardChange(op, oldname, oreal); err != nil {
		return err
	}
	if err := w.guardChange(op, newname, nreal); err != nil {
		return err
	}
	obase, nbase := path.Base(orel), path.Base(nrel)
	var st unix.Stat_t
	if err := unix.Fstatat(od.fd, obase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &PathError{Op: op, Path: oldname, Err: err}
	}
	if fileMode(st.Mode).IsDir() {
		if err := w.guardTree(od.fd, obase, oldname, oreal, newname, nreal); err != nil {
			return err
		}
	}
	if err := unix.Renameat(od.fd, obase, nd.fd, nbase); err != nil {
		return &PathError{Op: op, Path: oldname, Err: err}
	}
	return nil
}

// guardTree refuses to move directory base (in dirfd) when anything below
// it is masked or protected, under its old real path or its new one.
func (w *Root) guardTree(dirfd int, base, oldname, oreal, newname, nreal string) error {
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &PathError{Op: "rename", Path: oldname, Err: err}
	}
	defer unix.Close(fd)
	return w.walkRaw(fd, "", func(sub string) error {
		for _, c := range [2]struct{ name, real string }{{oldname, oreal}, {newname, nreal}} {
			err := w.guardChange("rename", c.name, path.Join(c.real, sub))
			var pe *PathError
			if errors.As(err, &pe) {
				pe.Err = fmt.Errorf("holds '%s', which %w", path.Join(c.name, sub), pe.Err)
				return pe
			}
		}
		return nil
	})
}

// fileInfo describes a file from its kernel status, as os.Stat would.
type fileInfo struct {
	name string
	st   syscall.Stat_t
}

func newFileInfo(name string, st *syscall.Stat_t) *fileInfo {
	return &fileInfo{name: name, st: *st}
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return fileMode(fi.st.Mode) }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }
