package command

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseInherited marks every descriptor of this process above stderr
// close-on-exec, so that no program it starts inherits one. Go opens its
// own files close-on-exec and passes a child only what exec.Cmd names, but
// a descriptor warden itself inherited without the flag (an agent host's
// socket, pty or log file) would pass through every child: bubblewrap and
// the jail, docker, a command. Descriptors meant for a child are passed
// through exec.Cmd (Stdin, Stdout, Stderr, ExtraFiles), which sets them up
// in the child whatever their flag here.
//
// It uses close_range(CLOSE_RANGE_CLOEXEC) (Linux 5.11), and walks
// /proc/self/fd where the kernel lacks it.
func CloseInherited() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil || !(errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)) {
		return err
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		// One of these is ReadDir's own descriptor, already close-on-exec
		// (and closed by now: EBADF is expected).
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return err
		}
	}
	return nil
}
