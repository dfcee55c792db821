//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/wardenhq/warden/internal/testenv"
	"golang.org/x/sys/unix"
)

// victimEnv makes the test binary, re-executed inside bwrap, run one probe
// instead of the tests.
const victimEnv = "WARDEN_SECCOMP_VICTIM"

func TestMain(m *testing.M) {
	if action := os.Getenv(victimEnv); action != "" {
		os.Exit(victimMain(action))
	}
	os.Exit(m.Run())
}

// victimMain runs probe action and prints "result=<errno name or ok>". A
// probe the filter kills never prints its result.
func victimMain(action string) int {
	p, ok := victims[action]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown victim action %q\n", action)
		return 3
	}
	fmt.Printf("result=%s\n", p())
	return 0
}

func result(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	if name := unix.ErrnoName(e); name != "" {
		return name
	}
	return fmt.Sprintf("errno%d", int(e))
}

func raw(nr uintptr, args ...uintptr) string {
	var a [6]uintptr
	copy(a[:], args)
	_, _, e := unix.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return result(e)
}

func errResult(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return result(e)
	}
	return "error: " + err.Error()
}

// victims are the probes. Each makes one real system call; their results
// without the filter are the baselines the tests compare against.
var victims = map[string]func() string{
	"getpid": func() string { return raw(unix.SYS_GETPID) },
	// ptrace(PTRACE_ATTACH) on a pid that does not exist: ESRCH from the kernel.
	"ptrace":       func() string { return raw(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 0x3fffffff) },
	"unshare-ns":   func() string { return raw(unix.SYS_UNSHARE, unix.CLONE_NEWNS) },
	"unshare-user": func() string { return raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) },
	"mount":        func() string { return errResult(unix.Mount("none", "/tmp", "tmpfs", 0, "")) },
	"chroot":       func() string { return errResult(unix.Chroot("/")) },
	// bpf(BPF_MAP_CREATE, NULL, 8) faults on the NULL attribute unless refused first.
	"bpf": func() string { return raw(unix.SYS_BPF, unix.BPF_MAP_CREATE, 0, 8) },
	// io_uring_setup(1, NULL) faults on the NULL params unless refused first.
	"io_uring_setup": func() string { return raw(unix.SYS_IO_URING_SETUP, 1, 0) },
	"keyctl": func() string {
		session := -3 // KEY_SPEC_SESSION_KEYRING
		return raw(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(session), 0)
	},
	"tiocsti":            tiocsti,
	"socket-packet":      func() string { return raw(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0x0300) },
	"socket-inet-raw":    func() string { return raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP) },
	"socket-inet-stream": func() string { return raw(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0) },
	"socket-netlink":     func() string { return raw(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE) },
	// clone3(NULL, 0) is EINVAL for the kernel; the filter answers first.
	"clone3":        func() string { return raw(unix.SYS_CLONE3, 0, 0) },
	"clone-newuser": cloneNewUser,
	"exec-true":     func() string { return errResult(exec.Command("/bin/true").Run()) },
	"bench-getpid":  func() string { return benchLoop(func() { unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0) }) },
	"bench-ioctl": func() string {
		var p [2]int
		if err := unix.Pipe(p[:]); err != nil {
			return err.Error()
		}
		var n int32
		return benchLoop(func() {
			unix.RawSyscall(unix.SYS_IOCTL, uintptr(p[0]), unix.TIOCINQ, uintptr(unsafe.Pointer(&n)))
		})
	},
}

// benchEnv is the number of calls a bench- victim makes.
const benchEnv = "WARDEN_SECCOMP_BENCH_N"

func benchLoop(f func()) string {
	n, err := strconv.Atoi(os.Getenv(benchEnv))
	if err != nil || n <= 0 {
		return "bad " + benchEnv
	}
	start := time.Now()
	for range n {
		f()
	}
	return strconv.FormatFloat(float64(time.Since(start).Nanoseconds())/float64(n), 'f', 1, 64)
}

// tiocsti pushes a byte into the input of a fresh pseudo-terminal that it
// makes its controlling terminal, which the kernel allows without privilege.
func tiocsti() string {
	if _, err := unix.Setsid(); err != nil {
		return "setup: setsid: " + err.Error()
	}
	ptmx, err := unix.Open("/dev/ptmx", unix.O_RDWR, 0)
	if err != nil {
		return "setup: " + err.Error()
	}
	if err := unix.IoctlSetPointerInt(ptmx, unix.TIOCSPTLCK, 0); err != nil {
		return "setup: unlockpt: " + err.Error()
	}
	n, err := unix.IoctlGetInt(ptmx, unix.TIOCGPTN)
	if err != nil {
		return "setup: ptsname: " + err.Error()
	}
	pts, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR, 0) // no O_NOCTTY: becomes ours
	if err != nil {
		return "setup: " + err.Error()
	}
	c := byte('x')
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(pts), unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	return result(e)
}

// cloneNewUser forks with CLONE_NEWUSER through the raw system call. Should
// the fork happen, the child leaves at once without touching the runtime.
func cloneNewUser() string {
	r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e == 0 && r == 0 {
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	if e == 0 {
		var ws unix.WaitStatus
		unix.Wait4(int(r), &ws, 0, nil)
	}
	return result(e)
}

var (
	bwrapOnce sync.Once
	bwrapErr  error
)

// requireBwrap skips the test when bubblewrap cannot run here, or fails it
// when WARDEN_REQUIRE_SANDBOX=1 (CI).
func requireBwrap(t testing.TB) {
	t.Helper()
	bwrapOnce.Do(func() {
		path, err := exec.LookPath("bwrap")
		if err != nil {
			bwrapErr = fmt.Errorf("bwrap not found (install bubblewrap): %w", err)
			return
		}
		out, err := exec.Command(path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true").CombinedOutput()
		if err != nil {
			bwrapErr = fmt.Errorf("bwrap cannot create namespaces here: %v: %s", err, bytes.TrimSpace(out))
		}
	})
	if bwrapErr == nil {
		return
	}
	testenv.Skip(t, "%v", bwrapErr)
}

type jailRun struct {
	stdout, stderr string
	code           int
}

// runJailed runs argv under bwrap, with the default filter passed as
// --seccomp 3 when filter is true.
func runJailed(t testing.TB, filter bool, env []string, argv ...string) jailRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	var extra []*os.File
	if filter {
		prog, err := Program(nil)
		if err != nil {
			t.Fatal(err)
		}
		rawProg, err := Assemble(prog)
		if err != nil {
			t.Fatal(err)
		}
		f, err := MemFile(rawProg)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		extra = append(extra, f)
		args = append(args, "--seccomp", "3")
	}
	cmd := exec.CommandContext(ctx, "bwrap", append(args, argv...)...)
	cmd.ExtraFiles = extra
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("bwrap %q: %v", argv, err)
	}
	return jailRun{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

func runVictim(t *testing.T, filter bool, action string) jailRun {
	t.Helper()
	return runJailed(t, filter, []string{victimEnv + "=" + action}, os.Args[0])
}

type realCase struct {
	action string
	want   string // result under the filter
	// baseline is the result without the filter, proving the probe reaches
	// the kernel and the filter is what changes the answer. "" skips the
	// baseline run (a probe that must not succeed even once).
	baseline string
}

func realCases() []realCase {
	return []realCase{
		{"getpid", "ok", "ok"},
		{"ptrace", "EPERM", "ESRCH"},
		{"unshare-ns", "EPERM", "ok"},
		{"unshare-user", "EPERM", "EINVAL"}, // a threaded process cannot enter a user namespace
		{"mount", "EPERM", "ok"},
		{"chroot", "EPERM", "ok"},
		{"bpf", "EPERM", "EFAULT"},
		{"io_uring_setup", "EPERM", "EFAULT"},
		{"keyctl", "EPERM", "ok"},
		{"tiocsti", "EPERM", "ok"},
		{"socket-packet", "EPERM", "ok"},
		{"socket-inet-raw", "EPERM", "ok"},
		{"socket-inet-stream", "ok", "ok"},
		{"socket-netlink", "ok", "ok"},
		{"clone3", "ENOSYS", "EINVAL"},
		{"clone-newuser", "EPERM", ""},
		{"exec-true", "ok", "ok"},
	}
}

func TestRealProcess(t *testing.T) {
	requireBwrap(t)
	t.Parallel()
	for _, c := range realCases() {
		t.Run(c.action, func(t *testing.T) {
			t.Parallel()
			got := runVictim(t, true, c.action)
			if want := "result=" + c.want + "\n"; got.stdout != want || got.code != 0 {
				t.Errorf("under the filter: stdout %q exit %d, want %q exit 0; stderr:\n%s", got.stdout, got.code, want, got.stderr)
			}
			if c.baseline == "" {
				return
			}
			base := runVictim(t, false, c.action)
			if want := "result=" + c.baseline + "\n"; base.stdout != want {
				t.Errorf("baseline without the filter: stdout %q exit %d, want %q; stderr:\n%s", base.stdout, base.code, want, base.stderr)
			}
		})
	}
}

// TestRealKill checks the probes the architecture guard must kill: the
// process dies of SIGSYS (bwrap reports 128+signal) before printing.
func TestRealKill(t *testing.T) {
	requireBwrap(t)
	t.Parallel()
	for _, c := range killCases() {
		t.Run(c.action, func(t *testing.T) {
			t.Parallel()
			base := runVictim(t, false, c.action)
			if want := "result=" + c.baseline + "\n"; base.stdout != want {
				// A kernel with ia32_emulation=off (or without IA32
				// emulation) faults int 0x80 before seccomp sees it.
				firstLines := strings.Join(strings.SplitN(base.stderr, "\n", 4)[:min(3, strings.Count(base.stderr, "\n"))], " | ")
				t.Skipf("probe does not reach the kernel here without the filter (stdout %q exit %d, want %q: %s); the VM tests cover this guard", base.stdout, base.code, want, firstLines)
			}
			got := runVictim(t, true, c.action)
			if got.code != 128+int(unix.SIGSYS) || got.stdout != "" {
				t.Errorf("under the filter: stdout %q exit %d, want death by SIGSYS (exit %d); stderr:\n%s", got.stdout, got.code, 128+int(unix.SIGSYS), got.stderr)
			}
		})
	}
}

// TestRealPrograms runs ordinary programs under the filter: a shell that
// forks and execs, and a glibc program whose threads start through clone3
// (refused with ENOSYS) and must fall back to clone.
func TestRealPrograms(t *testing.T) {
	requireBwrap(t)
	t.Parallel()
	got := runJailed(t, true, nil, "/bin/sh", "-c", "echo ok; ls /")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "ok\n") || !strings.Contains(got.stdout, "usr\n") {
		t.Errorf("sh under the filter: stdout %q exit %d; stderr:\n%s", got.stdout, got.code, got.stderr)
	}

	sortPath, err := exec.LookPath("sort")
	if err != nil {
		t.Skipf("no sort(1) for the threaded-program check: %v", err)
	}
	in := filepath.Join(t.TempDir(), "in")
	var b strings.Builder
	const lines = 200000
	for i := range lines {
		fmt.Fprintf(&b, "%d\n", (i*7919)%lines)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// A buffer big enough for the whole input keeps sort off the read-only
	// /tmp; it still sorts in two threads.
	got = runJailed(t, true, nil, sortPath, "-n", "--parallel=2", "-S", "100M", in)
	if got.code != 0 || !strings.HasPrefix(got.stdout, "0\n1\n2\n") || strings.Count(got.stdout, "\n") != lines {
		t.Errorf("threaded sort under the filter: exit %d, %d lines, stderr:\n%s", got.code, strings.Count(got.stdout, "\n"), got.stderr)
	}
}

// BenchmarkSyscall measures, inside bwrap, what one system call costs with
// and without the filter: getpid (whose verdict the kernel caches, as for
// every call no rule inspects the arguments of) and ioctl (which the filter
// evaluates on every call). The ns/call metric is the victim's own timing;
// ns/op also counts starting bwrap.
func BenchmarkSyscall(b *testing.B) {
	requireBwrap(b)
	for _, call := range []string{"getpid", "ioctl"} {
		for _, filter := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/filter=%v", call, filter), func(b *testing.B) {
				var sum float64
				for range b.N {
					got := runJailed(b, filter, []string{victimEnv + "=bench-" + call, benchEnv + "=500000"}, os.Args[0])
					v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(got.stdout, "result=")), 64)
					if err != nil || got.code != 0 {
						b.Fatalf("bench victim: %q exit %d: %s", got.stdout, got.code, got.stderr)
					}
					sum += v
				}
				b.ReportMetric(sum/float64(b.N), "ns/call")
			})
		}
	}
}
