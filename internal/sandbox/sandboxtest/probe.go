package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeArg is the first argument that makes this test binary, run inside
// a jail, make one attempt (a system call, a connection) and print its
// outcome instead of running tests.
const probeArg = "sandboxtest-probe"

func errnoName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if e == 0 {
			return "ok"
		}
		return unix.ErrnoName(e)
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// probe makes one attempt and reports its errno ("EPERM", "ok", ...) or
// result. The probes that must be killed never return.
func probe(args []string) string {
	if len(args) == 0 {
		return "no probe"
	}
	raw := func(nr uintptr, a ...uintptr) string {
		a = append(a, 0, 0, 0, 0, 0, 0)
		_, _, e := unix.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return errnoName(e)
	}
	switch args[0] {
	case "ptrace":
		return raw(unix.SYS_PTRACE, unix.PTRACE_TRACEME)
	case "io_uring":
		var params [120]byte
		return raw(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)))
	case "bpf":
		return raw(unix.SYS_BPF, 999, 0, 0)
	case "tiocsti":
		// On a pipe the ioctl itself would say ENOTTY; EPERM is the filter.
		c := byte('x')
		return raw(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "ioctl-tiocsti-highbits":
		c := byte('x')
		return raw(unix.SYS_IOCTL, 0, 0xffffffff00000000|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "personality":
		return raw(unix.SYS_PERSONALITY, 0x0040000) // ADDR_NO_RANDOMIZE
	case "personality-query":
		return raw(unix.SYS_PERSONALITY, 0xffffffff)
	case "personality-linux":
		return raw(unix.SYS_PERSONALITY, 0)
	case "clone3":
		return raw(unix.SYS_CLONE3, 0, 0)
	case "clone-newuser":
		r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if e == 0 && r == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		return errnoName(e)
	case "unshare":
		return raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
	case "mount":
		return raw(unix.SYS_MOUNT, 0, 0, 0, 0, 0)
	case "keyctl":
		return raw(unix.SYS_KEYCTL, 0, 0, 0)
	case "open_tree_attr":
		return raw(unix.SYS_OPEN_TREE_ATTR, ^uintptr(0), 0, 0, 0, 0)
	case "x32", "int80":
		if !hasI386 {
			return "no foreign architecture here"
		}
		// libseccomp kills the calling thread (SECCOMP_RET_KILL_THREAD) on a
		// foreign ABI; the Go runtime goes on without it, so the call runs
		// on a thread of its own and its silence is the verdict. warden's
		// own filter kills the whole process.
		res := make(chan string, 1)
		go func() {
			runtime.LockOSThread()
			if args[0] == "x32" {
				res <- raw(0x40000000 | unix.SYS_GETPID)
			} else if r := int32(i386Getpid()); r > 0 {
				res <- "ok"
			} else {
				res <- fmt.Sprintf("ret%d", r)
			}
		}()
		select {
		case r := <-res:
			return r
		case <-time.After(2 * time.Second):
			return "thread killed"
		}
	case "alloc":
		// Allocate and touch N MiB.
		var n int
		fmt.Sscan(args[1], &n)
		keep := make([][]byte, 0, n)
		for range n {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		return fmt.Sprintf("allocated %d MiB", len(keep))
	case "control-status":
		// GET /v1/status on a warden serve's control socket.
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", args[1])
			},
		}}
		resp, err := c.Get("http://warden/v1/status")
		if err != nil {
			return "error: " + err.Error()
		}
		resp.Body.Close()
		return strconv.Itoa(resp.StatusCode)
	case "connect":
		c, err := net.DialTimeout("tcp", args[1], 3*time.Second)
		if err != nil {
			return "refused: " + err.Error()
		}
		defer c.Close()
		b := make([]byte, 7)
		n, _ := c.Read(b)
		return string(b[:n])
	case "connect-unix":
		// A path, or an abstract name starting with '@'.
		c, err := net.DialTimeout("unix", args[1], 3*time.Second)
		if err != nil {
			return "refused: " + err.Error()
		}
		defer c.Close()
		b := make([]byte, 7)
		n, _ := c.Read(b)
		return string(b[:n])
	case "fd":
		// Whether descriptor N is open in this process, and what it is.
		n, _ := strconv.Atoi(args[1])
		var st unix.Stat_t
		if err := unix.Fstat(n, &st); err != nil {
			return "closed: " + errnoName(err)
		}
		l, _ := os.Readlink("/proc/self/fd/" + args[1])
		return "open: " + l
	}
	return "unknown probe " + args[0]
}
