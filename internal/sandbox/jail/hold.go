package jail

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// placeholderXattr marks a file or directory that warden created on the host
// for a mask of a missing path to be mounted on. Only a marked entry that is
// still empty is ever removed: an entry the user made, or wrote into, stays.
const placeholderXattr = "user.warden.placeholder"

// Hold is one jail's claim on its workspace's mask placeholders. A mask of a
// path that does not exist yet needs something on the host to be mounted
// over (a mount point cannot be a missing name), so the placeholders exist
// while a jail stands on them; removing one while a jail has it mounted
// would detach the mount there and unmask the path. Every jail of the
// workspace, from any warden process, holds a shared flock(2) on the
// workspace directory from before its placeholders are made until it has
// exited; the last one out (the one that gets the lock exclusively)
// removes the placeholders, so that nothing is left in the user's tree
// once no jail runs.
type Hold struct {
	ws   string
	dir  *os.File
	todo []string // placeholders to remove, when this jail is the last one
}

// holdWorkspace takes a shared lock on the workspace directory ws. It waits
// while the last jail of a previous generation removes its placeholders.
func holdWorkspace(ws string) (*Hold, error) {
	d, err := os.Open(ws)
	if err != nil {
		return nil, fmt.Errorf("failed to open workspace %s: %w", ws, err)
	}
	for {
		err = unix.Flock(int(d.Fd()), unix.LOCK_SH)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("failed to lock workspace %s: %w", ws, err)
	}
	return &Hold{ws: ws, dir: d}, nil
}

// Release gives up the jail's claim; call it once the jail has exited (its
// mounts are gone). When no other jail of the workspace holds it, the
// placeholders that are still empty and marked as warden's are removed. A
// nil Hold releases nothing.
func (h *Hold) Release() error {
	if h == nil || h.dir == nil {
		return nil
	}
	defer func() {
		h.dir.Close() // drops the lock
		h.dir = nil
	}()
	if len(h.todo) == 0 {
		return nil
	}
	// Converting the shared lock may drop it first; that is fine: this jail
	// is gone, and of two jails ending at once the later attempt succeeds.
	if err := unix.Flock(int(h.dir.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EINTR) {
			return nil // another jail still stands on them; the last one removes them
		}
		return fmt.Errorf("failed to lock workspace %s: %w", h.ws, err)
	}
	return removePlaceholders(h.ws, h.todo)
}

// removePlaceholders removes, deepest first and through an os.Root of ws,
// each path of list that is still an empty placeholder of warden's.
func removePlaceholders(ws string, list []string) error {
	r, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer r.Close()
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range list {
		rel, err := filepath.Rel(ws, p)
		if err != nil || rel == "." || !filepath.IsLocal(rel) {
			continue
		}
		if !isPlaceholder(r, rel) {
			continue
		}
		if err := r.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("failed to remove the mask placeholder %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// isPlaceholder reports whether rel (in r) is an empty regular file or an
// empty directory that carries warden's placeholder mark. A symbolic link
// never is.
func isPlaceholder(r *os.Root, rel string) bool {
	st, err := r.Lstat(rel)
	if err != nil || !(st.Mode().IsRegular() && st.Size() == 0 || st.IsDir()) {
		return false
	}
	f, err := r.Open(rel)
	if err != nil {
		return false
	}
	defer f.Close()
	if fst, err := f.Stat(); err != nil || !os.SameFile(st, fst) {
		return false
	}
	if _, err := unix.Fgetxattr(int(f.Fd()), placeholderXattr, make([]byte, 8)); err != nil {
		return false
	}
	if st.IsDir() {
		if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
			return false
		}
	}
	return true
}

// markPlaceholder marks f, just created as a placeholder, as warden's. Where
// the file system keeps no extended attributes the placeholder is left
// unmarked, and so on the host after the jail ends, as an entry the user
// made would be.
func markPlaceholder(f *os.File) {
	_ = unix.Fsetxattr(int(f.Fd()), placeholderXattr, []byte("1"), 0)
}
