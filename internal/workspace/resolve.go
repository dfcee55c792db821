package workspace

import (
	"errors"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Every lookup is one openat2 call relative to the workspace handle with
// RESOLVE_BENEATH: the kernel refuses, during the same path walk that opens
// the file, any step ("..", an absolute or escaping symbolic link) that
// would leave the workspace. There is no separate check to race against.

const (
	// beneath follows symbolic links that stay inside the workspace.
	beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS
	// direct follows none, so the opened file is at the name given.
	direct = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS
)

// openat2 opens rel under dirfd, retrying EINTR and the EAGAIN the kernel
// returns when a rename elsewhere raced with a RESOLVE_BENEATH walk.
func openat2(dirfd int, rel string, flags int, resolve uint64) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolve}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if (err == unix.EINTR || err == unix.EAGAIN) && i < 256 {
			continue
		}
		return fd, err
	}
}

// fdPath returns where the kernel says the open file fd is now.
func fdPath(fd int) (string, error) {
	buf := make([]byte, 512)
	for {
		n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) >= 1<<16 {
			return "", unix.ENAMETOOLONG
		}
		buf = make([]byte, 2*len(buf))
	}
}

// realRel returns the workspace-relative path of the open file fd, or false
// when the kernel places it outside the workspace.
func (w *Root) realRel(fd int) (string, bool) {
	p, err := fdPath(fd)
	if err != nil {
		return "", false
	}
	switch {
	case p == w.dir:
		return ".", true
	case w.dir == "/" && strings.HasPrefix(p, "/"):
		return p[1:], true
	case strings.HasPrefix(p, w.dir+"/"):
		return p[len(w.dir)+1:], true
	}
	return "", false
}

// rootAt runs f with the workspace handle held open.
func (w *Root) rootAt(f func(rootfd int) error) error {
	rc, err := w.root.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// node is a file opened by open: its descriptor, its real location relative
// to the workspace, and its status.
type node struct {
	fd   int
	real string
	st   syscall.Stat_t
}

// open opens rel (already cleaned and checked by name) with flags, and
// makes sure that what was opened is inside the workspace, not masked and
// still linked. The common case, a path without symbolic links, costs one
// openat2 and one fstat; a path through links also asks /proc where the
// file really is and applies the masks there. The kernel path (readlink)
// is read before the link count (fstat), so a file unlinked in between is
// seen as unlinked and refused rather than checked under a stale name.
//
// A rel ending in "/" must name a directory (or a link to one), as with
// open(2); the slash is not part of the real path.
func (w *Root) open(op, name, rel string, flags int) (*node, error) {
	n := &node{fd: -1, real: strings.TrimSuffix(rel, "/")}
	err := w.rootAt(func(rootfd int) error {
		fd, err := openat2(rootfd, rel, flags, direct)
		if err == unix.ELOOP {
			n.real = ""
			fd, err = openat2(rootfd, rel, flags, beneath)
		}
		n.fd = fd
		return err
	})
	if err != nil {
		return nil, lookupErr(op, name, err)
	}
	if n.real == "" {
		real, ok := w.realRel(n.fd)
		if !ok {
			unix.Close(n.fd)
			return nil, &PathError{Op: op, Path: name, Err: ErrEscapes}
		}
		if rule, masked := w.MaskRule(real); masked {
			unix.Close(n.fd)
			return nil, &PathError{Op: op, Path: name, Rule: rule, Err: ErrMasked}
		}
		n.real = real
	}
	if err := syscall.Fstat(n.fd, &n.st); err != nil {
		unix.Close(n.fd)
		return nil, &PathError{Op: op, Path: name, Err: err}
	}
	if n.st.Nlink == 0 {
		unix.Close(n.fd)
		return nil, &PathError{Op: op, Path: name, Err: syscall.ENOENT}
	}
	return n, nil
}

func (n *node) close() { unix.Close(n.fd) }

func (n *node) mode() fs.FileMode { return fileMode(n.st.Mode) }

// slash returns rel with the trailing slash of name, if it had one: a
// name such as "file/" must name a directory.
func slash(name, rel string) string {
	if rel != "." && strings.HasSuffix(name, "/") {
		return rel + "/"
	}
	return rel
}

func lookupErr(op, name string, err error) error {
	var pe *PathError
	if errors.As(err, &pe) {
		return err
	}
	if err == unix.EXDEV {
		// RESOLVE_BENEATH reports a step outside the workspace as EXDEV.
		return &PathError{Op: op, Path: name, Err: ErrEscapes}
	}
	return &PathError{Op: op, Path: name, Err: err}
}

// parent opens the directory that holds rel (an O_PATH handle) and returns
// it with the real workspace-relative path of the entry rel names. When
// create is set, missing directories are made with perm, each one checked
// against the masks and protected paths before it is made. The caller
// applies the guards to the returned entry path.
func (w *Root) parent(op, name, rel string, create bool, perm fs.FileMode) (*node, string, error) {
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	d, err := w.dirAll(op, name, dir, create, perm)
	if err != nil {
		return nil, "", err
	}
	return d, path.Join(d.real, base), nil
}

// dirAll opens directory rel, making missing components when create is set.
func (w *Root) dirAll(op, name, rel string, create bool, perm fs.FileMode) (*node, error) {
	d, err := w.open(op, name, rel, unix.O_PATH|unix.O_DIRECTORY)
	if err == nil || !create || !errors.Is(err, fs.ErrNotExist) {
		return d, err
	}
	// Walk down from the workspace, one component at a time, resolving
	// each prefix by its real path so links are followed only through open.
	cur, err := w.open(op, name, ".", unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	for _, comp := range strings.Split(rel, "/") {
		next := path.Join(cur.real, comp)
		for try := 0; ; try++ {
			d, err := w.open(op, name, next, unix.O_PATH|unix.O_DIRECTORY)
			if err == nil {
				cur.close()
				cur = d
				break
			}
			if !errors.Is(err, fs.ErrNotExist) || try > 0 {
				cur.close()
				return nil, err
			}
			if err := w.guardChange(op, name, next); err != nil {
				cur.close()
				return nil, err
			}
			if err := unix.Mkdirat(cur.fd, comp, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
				cur.close()
				return nil, &PathError{Op: op, Path: name, Err: err}
			}
		}
	}
	return cur, nil
}

// fileMode converts a kernel st_mode to an fs.FileMode as package os does.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
