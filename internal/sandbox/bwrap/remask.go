package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// MaskSource is an empty file in the jail's read-only root (bubblewrap's
// --file), bound read-only over a masked file the host replaced while the
// jail runs. bubblewrap's own masks (--ro-bind-data) are bound from files
// it unlinks, and the kernel refuses to bind an unlinked file again.
const MaskSource = "/run/warden/empty"

// remasker mounts masks again in a running jail's mount namespace. Go
// cannot join a mount namespace (setns needs a single-threaded process), so
// nsenter(1) does: it joins the user namespace that owns the jail's mount
// namespace (where the host user that started bubblewrap is root), the
// mount namespace and the jail's root, and runs mount(8) from the jail's
// /usr, which is the host's, read-only. Neither the jail's seccomp filter
// nor its Landlock rules bind it (both belong to the jail's processes, not
// its namespaces), and it is in none of the jail's pid namespace: no jailed
// process can see or trace it.
type remasker struct {
	nsenter, mount string
	// helper mounts masks in a few system calls (maskHelper); nil, or
	// gone, mount(8) through a new nsenter does.
	helper *maskHelper
	// userns, mntns and root are the jail's, held from the start: a pid
	// reused after the jail is gone reaches none of them.
	userns, mntns, root *os.File
}

// newRemasker opens the namespaces of the jail whose first process is pid.
func newRemasker(pid int) (_ *remasker, err error) {
	r := &remasker{}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.nsenter, err = exec.LookPath("nsenter"); err != nil {
		if _, serr := os.Stat("/usr/bin/nsenter"); serr != nil {
			return nil, fmt.Errorf("nsenter (util-linux) is needed to mask a path again: %w", err)
		}
		r.nsenter = "/usr/bin/nsenter"
	}
	proc := fmt.Sprintf("/proc/%d", pid)
	if r.mntns, err = os.Open(proc + "/ns/mnt"); err != nil {
		return nil, err
	}
	// bubblewrap's jail runs in a user namespace nested in the one that
	// owns its mount namespace (--disable-userns); the owner is joined.
	ufd, err := unix.IoctlRetInt(int(r.mntns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return nil, fmt.Errorf("find the owner of the jail's mount namespace: %w", err)
	}
	r.userns = os.NewFile(uintptr(ufd), "userns")
	if r.root, err = os.Open(proc + "/root"); err != nil {
		return nil, err
	}
	for _, m := range []string{"/usr/bin/mount", "/bin/mount", "/usr/sbin/mount", "/sbin/mount"} {
		if st, err := os.Stat(filepath.Join(proc, "root", m)); err == nil && st.Mode().IsRegular() {
			r.mount = m
			break
		}
	}
	if !useMaskHelper.Load() {
		err = errors.New("the mask helper is turned off")
	} else {
		r.helper, err = startMaskHelper(r)
	}
	if err != nil {
		r.helper = nil
		if r.mount == "" {
			return nil, fmt.Errorf("the jail has no mount(8) to mask a path again, and %w", err)
		}
	}
	return r, nil
}

// Mask mounts over path in the jail an empty read-only directory
// (EmptyDir: a tmpfs, as bubblewrap's --tmpfs and --remount-ro), an empty
// read-only file (EmptyFile: MaskSource), or path itself read-only (Bind:
// a protected path).
func (r *remasker) Mask(path string, kind jail.MountKind) error {
	if r.helper != nil {
		err := r.helper.ask(path, kind)
		if err == nil {
			return nil
		}
		if !r.helper.dead {
			return err
		}
		// The helper is gone: mount(8) does it.
	}
	args := r.nsenterArgs(r.mount, "--no-mtab", "--no-canonicalize")
	switch kind {
	case jail.EmptyDir:
		args = append(args, "-t", "tmpfs", "-o", "ro,nosuid,nodev,mode=0755", "tmpfs", path)
	case jail.EmptyFile:
		args = append(args, "--bind", "-o", "ro", MaskSource, path)
	case jail.Bind:
		args = append(args, "--bind", "-o", "ro", path, path)
	default:
		return fmt.Errorf("no mask of kind %v", kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.nsenter, args...)
	cmd.ExtraFiles = []*os.File{r.userns, r.mntns, r.root}
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nsenterArgs are nsenter's arguments to run argv in the jail (the user
// namespace, mount namespace and root are its descriptors 3, 4 and 5, held
// open by the host: the jail's files do not exist here, and nsenter opens
// them before it joins any namespace).
func (r *remasker) nsenterArgs(argv ...string) []string {
	return append([]string{
		"--user=/proc/self/fd/3", "--mount=/proc/self/fd/4", "--root=/proc/self/fd/5", "--wd=/proc/self/fd/5", "--",
	}, argv...)
}

// Close ends the helper and releases the jail's namespaces.
func (r *remasker) Close() {
	if r.helper != nil {
		r.helper.Close()
	}
	for _, f := range []*os.File{r.userns, r.mntns, r.root} {
		if f != nil {
			f.Close()
		}
	}
}

// waitForRoot waits until the jail whose first process is pid has its own
// root: bubblewrap made MaskSource in it, and pivoted into it once every
// mount was in place.
func waitForRoot(pid int, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	hostRoot, err := os.Stat("/")
	if err != nil {
		return err
	}
	root := fmt.Sprintf("/proc/%d/root", pid)
	deadline := time.Now().Add(timeout)
	for {
		st, err := os.Stat(root)
		if err != nil {
			return fmt.Errorf("the jail is gone before its root was built: %w", err)
		}
		if !os.SameFile(st, hostRoot) {
			if src, err := os.Stat(root + MaskSource); err == nil && src.Mode().IsRegular() && src.Size() == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the jail's root was not built in time")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// useMaskHelper: a jail gets a mask helper (tests turn it off to try
// mount(8)).
var useMaskHelper atomic.Bool

func init() { useMaskHelper.Store(true) }
