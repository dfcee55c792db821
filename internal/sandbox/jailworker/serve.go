package jailworker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/egress/relay"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
	"github.com/wardenhq/warden/internal/workspace"
)

// Rlimits of the worker and everything it runs. NPROC binds only when the
// jail's user is not root on the host; the pids cgroup (local backend) or
// the container's pids limit (docker) is what does.
var (
	rlimitsNormal = map[string]uint64{
		"NOFILE": 4096, "NPROC": jail.PidsMax, "FSIZE": 8 << 30, "CORE": 0,
	}
	rlimitsLockdown = map[string]uint64{
		"NOFILE": 1024, "NPROC": jail.PidsMaxLockdown, "FSIZE": 1 << 30, "CORE": 0,
	}
	rlimitIDs = map[string]int{
		"NOFILE": unix.RLIMIT_NOFILE, "NPROC": unix.RLIMIT_NPROC, "FSIZE": unix.RLIMIT_FSIZE, "CORE": unix.RLIMIT_CORE,
	}
)

// Serve is `warden worker`: it runs inside the jail, sets its rlimits,
// applies Landlock, opens the workspace through internal/workspace (so
// confinement holds inside the jail too) and serves the protocol on in/out
// until in closes.
func Serve(ctx context.Context, specJSON string, in io.Reader, out io.Writer) error {
	spec, err := ParseSpec(specJSON)
	if err != nil {
		return err
	}
	if os.Getenv("WARDEN_SANDBOX") != "1" {
		return errors.New("warden worker runs only inside a warden jail")
	}
	// The worker's commands run as its user, in its jail: without this,
	// one could open /proc/WORKER/fd/1 (or 0) and write responses to the
	// host (or read its requests). A process that is not dumpable has its
	// /proc files out of reach of processes without CAP_SYS_PTRACE; the
	// commands it starts are dumpable again after their execve.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to make the worker undumpable: %w", err)
	}
	limits := rlimitsNormal
	if spec.Lockdown {
		limits = rlimitsLockdown
	}
	for name, v := range limits {
		if err := unix.Setrlimit(rlimitIDs[name], &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("failed to set RLIMIT_%s: %w", name, err)
		}
	}
	// What the jail's first process passed on beyond stdin, stdout and
	// stderr reaches no command (command.Local marks them again before
	// each one, for anything opened since).
	if err := command.CloseInherited(); err != nil {
		return fmt.Errorf("failed to keep inherited descriptors from the commands: %w", err)
	}
	reserveThreads(reservedThreads)
	// One scheduler slot. The worker's work is system calls (a command's
	// fork, exec and wait, a file's open and read) and a little encoding;
	// a second slot bought no parallelism it used, only a spare thread
	// that the runtime woke to look for work on every hand-off between
	// goroutines (a request read, its handler, os/exec's helpers), and a
	// monitor thread that kept waking every 20 µs while one slot sat in a
	// command's waitid. Measured, exec of /bin/true (bench/sandbox.sh with
	// CPU=1): 7–10% less CPU in the whole tree through the worker at load
	// 9–18 on 2 cores, about 1% at load 3–4.
	// A command's wait still gives the slot up: the monitor hands it on
	// once the wait outlasts two of its ticks, and reads during a running
	// command were measured no slower (BenchmarkReadFile4KWhileExec).
	runtime.GOMAXPROCS(1)
	if err := writeGitIgnore(spec.GitIgnore); err != nil {
		return err
	}
	root, err := workspace.Open(spec.Workspace, &workspace.Options{Mask: spec.Mask, Protected: spec.Protected})
	if err != nil {
		return err
	}
	defer root.Close()
	ll, err := applyLandlock(spec)
	if err != nil {
		return err
	}
	if spec.Seccomp {
		if err := installSeccomp(spec.Lockdown); err != nil {
			return err
		}
	}
	hello := proto.Hello{PID: os.Getpid(), Landlock: ll, Rlimits: limits}
	hello.Seccomp, hello.NoNewPrivs = selfSeccomp()
	s := &Server{
		Root: root, Runner: &command.Local{Root: root.Dir(), DefaultTimeout: proto.DefaultExecTimeout},
		Env: os.Environ(), Fixed: spec.Egress, Hello: hello, Streams: true, StreamStderr: os.Stderr,
	}
	in, out, release := pollable(in, out)
	defer release()
	if len(spec.Egress) > 0 {
		// network = "allowlist": the proxy's ports on the jail's loopback,
		// handing each connection to warden on the host. Without them the
		// jail has no network at all, so a relay that cannot start is an
		// error, never a reason to go on without.
		r, err := relay.ListenJail()
		if err != nil {
			return fmt.Errorf("failed to start the egress relay: %w", err)
		}
		defer r.Close()
	}
	return s.Serve(ctx, in, out)
}

// pollable returns in and out as files the Go runtime waits on through
// its network poller, when they are pipes or sockets (as every backend
// gives them), and in and out unchanged otherwise.
//
// A read of a descriptor in blocking mode holds an OS thread and its
// scheduler slot for as long as the worker waits for the next request,
// which is most of its life. While a command runs, its wait holds the
// other slot (2 on a 2-core machine), and with both slots in system calls
// the runtime's monitor takes one back, again and again, and keeps itself
// waking every 20 µs: measured, about 30 context switches in the worker per
// exec of /bin/true against 8 in the same runner on the host, each one a
// wait for a core when the machine is busy. Through the poller, a
// goroutine waiting for a request holds no thread.
//
// The descriptors are duplicated, so that closing (or finalizing) what
// this returns leaves stdin and stdout open; O_NONBLOCK is a property of
// the open pipe, which in a jail only the worker reads (stdin) and writes
// (stdout). release puts them back in blocking mode.
func pollable(in io.Reader, out io.Writer) (io.Reader, io.Writer, func()) {
	var undo []func()
	conv := func(f *os.File) *os.File {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return nil
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
			return nil
		}
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return nil
		}
		nf := os.NewFile(uintptr(fd), f.Name())
		undo = append(undo, func() {
			unix.SetNonblock(fd, false)
			nf.Close()
		})
		return nf
	}
	if f, ok := in.(*os.File); ok {
		if nf := conv(f); nf != nil {
			in = nf
		}
	}
	if f, ok := out.(*os.File); ok && !sharesStderr(f) {
		if nf := conv(f); nf != nil {
			out = nf
		}
	}
	return in, out, func() {
		for _, u := range undo {
			u()
		}
	}
}

// sharesStderr reports whether f is the pipe or socket stderr is also
// written to: that one stays in blocking mode, since the runtime writes a
// crash report to stderr with a plain write that would fail with EAGAIN
// on a full pipe.
func sharesStderr(f *os.File) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Fstat(2, &b) != nil {
		return true
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// writeGitIgnore writes the patterns that hide the host's mask
// placeholders to git's per-user ignore file in the jail's own HOME, which
// holds nothing else of the user's. It is a convenience for git add -A, not
// a guard: the masks hold whatever a command does to the file.
func writeGitIgnore(patterns []string) error {
	home := os.Getenv("HOME")
	if len(patterns) == 0 || home == "" || !filepath.IsAbs(home) {
		return nil
	}
	dir := filepath.Join(home, ".config", "git")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to write git's ignore file in the jail: %w", err)
	}
	body := "# mask placeholders of warden's jail\n" + strings.Join(patterns, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "ignore"), []byte(body), 0o600); err != nil {
		return fmt.Errorf("failed to write git's ignore file in the jail: %w", err)
	}
	return nil
}

// ParseSpec reads the --spec argument of `warden worker`: one JSON object
// of known fields.
func ParseSpec(specJSON string) (*proto.WorkerSpec, error) {
	var spec proto.WorkerSpec
	dec := json.NewDecoder(strings.NewReader(specJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("failed to read worker spec: %w", err)
	}
	if dec.More() {
		return nil, errors.New("failed to read worker spec: trailing data")
	}
	return &spec, nil
}

func applyLandlock(spec *proto.WorkerSpec) (string, error) {
	switch spec.Landlock {
	case jail.LandlockOff:
		return "off", nil
	case jail.LandlockAuto, jail.LandlockOn:
	default:
		return "", fmt.Errorf("landlock mode %q is not auto, on or off", spec.Landlock)
	}
	st, err := landlock.Restrict(spec.Landlock, existing(spec.Writable), existing(spec.Readable))
	return st.String(), err
}

// existing keeps the paths that exist in the jail (rw_paths and ro_paths
// are bound with --bind-try: a missing one is simply absent).
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// selfSeccomp reads the seccomp mode and no_new_privs of this process.
func selfSeccomp() (string, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown", false
	}
	mode, nnp := "unknown", false
	for _, l := range bytes.Split(b, []byte("\n")) {
		k, v, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch string(k) {
		case "Seccomp":
			switch string(v) {
			case "0":
				mode = "none"
			case "1":
				mode = "strict"
			case "2":
				mode = "filter"
			}
		case "NoNewPrivs":
			nnp = string(v) == "1"
		}
	}
	return mode, nnp
}

// installSeccomp puts warden's filter on every thread of the worker
// (TSYNC: the Go runtime has several), so that it binds every command the
// worker starts.
func installSeccomp(lockdown bool) error {
	prog, err := seccomp.Program(&seccomp.Options{DenyNetwork: lockdown})
	if err != nil {
		return fmt.Errorf("failed to build the seccomp filter: %w", err)
	}
	raw, err := seccomp.Assemble(prog)
	if err != nil {
		return fmt.Errorf("failed to build the seccomp filter: %w", err)
	}
	if len(raw) == 0 || len(raw)%8 != 0 || len(raw)/8 > 0xffff {
		return fmt.Errorf("seccomp filter of %d bytes is not a sock_filter array", len(raw))
	}
	filter := make([]unix.SockFilter, len(raw)/8)
	for i := range filter {
		b := raw[i*8:]
		filter[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b[0:]), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:]),
		}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to set no_new_privs: %w", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("failed to install the seccomp filter: %w", errno)
	}
	return nil
}

// reservedThreads is how many OS threads the worker starts before it
// serves. The jail's process limit counts threads: under a fork bomb it is
// full, and a worker that then needed a new thread (a command blocks one in
// wait4) would die ("failed to create new OS thread") and take the jail's
// state with it. The Go runtime keeps idle threads and reuses them.
const reservedThreads = 16

// reserveThreads makes the runtime start n threads now: n goroutines each
// lock themselves to a thread and wait, so that every other goroutine
// needs another one, then all are let go. A thread whose goroutine unlocks
// it before ending goes back to the runtime's idle threads.
func reserveThreads(n int) {
	release := make(chan struct{})
	var locked, done sync.WaitGroup
	for range n {
		locked.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			locked.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	close(release)
	done.Wait()
}
