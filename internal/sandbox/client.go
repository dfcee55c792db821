package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/config"
)

// Options configure a worker. The zero value of every field but Workspace
// and Sandbox is a safe default.
type Options struct {
	// Workspace is the workspace directory.
	Workspace string
	// Sandbox is the workspace's [sandbox] section (see Resolve).
	Sandbox *config.Sandbox
	// Mask and Protected are security.mask and security.protected; the
	// workspace defaults and sandbox.mask are added to them.
	Mask, Protected []string
	// EnvAllowlist names host variables passed into the jail (commands.env_allowlist).
	EnvAllowlist []string
	// Executable is the warden binary re-executed as `warden worker`
	// (default os.Executable()).
	Executable string
	// Bwrap is the bubblewrap binary (default: "bwrap" on PATH).
	Bwrap string
	// HostEnv is the host environment the allowlist picks from (default os.Environ()).
	HostEnv []string
	// Logger receives the worker's stderr and lifecycle events (default: discard).
	Logger *slog.Logger
	// StartTimeout bounds the jail's start and handshake (default 15 s).
	StartTimeout time.Duration
	// RequestTimeout bounds a file request (default 60 s); exec requests
	// get their own timeout plus a grace period.
	RequestTimeout time.Duration

	// stdio, when set, becomes the local jail's stdin and stdout: the
	// protocol passes straight through to another peer (see ServeJail).
	stdio *jailStdio
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Info describes a running worker (for `warden sandbox status`).
type Info struct {
	Workspace string        `json:"workspace"`
	Backend   string        `json:"backend"`
	Lockdown  bool          `json:"lockdown"`
	Forced    string        `json:"lockdown_forced_by,omitempty"`
	Network   bool          `json:"network"`
	Seccomp   string        `json:"seccomp"`
	Landlock  string        `json:"landlock"`
	PidsMax   int           `json:"pids_max,omitempty"`
	PID       int           `json:"pid"`
	Started   time.Time     `json:"started"`
	Uptime    time.Duration `json:"uptime_ns"`
	Masked    int           `json:"masked_paths"`
	// Detail is what a backend adds: the container, or the remote host and
	// whether the worker there runs under bubblewrap.
	Detail string `json:"detail,omitempty"`
}

// Worker is one running jail and the connection to the `warden worker`
// inside it. Its methods are safe for concurrent use; requests are
// multiplexed by id.
type Worker struct {
	opts     Options
	settings Settings
	proc     process
	stdin    io.WriteCloser
	info     Info
	// cmd and cg are the local backend's bwrap process and pids cgroup
	// (nil for other backends).
	cmd *exec.Cmd
	cg  *pidsCgroup

	wmu     sync.Mutex // serialises request lines
	mu      sync.Mutex
	pending map[uint64]chan *Response
	nextID  atomic.Uint64
	dead    chan struct{} // closed when the worker has exited
	deadErr error
	closing atomic.Bool
	lastUse atomic.Int64
	once    sync.Once
	procs   procTable // streams (streamhost.go)
}

// Start builds the jail described by opts and starts a worker in it. It
// never runs anything unjailed: a host that cannot build the jail, or a
// backend this build does not have, is an error.
func Start(ctx context.Context, opts *Options) (w *Worker, err error) {
	if opts == nil || opts.Sandbox == nil {
		return nil, errors.New("sandbox: Start needs a [sandbox] section")
	}
	o := *opts
	s, err := Resolve(o.Sandbox)
	if err != nil {
		return nil, err
	}
	log := o.logger()
	if s.Forced != "" {
		log.Error("sandbox forced into lockdown: "+s.Forced, "workspace", o.Workspace)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 15 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 60 * time.Second
	}
	if o.HostEnv == nil {
		o.HostEnv = os.Environ()
	}
	switch s.Backend {
	case BackendLocal:
		return startLocal(ctx, &o, s)
	default:
		start := backends[s.Backend]
		if start == nil {
			return nil, &HintError{
				Err:     fmt.Errorf("backend %s is not available in this build; warden never runs a sandboxed workspace unsandboxed: %w", s.Backend, ErrBackendUnavailable),
				HintMsg: `set backend = "local" in [sandbox] to use bubblewrap on this machine`,
			}
		}
		return start(ctx, &o, s)
	}
}

// backends holds the start functions of the backends other than local,
// registered by their files' init.
var backends = map[string]func(ctx context.Context, o *Options, s Settings) (*Worker, error){}

// startLocal runs the worker under bubblewrap on this host.
func startLocal(ctx context.Context, op *Options, s Settings) (w *Worker, err error) {
	o := *op
	log := o.logger()
	bw, err := findBwrap(o.Bwrap)
	if err != nil {
		return nil, err
	}
	if err := o.resolvePaths(); err != nil {
		return nil, err
	}
	ws := o.Workspace

	m, err := prepareMasks(&o, s)
	if err != nil {
		return nil, err
	}
	plan := &Plan{
		Workspace: ws, Exe: o.Executable, Lockdown: s.Lockdown, Network: s.Network,
		System: hostSystem(), Etc: hostEtc(),
		MaskDirs: m.dirs, MaskFiles: m.files, Protect: m.protect,
		Env: JailEnv(o.HostEnv, o.EnvAllowlist),
	}
	if !s.NoGPU {
		plan.GPU = hostGPU()
	}
	writable := []string{"/tmp", JailHome, "/dev/shm", "/dev/pts"}
	readable := []string{JailExe, "/opt", "/etc"}
	if s.Lockdown {
		readable = append(readable, ws)
	} else {
		writable = append(writable, ws)
	}
	for _, p := range []struct {
		list []string
		dst  *[]string
	}{{s.RWPaths, &plan.RW}, {s.ROPaths, &plan.RO}} {
		for _, r := range p.list {
			abs := r
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(ws, r)
			}
			abs = filepath.Clean(abs)
			if abs == ws && !s.Lockdown {
				continue // the workspace is writable already
			}
			*p.dst = append(*p.dst, abs)
		}
	}
	writable = append(writable, plan.RW...)
	readable = append(readable, plan.RO...)

	// File descriptors handed to bubblewrap, numbered from 3.
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	addFD := func(f *os.File) int { files = append(files, f); return 2 + len(files) }
	seccompState := "not built"
	if seccompProgram != nil {
		prog, err := seccompProgram(s.Lockdown)
		if err != nil {
			return nil, fmt.Errorf("failed to build the seccomp filter: %w", err)
		}
		f, err := memfile("warden-seccomp", prog)
		if err != nil {
			return nil, err
		}
		plan.SeccompFD = addFD(f)
		seccompState = "filter passed to bwrap"
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer infoR.Close()
	plan.InfoFD = addFD(infoW)
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer blockW.Close()
	plan.BlockFD = addFD(blockR)
	for range m.files {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		fd := addFD(f)
		if plan.DataFD == 0 {
			plan.DataFD = fd
		}
	}
	spec, _ := json.Marshal(WorkerSpec{
		Workspace: ws, Mask: slices.Concat(o.Mask, s.Mask), Protected: o.Protected,
		Lockdown: s.Lockdown, Landlock: s.Landlock, Writable: writable, Readable: readable,
	})
	plan.Command = []string{JailExe, "worker", "--spec", string(spec)}
	args, err := plan.Args()
	if err != nil {
		return nil, err
	}

	pidsMax := PidsMax
	if s.Lockdown {
		pidsMax = PidsMaxLockdown
	}
	cg, cgErr := newPidsCgroup(pidsMax)
	if cgErr != nil {
		if s.Lockdown {
			return nil, fmt.Errorf("lockdown needs a process limit and %v", cgErr)
		}
		log.Warn("no pids cgroup; the jail's process count is bounded only by RLIMIT_NPROC, which does not bind root", "error", cgErr)
		pidsMax = 0
	}

	cmd := exec.Command(bw, args...)
	cmd.Env = []string{}
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, stdout, err := o.workerPipes(cmd)
	if err != nil {
		cg.destroy()
		return nil, err
	}
	stderr := &tailWriter{max: 8 << 10, log: log}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cg.destroy()
		return nil, fmt.Errorf("failed to start bwrap: %w", err)
	}
	for _, f := range files {
		f.Close()
	}
	files = nil
	w = newWorker(o, s, &localProc{cmd: cmd, cg: cg, stderr: stderr}, stdin)
	w.cmd, w.cg = cmd, cg
	started := w
	defer func() {
		if err != nil {
			started.kill()
		}
	}()
	// bwrap reports the jail's first process, then waits on --block-fd:
	// the process goes into the pids cgroup before it can fork anything.
	childPID, err := readChildPID(infoR, o.StartTimeout)
	if err != nil {
		return nil, w.startError(fmt.Errorf("failed to build the jail: %w", err))
	}
	if cg != nil {
		if err := cg.add(childPID); err != nil {
			return nil, w.startError(fmt.Errorf("failed to limit the jail's processes: %w", err))
		}
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		return nil, w.startError(fmt.Errorf("failed to start the jail: %w", err))
	}
	blockW.Close()
	info := Info{
		Workspace: ws, Backend: s.Backend, Lockdown: s.Lockdown, Forced: s.Forced, Network: s.Network && !s.Lockdown,
		Seccomp: seccompState, PidsMax: pidsMax, PID: cmd.Process.Pid, Masked: len(m.files) + len(m.dirs),
	}
	if o.stdio != nil {
		return w.passthrough(info), nil
	}
	if err := w.handshake(ctx, stdout, info, seccompProgram != nil); err != nil {
		return nil, err
	}
	return w, nil
}

// newWorker wraps a started backend process whose stdin is the worker's
// request stream. The caller then calls handshake with its stdout.
func newWorker(o Options, s Settings, p process, stdin io.WriteCloser) *Worker {
	w := &Worker{
		opts: o, settings: s, proc: p, stdin: stdin,
		pending: make(map[uint64]chan *Response), dead: make(chan struct{}),
	}
	go w.wait()
	return w
}

// handshake starts reading responses from stdout, pings the worker and
// records info. With wantSeccomp, a worker that reports no seccomp filter
// in force is refused. On error the worker has been killed.
func (w *Worker) handshake(ctx context.Context, stdout io.Reader, info Info, wantSeccomp bool) error {
	go w.read(stdout)
	hctx, cancel := context.WithTimeout(ctx, w.opts.StartTimeout)
	defer cancel()
	resp, err := w.call(hctx, &Request{Op: OpPing}, w.opts.StartTimeout)
	if err != nil {
		return w.startError(err)
	}
	if resp.Hello == nil {
		return w.startError(errors.New("the worker did not say hello"))
	}
	if resp.Hello.Seccomp == "filter" {
		info.Seccomp = "enforced"
	} else if wantSeccomp {
		return w.startError(fmt.Errorf("the seccomp filter is not in force in the worker (status %q); refusing to run", resp.Hello.Seccomp))
	}
	info.Landlock = resp.Hello.Landlock
	info.Started = time.Now()
	w.info = info
	w.touch()
	w.opts.logger().Info("sandbox worker started", "workspace", info.Workspace, "backend", info.Backend,
		"lockdown", info.Lockdown, "seccomp", info.Seccomp, "landlock", info.Landlock)
	return nil
}

// process is the host side of a running worker: what a backend started,
// and how to stop it and clean up after it.
type process interface {
	// kill stops the worker and everything it started, at once.
	kill()
	// wait blocks until the worker has exited.
	wait() error
	// stderrTail is the end of what the worker and its jail printed.
	stderrTail() string
	// cleanup releases host resources (cgroup, container) once it exited.
	cleanup() error
}

// localProc is bubblewrap on this host.
type localProc struct {
	cmd    *exec.Cmd
	cg     *pidsCgroup
	stderr *tailWriter
}

func (p *localProc) kill() {
	if p.cmd.Process != nil {
		// bwrap runs in its own process group; --die-with-parent and the
		// pid namespace take the jail down with it, the cgroup catches
		// anything left.
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *localProc) wait() error        { return p.cmd.Wait() }
func (p *localProc) stderrTail() string { return string(bytes.TrimSpace(p.stderr.tail())) }
func (p *localProc) cleanup() error {
	// Placeholders bubblewrap created for masks of missing paths stay:
	// removing one while another jail of this workspace has it mounted
	// would detach that mount and unmask the path there.
	return p.cg.destroy()
}

// startError adds what the jail printed on stderr to a failed start.
func (w *Worker) startError(err error) error {
	w.kill()
	<-w.dead
	if msg := w.deadMsg(); msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

func (w *Worker) deadMsg() string { return w.proc.stderrTail() }

func readChildPID(r *os.File, timeout time.Duration) (int, error) {
	r.SetReadDeadline(time.Now().Add(timeout))
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, fmt.Errorf("bwrap gave no child pid: %w", err)
	}
	if info.ChildPID <= 0 {
		return 0, errors.New("bwrap gave no child pid")
	}
	return info.ChildPID, nil
}

func memfile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("failed to create memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// findBwrap locates bubblewrap or explains how to get it.
func findBwrap(p string) (string, error) {
	if p == "" {
		p = "bwrap"
	}
	path, err := exec.LookPath(p)
	if err != nil {
		return "", &HintError{
			Err:     fmt.Errorf("bubblewrap (%s) is not installed, and warden never runs a sandboxed workspace unsandboxed: %w", p, ErrUnsupportedHost),
			HintMsg: "install it: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora); `warden doctor` checks the host",
		}
	}
	return path, nil
}

func (w *Worker) wait() {
	err := w.proc.wait()
	w.mu.Lock()
	if err == nil {
		err = errors.New("exited")
	}
	w.deadErr = fmt.Errorf("%w (%v)", ErrWorkerGone, err)
	for id, ch := range w.pending {
		close(ch)
		delete(w.pending, id)
	}
	w.mu.Unlock()
	w.procs.gone(w.deadErr)
	close(w.dead)
	w.cleanup()
	if !w.closing.Load() {
		w.opts.logger().Error("sandbox worker died", "workspace", w.opts.Workspace, "error", err, "stderr", w.proc.stderrTail())
	}
}

func (w *Worker) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, tooLong, err := readLine(br, MaxLineBytes)
		if err != nil {
			return
		}
		var resp Response
		bad := tooLong || json.Unmarshal(line, &resp) != nil
		if !bad && resp.ID == 0 && resp.Event != "" && w.procs.event(&resp) {
			continue
		}
		if bad || resp.ID == 0 {
			// The stream can no longer be trusted to line up with requests.
			w.opts.logger().Error("sandbox worker sent a malformed line; resetting it", "workspace", w.opts.Workspace)
			w.kill()
			return
		}
		w.mu.Lock()
		ch, ok := w.pending[resp.ID]
		delete(w.pending, resp.ID)
		w.mu.Unlock()
		if ok {
			ch <- &resp
		}
	}
}

// errNotSent marks a call that failed before its request left: the worker
// was already gone, so nothing of it can have run.
var errNotSent = errors.New("the request was not sent")

// call sends req and waits for its response, ctx's end or timeout. A
// timeout kills the worker: its state is unknown, so it is replaced.
func (w *Worker) call(ctx context.Context, req *Request, timeout time.Duration) (*Response, error) {
	select {
	case <-w.dead:
		return nil, fmt.Errorf("%w: %w", w.deadErr, errNotSent)
	default:
	}
	w.touch()
	defer w.touch()
	req.ID = w.nextID.Add(1)
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(line) > MaxLineBytes {
		return nil, fmt.Errorf("request is larger than %d bytes", MaxLineBytes)
	}
	ch := make(chan *Response, 1)
	w.mu.Lock()
	w.pending[req.ID] = ch
	w.mu.Unlock()
	w.wmu.Lock()
	n, err := w.stdin.Write(append(line, '\n'))
	w.wmu.Unlock()
	if err != nil {
		w.forget(req.ID)
		w.kill()
		if n == 0 {
			// Not a byte left (a pipe whose reader is gone): nothing ran.
			return nil, fmt.Errorf("%w: %v: %w", ErrWorkerGone, err, errNotSent)
		}
		return nil, fmt.Errorf("%w: %v", ErrWorkerGone, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			<-w.dead
			return nil, w.deadErr
		}
		if resp.Error != nil {
			return resp, decodeError(resp.Error)
		}
		return resp, nil
	case <-t.C:
		w.forget(req.ID)
		w.opts.logger().Error("sandbox worker timed out; resetting it", "workspace", w.opts.Workspace, "op", req.Op)
		w.kill()
		return nil, fmt.Errorf("%s: %w after %v", req.Op, ErrTimeout, timeout)
	case <-ctx.Done():
		w.forget(req.ID)
		if req.Op == OpExec {
			// The command may still run in the jail; only a reset stops it.
			w.kill()
		}
		return nil, ctx.Err()
	}
}

func (w *Worker) forget(id uint64) {
	w.mu.Lock()
	delete(w.pending, id)
	w.mu.Unlock()
}

func (w *Worker) touch() { w.lastUse.Store(time.Now().UnixNano()) }

// idleFor reports how long the worker has had nothing to do.
func (w *Worker) idleFor() time.Duration {
	w.mu.Lock()
	busy := len(w.pending) > 0
	w.mu.Unlock()
	if busy || w.procs.live() {
		return 0
	}
	return time.Since(time.Unix(0, w.lastUse.Load()))
}

// Alive reports whether the worker is still running.
func (w *Worker) Alive() bool {
	select {
	case <-w.dead:
		return false
	default:
		return true
	}
}

// Done is closed when the worker has exited.
func (w *Worker) Done() <-chan struct{} { return w.dead }

// Info describes the worker.
func (w *Worker) Info() Info {
	i := w.info
	i.Uptime = time.Since(i.Started).Round(time.Millisecond)
	return i
}

// Ping checks that the worker answers.
func (w *Worker) Ping(ctx context.Context) (*Hello, error) {
	resp, err := w.call(ctx, &Request{Op: OpPing}, w.opts.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return resp.Hello, nil
}

func (w *Worker) kill() { w.proc.kill() }

func (w *Worker) cleanup() {
	w.once.Do(func() {
		if err := w.proc.cleanup(); err != nil {
			w.opts.logger().Error("sandbox cleanup", "error", err)
		}
	})
}

// Close stops the worker: its input is closed so it finishes what is in
// flight, and after a grace period it is killed.
func (w *Worker) Close() error {
	w.closing.Store(true)
	w.wmu.Lock()
	w.stdin.Close()
	w.wmu.Unlock()
	select {
	case <-w.dead:
	case <-time.After(2 * time.Second):
		w.kill()
		<-w.dead
	}
	return nil
}

// tailWriter keeps the end of the worker's stderr and logs its lines.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
	log *slog.Logger
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	t.log.Debug("sandbox worker stderr", "text", string(bytes.TrimSpace(p)))
	return len(p), nil
}

func (t *tailWriter) tail() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.buf)
}
