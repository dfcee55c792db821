package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// ackEvery is how many consumed stdout bytes the host acknowledges at once.
// It is below proto.StreamWindow, so a reader that keeps reading never stalls.
const ackEvery = proto.StreamWindow / 4

// Process is a long-lived process running in the jail, started by Spawn:
// its stdin and stdout cross the worker protocol as a stream. Its stderr
// goes to the worker's stderr (the host's debug log). It dies with the
// worker: when the worker is closed, reset or killed, and when warden dies.
type Process struct {
	w  *Worker
	id uint64

	mu       sync.Mutex
	cond     *sync.Cond
	buf      []byte // stdout received, not read yet
	consumed int64  // stdout read, not acknowledged yet
	exited   bool
	code     int
	err      error
	rclosed  bool
	done     chan struct{}

	wmu     sync.Mutex // one stdin write at a time: the worker queues few
	wclosed bool
}

// procTable is the host's view of a worker's streams. Its methods run on
// the worker's read loop and never block on a process's consumer.
type procTable struct {
	mu   sync.Mutex
	m    map[uint64]*Process
	dead error
}

func (t *procTable) add(p *Process) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead != nil {
		return t.dead
	}
	if t.m == nil {
		t.m = map[uint64]*Process{}
	}
	t.m[p.id] = p
	return nil
}

func (t *procTable) remove(id uint64) {
	t.mu.Lock()
	delete(t.m, id)
	t.mu.Unlock()
}

// live reports whether a stream is open (the worker is then not idle).
func (t *procTable) live() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m) > 0
}

// gone ends every stream of a worker that exited.
func (t *procTable) gone(err error) {
	t.mu.Lock()
	t.dead = err
	m := t.m
	t.m = nil
	t.mu.Unlock()
	for _, p := range m {
		p.finish(-1, err)
	}
}

// event takes one event line; false means the line breaks the protocol
// (and the worker is reset).
func (t *procTable) event(resp *proto.Response) bool {
	if resp.Stream == 0 {
		return false
	}
	t.mu.Lock()
	p := t.m[resp.Stream]
	t.mu.Unlock()
	switch resp.Event {
	case proto.EventStdout:
		return p == nil || p.deliver(resp.Data)
	case proto.EventExit:
		if resp.Exit == nil {
			return false
		}
		if p != nil {
			t.remove(p.id)
			p.finish(*resp.Exit, nil)
		}
		return true
	}
	return false
}

func (p *Process) deliver(data []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf)+len(data) > proto.StreamWindow+proto.StreamChunk {
		return false // the worker ignored the window
	}
	if !p.rclosed {
		p.buf = append(p.buf, data...)
		p.cond.Broadcast()
	}
	return true
}

func (p *Process) finish(code int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	p.exited, p.code, p.err = true, code, err
	p.cond.Broadcast()
	close(p.done)
}

// Spawn starts argv in the jail, in cwd (workspace-relative, "" for the
// workspace), with env filtered through the environment allowlist (nil: the
// jail's own environment). Nothing runs outside the jail.
func (w *Worker) Spawn(ctx context.Context, argv []string, cwd string, env []string) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("spawn: empty command")
	}
	select {
	case <-w.dead:
		return nil, w.deadErr
	default:
	}
	p := &Process{w: w, id: w.nextID.Add(1), done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	if err := w.procs.add(p); err != nil {
		return nil, err
	}
	if env != nil {
		env = jail.FilterEnv(env, w.opts.EnvAllowlist)
	}
	ch, err := w.send(&proto.Request{ID: p.id, Op: proto.OpSpawn, Argv: argv, Cwd: cwd, Env: env}, true)
	if err != nil {
		w.procs.remove(p.id)
		return nil, err
	}
	t := time.NewTimer(w.opts.RequestTimeout)
	defer t.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			<-w.dead
			return nil, w.deadErr
		}
		if resp.Error != nil {
			w.procs.remove(p.id)
			return nil, fmt.Errorf("failed to start %s in the jail: %w", argv[0], proto.DecodeError(resp.Error))
		}
		return p, nil
	case <-ctx.Done():
		// The process may start anyway: stop it when the answer comes.
		go func() {
			if resp, ok := <-ch; ok && resp.Error == nil {
				p.Kill()
			} else {
				w.procs.remove(p.id)
			}
		}()
		return nil, ctx.Err()
	case <-t.C:
		w.forget(p.id)
		w.opts.logger().Error("sandbox worker did not answer spawn; resetting it", "workspace", w.opts.Workspace)
		w.Kill()
		return nil, fmt.Errorf("%s: %w after %v", proto.OpSpawn, ErrTimeout, w.opts.RequestTimeout)
	}
}

// Spawn starts argv in the jail of the workspace of opts (see
// Worker.Spawn), starting the worker if needed.
func (m *Manager) Spawn(ctx context.Context, opts *Options, argv []string, cwd string, env []string) (*Process, error) {
	w, err := m.Get(ctx, opts)
	if err != nil {
		return nil, err
	}
	return w.Spawn(ctx, argv, cwd, env)
}

// send writes req (with a fresh id unless it has one) and, with wantResp,
// returns the channel its response comes on.
func (w *Worker) send(req *proto.Request, wantResp bool) (chan *proto.Response, error) {
	select {
	case <-w.dead:
		return nil, w.deadErr
	default:
	}
	w.touch()
	if req.ID == 0 {
		req.ID = w.nextID.Add(1)
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var ch chan *proto.Response
	if wantResp {
		ch = make(chan *proto.Response, 1)
		w.mu.Lock()
		w.pending[req.ID] = ch
		w.mu.Unlock()
	}
	w.wmu.Lock()
	_, err = w.stdin.Write(append(line, '\n'))
	w.wmu.Unlock()
	if err != nil {
		if wantResp {
			w.forget(req.ID)
		}
		w.Kill()
		return nil, fmt.Errorf("%w: %v", ErrWorkerGone, err)
	}
	return ch, nil
}

// Stdin is the process's standard input; closing it closes the process's.
func (p *Process) Stdin() io.WriteCloser { return stdinPipe{p} }

// Stdout is the process's standard output; closing it kills the process.
func (p *Process) Stdout() io.ReadCloser { return stdoutPipe{p} }

// Done is closed when the process has exited (or its worker is gone).
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit and returns its exit status (128+n
// for signal n); the error is set when the worker died first.
func (p *Process) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

// Kill kills the process and everything it started; it does not wait.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_, _ = p.w.send(&proto.Request{Op: proto.OpKill, Stream: p.id}, false)
}

// Close kills the process and waits (up to 5 s) for it to be gone.
func (p *Process) Close() error {
	p.Kill()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("the jailed process did not exit after kill")
	}
	return nil
}

type stdinPipe struct{ p *Process }

func (s stdinPipe) Write(b []byte) (int, error) {
	p := s.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.wclosed {
		return 0, os.ErrClosed
	}
	n := 0
	for n < len(b) {
		chunk := b[n:min(len(b), n+proto.StreamChunk)]
		if err := p.stdinReq(&proto.Request{Op: proto.OpStdin, Stream: p.id, Data: chunk}); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, nil
}

func (s stdinPipe) Close() error {
	p := s.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.wclosed {
		return nil
	}
	p.wclosed = true
	err := p.stdinReq(&proto.Request{Op: proto.OpStdin, Stream: p.id, EOF: true})
	if errors.Is(err, ErrProcessExited) {
		return nil
	}
	return err
}

// stdinReq sends one stdin request and waits until the worker wrote it,
// the process exited or the worker is gone.
func (p *Process) stdinReq(req *proto.Request) error {
	select {
	case <-p.done:
		return ErrProcessExited
	default:
	}
	ch, err := p.w.send(req, true)
	if err != nil {
		return err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return p.w.deadErr
		}
		if resp.Error != nil {
			select {
			case <-p.done:
				return ErrProcessExited
			default:
			}
			return proto.DecodeError(resp.Error)
		}
		return nil
	case <-p.done:
		p.w.forget(req.ID)
		return ErrProcessExited
	}
}

type stdoutPipe struct{ p *Process }

func (s stdoutPipe) Read(b []byte) (int, error) {
	p := s.p
	p.mu.Lock()
	for len(p.buf) == 0 && !p.exited && !p.rclosed {
		p.cond.Wait()
	}
	if p.rclosed {
		p.mu.Unlock()
		return 0, os.ErrClosed
	}
	if len(p.buf) == 0 {
		p.mu.Unlock()
		return 0, io.EOF
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	if len(p.buf) == 0 {
		p.buf = nil
	}
	p.consumed += int64(n)
	var ack int64
	if p.consumed >= ackEvery && !p.exited {
		ack, p.consumed = p.consumed, 0
	}
	p.mu.Unlock()
	if ack > 0 {
		_, _ = p.w.send(&proto.Request{Op: proto.OpAck, Stream: p.id, Ack: ack}, false)
	}
	return n, nil
}

func (s stdoutPipe) Close() error {
	p := s.p
	p.mu.Lock()
	p.rclosed, p.buf = true, nil
	p.cond.Broadcast()
	p.mu.Unlock()
	p.Kill()
	return nil
}
