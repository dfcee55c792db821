package workspace

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirEntry is an entry of a listed directory. Its type comes from the
// directory itself (d_type); Info looks the entry up again, confined, by its
// real workspace path.
type dirEntry struct {
	w    *Root
	name string
	typ  fs.FileMode
	real string
}

func (e *dirEntry) Name() string      { return e.name }
func (e *dirEntry) IsDir() bool       { return e.typ.IsDir() }
func (e *dirEntry) Type() fs.FileMode { return e.typ }
func (e *dirEntry) String() string    { return fs.FormatDirEntry(e) }

func (e *dirEntry) Info() (fs.FileInfo, error) {
	n, err := e.w.open("stat", e.real, e.real, unix.O_PATH|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	defer n.close()
	return newFileInfo(e.name, &n.st), nil
}

// rawEntry is one name read from a directory.
type rawEntry struct {
	name string
	typ  fs.FileMode
}

// readRaw lists the directory open at fd, sorted by name, with "." and ".."
// left out. Entries whose type the file system does not report are looked
// up with fstatat relative to fd, never by path.
func readRaw(fd int) ([]rawEntry, error) {
	var out []rawEntry
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			var d unix.Dirent
			reclen := int(binary.NativeEndian.Uint16(b[unsafe.Offsetof(d.Reclen):]))
			if reclen < 19 || reclen > len(b) {
				return nil, syscall.EIO
			}
			typ := b[unsafe.Offsetof(d.Type)]
			name := b[unsafe.Offsetof(d.Name):reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if s := string(name); s != "." && s != ".." {
				out = append(out, rawEntry{name: s, typ: direntType(fd, s, typ)})
			}
		}
	}
	slices.SortFunc(out, func(a, b rawEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

func direntType(dirfd int, name string, t uint8) fs.FileMode {
	switch t {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fs.ModeIrregular
	}
	return fileMode(st.Mode).Type()
}

// readDir lists the directory open at fd, whose real path is real, without
// its masked entries. The directory itself is known to be unmasked: it was
// checked when it was opened (or listed), so only each entry's own name
// needs testing.
func (w *Root) readDir(fd int, real string) ([]dirEntry, error) {
	raw, err := readRaw(fd)
	if err != nil {
		return nil, err
	}
	out := make([]dirEntry, 0, len(raw))
	for _, r := range raw {
		p := path.Join(real, r.name)
		if _, masked := matchEntry(w.mask, p); masked {
			continue
		}
		out = append(out, dirEntry{w: w, name: r.name, typ: r.typ, real: p})
	}
	return out, nil
}

// walkRaw calls fn with the path, relative to the directory open at fd
// (prefixed by prefix), of every entry below it, masked or not, without
// following symbolic links.
func (w *Root) walkRaw(fd int, prefix string, fn func(sub string) error) error {
	raw, err := readRaw(fd)
	if err != nil {
		return err
	}
	for _, r := range raw {
		sub := path.Join(prefix, r.name)
		if err := fn(sub); err != nil {
			return err
		}
		if !r.typ.IsDir() {
			continue
		}
		cfd, err := unix.Openat(fd, r.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		err = w.walkRaw(cfd, sub, fn)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// Walk implements FS with the semantics of fs.WalkDir: lexical order, fn
// called for a directory before its entries and again if it cannot be
// listed, fs.SkipDir and fs.SkipAll honoured. The starting directory may be
// reached through a symbolic link that stays inside the workspace; below
// it, every directory is opened relative to its parent's descriptor with
// O_NOFOLLOW, so no link is followed and nothing is looked up from the
// workspace root again. Masked entries are left out and masked directories
// never opened. Paths given to fn start with name as given.
func (w *Root) Walk(name string, fn fs.WalkDirFunc) error {
	rel, err := w.check("list", name, false)
	if err != nil {
		return err
	}
	disp := path.Clean(name)
	if name == "" {
		disp = "."
	}
	n, err := w.open("list", name, slash(name, rel), readFlags)
	if err != nil {
		err = fn(disp, nil, err)
	} else {
		root := &dirEntry{w: w, name: path.Base(rel), typ: n.mode().Type(), real: n.real}
		err = w.walkDir(n.fd, disp, root, fn)
		n.close()
	}
	if err == fs.SkipDir || err == fs.SkipAll {
		return nil
	}
	return err
}

// walkDir visits d, open at fd (read-only), and everything below it.
func (w *Root) walkDir(fd int, p string, d *dirEntry, fn fs.WalkDirFunc) error {
	if err := fn(p, d, nil); err != nil || !d.IsDir() {
		if err == fs.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	ents, err := w.readDir(fd, d.real)
	if err != nil {
		if err = fn(p, d, &PathError{Op: "list", Path: p, Err: err}); err != nil {
			if err == fs.SkipDir {
				err = nil
			}
			return err
		}
	}
	for i := range ents {
		e := &ents[i]
		cp := path.Join(p, e.name)
		if !e.IsDir() {
			if err := fn(cp, e, nil); err != nil {
				if err == fs.SkipDir {
					break
				}
				return err
			}
			continue
		}
		cfd, oerr := unix.Openat(fd, e.name, readFlags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if oerr != nil {
			// Replaced by a link or removed since it was listed: report it
			// as fs.WalkDir reports a directory it cannot read.
			err := fn(cp, e, nil)
			if err == nil {
				err = fn(cp, e, &PathError{Op: "list", Path: cp, Err: oerr})
			}
			if err != nil && err != fs.SkipDir {
				return err
			}
			continue
		}
		err := w.walkDir(cfd, cp, e, fn)
		unix.Close(cfd)
		if err != nil {
			if err == fs.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
