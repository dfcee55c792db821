package jailworker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// streamDrain is how long the worker keeps reading the stdout of a process
// that exited: a child it left behind (setsid) may hold the pipe open.
const streamDrain = 2 * time.Second

// streamTable is the worker's live streams.
type streamTable struct {
	mu     sync.Mutex
	m      map[uint64]*wstream
	closed bool
	wg     sync.WaitGroup
	thread procThread
}

// wstream is one spawned process, worker side.
type wstream struct {
	id     uint64
	cmd    *exec.Cmd
	stdin  *os.File // write end of the process's stdin
	stdout *os.File // read end of the process's stdout
	in     chan *proto.Request
	done   chan struct{} // closed once the exit event is written
	thread *procThread

	mu      sync.Mutex
	cond    *sync.Cond
	unacked int64
	killed  bool
	exited  atomic.Bool
}

// stop kills every stream and refuses new ones.
func (t *streamTable) stop() {
	t.mu.Lock()
	t.closed = true
	live := make([]*wstream, 0, len(t.m))
	for _, st := range t.m {
		live = append(live, st)
	}
	t.mu.Unlock()
	for _, st := range live {
		st.kill()
	}
}

// wait waits for every stream to write its exit line, then ends the
// streams' thread.
func (t *streamTable) wait() {
	t.wg.Wait()
	t.thread.stop()
}

func (t *streamTable) get(id uint64) *wstream {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *streamTable) remove(id uint64) {
	t.mu.Lock()
	delete(t.m, id)
	t.mu.Unlock()
}

// streamOp serves stdin, ack and kill without blocking: it returns their
// answer, or nil for a stdin write queued to the stream's writer (which
// answers it once written). handled is false for any other op.
func (s *Server) streamOp(req *proto.Request) (resp *proto.Response, handled bool) {
	switch req.Op {
	case proto.OpStdin, proto.OpAck, proto.OpKill:
	default:
		return nil, false
	}
	st := s.streams.get(req.Stream)
	if st == nil {
		return &proto.Response{ID: req.ID, Error: &proto.WireError{Kind: proto.KindNotExist, Message: fmt.Sprintf("no stream %d", req.Stream)}}, true
	}
	switch req.Op {
	case proto.OpStdin:
		if len(req.Data) > proto.StreamChunk {
			return proto.BadRequest(req.ID, "stdin chunk of %d bytes is larger than %d", len(req.Data), proto.StreamChunk), true
		}
		select {
		case st.in <- req:
			return nil, true
		default:
			return proto.BadRequest(req.ID, "more than %d stdin writes of stream %d are waiting", proto.StreamStdinQueue, req.Stream), true
		}
	case proto.OpAck:
		if req.Ack < 0 || req.Ack > proto.StreamWindow+proto.StreamChunk {
			return proto.BadRequest(req.ID, "ack of %d bytes is out of range", req.Ack), true
		}
		st.mu.Lock()
		st.unacked = max(0, st.unacked-req.Ack)
		st.cond.Broadcast()
		st.mu.Unlock()
	case proto.OpKill:
		st.kill()
	}
	return &proto.Response{ID: req.ID, OK: true}, true
}

// spawn starts the process of a spawn request and answers it; the stream
// then runs on its own goroutines until the process is gone and its exit
// line is written.
func (s *Server) spawn(req *proto.Request, w *lineWriter) {
	st, err := s.startStream(req)
	if err != nil {
		w.write(&proto.Response{ID: req.ID, Error: proto.EncodeError(err)})
		return
	}
	go st.writeStdin(w)
	w.write(&proto.Response{ID: req.ID, OK: true, Stream: st.id})
	// Events follow the answer, so the client knows the stream first.
	pumped := make(chan struct{})
	go func() { st.pump(w); close(pumped) }()
	go func() {
		defer s.streams.wg.Done()
		st.waitExit(w, pumped)
		s.streams.remove(st.id)
		close(st.done)
	}()
}

func (s *Server) startStream(req *proto.Request) (*wstream, error) {
	if !s.Streams {
		return nil, errors.New("spawn is not available in this worker")
	}
	if len(req.Argv) == 0 || req.Shell != "" {
		return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindBadRequest, Message: "spawn needs argv (and no shell)"}}
	}
	dir, err := s.Root.DirPath(req.Cwd)
	if err != nil {
		return nil, err
	}
	env := s.env(req.Env)
	path, args := req.Argv[0], req.Argv
	if s.testOnlySpawnExe != "" {
		path, args = s.testOnlySpawnExe, []string{s.testOnlySpawnExe}
	} else if !strings.Contains(path, "/") {
		if path, err = command.LookPath(path, dir, env); err != nil {
			return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindExec, Message: fmt.Sprintf("%s: command not found", req.Argv[0])}}
		}
	}

	t := &s.streams
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, errors.New("the worker is shutting down")
	case t.m[req.ID] != nil:
		return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindBadRequest, Message: fmt.Sprintf("stream %d exists", req.ID)}}
	case len(t.m) >= proto.MaxStreams:
		return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindTooLarge, Message: fmt.Sprintf("more than %d streams", proto.MaxStreams)}}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: path, Args: args, Dir: dir, Env: append([]string{}, env...),
		Stdin: inR, Stdout: outW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if s.StreamStderr != nil {
		cmd.Stderr = s.StreamStderr
	}
	if err := command.CloseInherited(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("failed to keep inherited descriptors from the process: %w", err)
	}
	t.thread.do(func() { err = cmd.Start() })
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindExec, Message: err.Error()}}
	}
	st := &wstream{id: req.ID, cmd: cmd, stdin: inW, stdout: outR,
		in: make(chan *proto.Request, proto.StreamStdinQueue), done: make(chan struct{}), thread: &t.thread}
	st.cond = sync.NewCond(&st.mu)
	if t.m == nil {
		t.m = map[uint64]*wstream{}
	}
	t.m[st.id] = st
	t.wg.Add(1)
	return st, nil
}

// writeStdin serves the stream's stdin requests in order until it is gone.
func (st *wstream) writeStdin(w *lineWriter) {
	for {
		select {
		case <-st.done:
			return
		case req := <-st.in:
			var err error
			if len(req.Data) > 0 {
				_, err = st.stdin.Write(req.Data)
			}
			if err == nil && req.EOF {
				err = st.stdin.Close()
			}
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
				w.write(&proto.Response{ID: req.ID, Error: &proto.WireError{Kind: proto.KindClosed, Message: proto.ErrProcessExited.Error()}})
				continue
			}
			if err != nil {
				w.write(&proto.Response{ID: req.ID, Error: &proto.WireError{Kind: proto.KindOther, Message: "failed to write to the process: " + err.Error()}})
				continue
			}
			w.write(&proto.Response{ID: req.ID, OK: true})
		}
	}
}

// pump sends the process's stdout as events, never more than proto.StreamWindow
// bytes ahead of the client's acks. After a kill it stops reading.
func (st *wstream) pump(w *lineWriter) {
	defer st.stdout.Close()
	buf := make([]byte, proto.StreamChunk)
	for {
		st.mu.Lock()
		for st.unacked >= proto.StreamWindow && !st.killed {
			st.cond.Wait()
		}
		killed := st.killed
		st.mu.Unlock()
		if killed {
			return
		}
		if st.exited.Load() {
			st.stdout.SetReadDeadline(time.Now().Add(streamDrain))
		}
		n, err := st.stdout.Read(buf)
		if n > 0 {
			st.mu.Lock()
			st.unacked += int64(n)
			st.mu.Unlock()
			w.write(&proto.Response{Stream: st.id, Event: proto.EventStdout, Data: buf[:n]})
		}
		if err != nil {
			return
		}
	}
}

// waitExit reaps the process, kills what it left in its group, waits for
// the pump and writes the exit event.
func (st *wstream) waitExit(w *lineWriter, pumped <-chan struct{}) {
	_ = st.cmd.Wait() // the status is in ProcessState
	killGroupOn(st.thread, st.cmd.Process.Pid)
	st.exited.Store(true)
	// Wake a pump blocked on a pipe some escaped child still holds.
	st.stdout.SetReadDeadline(time.Now().Add(streamDrain))
	<-pumped
	st.stdin.Close()
	code := exitStatus(st.cmd.ProcessState)
	w.write(&proto.Response{Stream: st.id, Event: proto.EventExit, Exit: &code})
}

// kill stops the process group and the pump.
func (st *wstream) kill() {
	st.mu.Lock()
	st.killed = true
	st.cond.Broadcast()
	st.mu.Unlock()
	st.thread.do(func() { syscall.Kill(-st.cmd.Process.Pid, syscall.SIGKILL) })
}

// procThread is one OS thread on which a worker starts and signals its
// stream processes. Landlock before ABI 8 restricts each thread of the
// worker on its own, so each thread is a domain of its own, and its signal
// scoping (ABI 6+) refuses with EPERM a kill sent from another thread than
// the one that forked the process. On one thread, a kill always reaches.
// The thread ends (and takes any process it started with it, through
// Pdeathsig) when the table is done.
type procThread struct {
	once sync.Once
	ch   chan func()
	end  sync.Once
}

func (pt *procThread) do(f func()) {
	pt.once.Do(func() {
		pt.ch = make(chan func())
		go func() {
			// Never unlocked: when the loop ends, the thread exits.
			runtime.LockOSThread()
			for f := range pt.ch {
				f()
			}
		}()
	})
	done := make(chan struct{})
	pt.ch <- func() { defer close(done); f() }
	<-done
}

func (pt *procThread) stop() {
	pt.end.Do(func() {
		pt.once.Do(func() {}) // never started: nothing to stop
		if pt.ch != nil {
			close(pt.ch)
		}
	})
}

// killGroupOn is killGroup with each signal sent from thread.
func killGroupOn(thread *procThread, pgid int) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		thread.do(func() { err = syscall.Kill(-pgid, syscall.SIGKILL) })
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exitStatus is the status of a reaped process, 128+n for signal n.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
