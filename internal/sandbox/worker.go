package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/workspace"
)

// WorkerSpec is what the host tells `warden worker` about its jail. It is
// passed as one JSON argument; it holds no secrets.
type WorkerSpec struct {
	Workspace string   `json:"workspace"`
	Mask      []string `json:"mask,omitempty"`
	Protected []string `json:"protected,omitempty"`
	Lockdown  bool     `json:"lockdown,omitempty"`
	Landlock  string   `json:"landlock"`
	// Writable and Readable are the jail paths Landlock lets the worker
	// (and its commands) write, and read and execute, beyond the system
	// paths internal/sandbox/landlock always allows.
	Writable []string `json:"writable"`
	Readable []string `json:"readable,omitempty"`
	// Seccomp asks the worker to install warden's own seccomp filter on
	// itself (and so on everything it runs), on top of whatever filter its
	// jail already has: the docker backend's profile goes through
	// libseccomp, which drops system calls it does not know.
	Seccomp bool `json:"seccomp,omitempty"`
}

// Rlimits of the worker and everything it runs. NPROC binds only when the
// jail's user is not root on the host; see pidsCgroup for what does.
var (
	rlimitsNormal = map[string]uint64{
		"NOFILE": 4096, "NPROC": PidsMax, "FSIZE": 8 << 30, "CORE": 0,
	}
	rlimitsLockdown = map[string]uint64{
		"NOFILE": 1024, "NPROC": PidsMaxLockdown, "FSIZE": 1 << 30, "CORE": 0,
	}
	rlimitIDs = map[string]int{
		"NOFILE": unix.RLIMIT_NOFILE, "NPROC": unix.RLIMIT_NPROC, "FSIZE": unix.RLIMIT_FSIZE, "CORE": unix.RLIMIT_CORE,
	}
)

// ServeWorker is `warden worker`: it runs inside the jail, sets its rlimits,
// applies Landlock, opens the workspace through internal/workspace (so
// confinement holds inside the jail too) and serves the protocol on in/out
// until in closes.
func ServeWorker(ctx context.Context, specJSON string, in io.Reader, out io.Writer) error {
	var spec WorkerSpec
	dec := json.NewDecoder(strings.NewReader(specJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("failed to read worker spec: %w", err)
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
	hello := Hello{PID: os.Getpid(), Landlock: ll, Rlimits: limits}
	hello.Seccomp, hello.NoNewPrivs = selfSeccomp()
	s := &Server{
		Root: root, Runner: newRunner(root.Dir()), Env: os.Environ(),
		Hello: hello, Streams: true, StreamStderr: os.Stderr,
	}
	return s.Serve(ctx, in, out)
}

func applyLandlock(spec WorkerSpec) (string, error) {
	switch spec.Landlock {
	case LandlockOff:
		return "off", nil
	case LandlockAuto, LandlockOn:
	default:
		return "", fmt.Errorf("landlock mode %q is not auto, on or off", spec.Landlock)
	}
	if landlockRestrict == nil {
		if spec.Landlock == LandlockOn {
			return "", errors.New("landlock = \"on\" but this build has no Landlock layer; refusing to run without it")
		}
		return "unavailable: not built in", nil
	}
	return landlockRestrict(spec.Landlock, existing(spec.Writable), existing(spec.Readable))
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
	if seccompProgram == nil {
		return errors.New("the jail asked for warden's seccomp filter, and this build has none")
	}
	raw, err := seccompProgram(lockdown)
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
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("failed to set no_new_privs: %w", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("failed to install the seccomp filter: %w", errno)
	}
	return nil
}
