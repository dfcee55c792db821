package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/sandbox/sshjail"
)

// Worker is one running jail and the connection to the `warden worker`
// inside it. Its methods are safe for concurrent use; requests are
// multiplexed by id.
type Worker struct {
	opts     Options
	settings Settings
	proc     jail.Process
	stdin    io.WriteCloser
	info     Info

	wmu     sync.Mutex // serialises request lines
	mu      sync.Mutex
	pending map[uint64]chan *proto.Response
	nextID  atomic.Uint64
	dead    chan struct{} // closed when the worker has exited
	deadErr error
	closing atomic.Bool
	killed  atomic.Bool // Kill was called: nothing more is sent
	lastUse atomic.Int64
	once    sync.Once
	procs   procTable // streams (process.go)
	// egress is the jail's gateway under network = "allowlist", closed
	// once the worker has exited.
	egress *egress.Gateway
}

// Start builds the jail described by opts, with the backend its [sandbox]
// section names, and starts a worker in it. It never runs anything
// unjailed: a host that cannot build the jail, or a backend this build does
// not have, is an error.
func Start(ctx context.Context, opts *Options) (*Worker, error) {
	return start(ctx, opts, backends)
}

// start is Start with the backends of bs.
func start(ctx context.Context, opts *Options, bs map[string]Backend) (*Worker, error) {
	if opts == nil || opts.Sandbox == nil {
		return nil, errors.New("sandbox: Start needs a [sandbox] section")
	}
	o := *opts
	s, err := Resolve(o.Sandbox)
	if err != nil {
		return nil, err
	}
	if s.Forced != "" {
		o.logger().Error("sandbox forced into lockdown: "+s.Forced, "workspace", o.Workspace)
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
	// No descriptor this process inherited reaches the jail (bubblewrap,
	// the docker client and their children get only what they are given).
	if err := command.CloseInherited(); err != nil {
		return nil, fmt.Errorf("failed to keep inherited descriptors from the jail: %w", err)
	}
	b, ok := bs[s.Backend]
	if !ok {
		return nil, &HintError{
			Err:     fmt.Errorf("backend %s is not available in this build; warden never runs a sandboxed workspace unsandboxed: %w", s.Backend, ErrBackendUnavailable),
			HintMsg: `set backend = "local" in [sandbox] to use bubblewrap on this machine`,
		}
	}
	launch := o.launch(s)
	var gw *egress.Gateway
	var pids egressPIDs // the jail's processes, once the backend started it
	if s.Egress {
		if s.Backend == BackendSSH {
			return nil, sshjail.ErrNoEgress
		}
		if gw, err = startEgress(&o, s, pids.list); err != nil {
			return nil, fmt.Errorf("failed to start the jail's egress proxy: %w", err)
		}
		launch.Egress = &jail.Egress{Socket: gw.Socket, Bundle: gw.BundleFile, Env: gw.Env}
	}
	st, err := b.Start(ctx, launch)
	if err != nil {
		if gw != nil {
			gw.Close()
		}
		return nil, err
	}
	pids.set(st.Info)
	w := newWorker(o, s, st.Proc, st.Stdin, gw)
	err = w.handshake(ctx, st.Stdout, st.Info, st.WantSeccomp)
	if st.Finish != nil {
		err = st.Finish(&w.info, err)
	}
	if err != nil {
		if w.Alive() {
			w.startError(err)
		}
		return nil, err
	}
	o.logger().Info("sandbox worker started", "workspace", w.info.Workspace, "backend", w.info.Backend,
		"lockdown", w.info.Lockdown, "seccomp", w.info.Seccomp, "landlock", w.info.Landlock)
	return w, nil
}

// newWorker wraps a started backend process whose stdin is the worker's
// request stream, and its egress gateway (nil without one), which closes
// with it. The caller then calls handshake with its stdout.
func newWorker(o Options, s Settings, p jail.Process, stdin io.WriteCloser, gw *egress.Gateway) *Worker {
	w := &Worker{
		opts: o, settings: s, proc: p, stdin: stdin, egress: gw,
		pending: make(map[uint64]chan *proto.Response), dead: make(chan struct{}),
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
	resp, err := w.call(hctx, &proto.Request{Op: proto.OpPing}, w.opts.StartTimeout)
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
	return nil
}

// startError adds what the jail printed on stderr to a failed start.
func (w *Worker) startError(err error) error {
	w.Kill()
	<-w.dead
	if msg := w.deadMsg(); msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

func (w *Worker) deadMsg() string { return w.proc.StderrTail() }

func (w *Worker) wait() {
	err := w.proc.Wait()
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
		w.opts.logger().Error("sandbox worker died", "workspace", w.opts.Workspace, "error", err, "stderr", w.proc.StderrTail())
	}
}

func (w *Worker) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, tooLong, err := proto.ReadLine(br, proto.MaxLineBytes)
		if err != nil {
			return
		}
		var resp proto.Response
		bad := tooLong || json.Unmarshal(line, &resp) != nil
		if !bad && resp.ID == 0 && resp.Event != "" && w.procs.event(&resp) {
			continue
		}
		if bad || resp.ID == 0 {
			// The stream can no longer be trusted to line up with requests.
			w.opts.logger().Error("sandbox worker sent a malformed line; resetting it", "workspace", w.opts.Workspace)
			w.Kill()
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
func (w *Worker) call(ctx context.Context, req *proto.Request, timeout time.Duration) (*proto.Response, error) {
	select {
	case <-w.dead:
		return nil, fmt.Errorf("%w: %w", w.deadErr, errNotSent)
	default:
	}
	if w.killed.Load() {
		// Dying: its jail may still read a request it will never answer.
		return nil, fmt.Errorf("%w (killed): %w", ErrWorkerGone, errNotSent)
	}
	w.touch()
	defer w.touch()
	req.ID = w.nextID.Add(1)
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(line) > proto.MaxLineBytes {
		return nil, fmt.Errorf("request is larger than %d bytes", proto.MaxLineBytes)
	}
	ch := make(chan *proto.Response, 1)
	w.mu.Lock()
	w.pending[req.ID] = ch
	w.mu.Unlock()
	w.wmu.Lock()
	n, err := w.stdin.Write(append(line, '\n'))
	w.wmu.Unlock()
	if err != nil {
		w.forget(req.ID)
		w.Kill()
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
			return resp, proto.DecodeError(resp.Error)
		}
		return resp, nil
	case <-t.C:
		w.forget(req.ID)
		w.opts.logger().Error("sandbox worker timed out; resetting it", "workspace", w.opts.Workspace, "op", req.Op)
		w.Kill()
		return nil, fmt.Errorf("%s: %w after %v", req.Op, ErrTimeout, timeout)
	case <-ctx.Done():
		w.forget(req.ID)
		if req.Op == proto.OpExec {
			// The command may still run in the jail; only a reset stops it.
			w.Kill()
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
	if w.killed.Load() {
		return false
	}
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
	if w.egress != nil {
		i.Egress = egressInfo(w.egress)
	}
	return i
}

// Ping checks that the worker answers.
func (w *Worker) Ping(ctx context.Context) (*proto.Hello, error) {
	resp, err := w.call(ctx, &proto.Request{Op: proto.OpPing}, w.opts.RequestTimeout)
	if err != nil {
		return nil, err
	}
	return resp.Hello, nil
}

// Kill stops the worker at once, and everything running in its jail: what
// is in flight fails with ErrWorkerGone. The next Manager call starts a new
// worker.
func (w *Worker) Kill() {
	w.killed.Store(true)
	w.proc.Kill()
}

func (w *Worker) cleanup() {
	w.once.Do(func() {
		if err := w.proc.Cleanup(); err != nil {
			w.opts.logger().Error("sandbox cleanup", "error", err)
		}
		if w.egress != nil {
			w.egress.Close()
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
		w.Kill()
		<-w.dead
	}
	return nil
}
