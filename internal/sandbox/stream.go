package sandbox

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
)

// Bounds of a stream (see "Streams" in proto.go).
const (
	// StreamChunk is the most one stdin request or stdout event carries.
	StreamChunk = 64 << 10
	// StreamWindow is how far the worker reads a process's stdout ahead of
	// what the client acknowledged.
	StreamWindow = 256 << 10
	// StreamStdinQueue is how many stdin writes of one stream may wait.
	StreamStdinQueue = 4
	// MaxStreams bounds the live streams of one worker.
	MaxStreams = 64
	// streamDrain is how long the worker keeps reading the stdout of a
	// process that exited: a child it left behind (setsid) may hold the
	// pipe open.
	streamDrain = 2 * time.Second
)

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
	in     chan *Request
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
func (s *Server) streamOp(req *Request) (resp *Response, handled bool) {
	switch req.Op {
	case OpStdin, OpAck, OpKill:
	default:
		return nil, false
	}
	st := s.streams.get(req.Stream)
	if st == nil {
		return &Response{ID: req.ID, Error: &WireError{Kind: KindNotExist, Message: fmt.Sprintf("no stream %d", req.Stream)}}, true
	}
	switch req.Op {
	case OpStdin:
		if len(req.Data) > StreamChunk {
			return badRequest(req.ID, "stdin chunk of %d bytes is larger than %d", len(req.Data), StreamChunk), true
		}
		select {
		case st.in <- req:
			return nil, true
		default:
			return badRequest(req.ID, "more than %d stdin writes of stream %d are waiting", StreamStdinQueue, req.Stream), true
		}
	case OpAck:
		if req.Ack < 0 || req.Ack > StreamWindow+StreamChunk {
			return badRequest(req.ID, "ack of %d bytes is out of range", req.Ack), true
		}
		st.mu.Lock()
		st.unacked = max(0, st.unacked-req.Ack)
		st.cond.Broadcast()
		st.mu.Unlock()
	case OpKill:
		st.kill()
	}
	return &Response{ID: req.ID, OK: true}, true
}

// spawn starts the process of a spawn request and answers it; the stream
// then runs on its own goroutines until the process is gone and its exit
// line is written.
func (s *Server) spawn(req *Request, w *lineWriter) {
	st, err := s.startStream(req)
	if err != nil {
		w.write(&Response{ID: req.ID, Error: encodeError(err)})
		return
	}
	go st.writeStdin(w)
	w.write(&Response{ID: req.ID, OK: true, Stream: st.id})
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

func (s *Server) startStream(req *Request) (*wstream, error) {
	if !s.Streams {
		return nil, errors.New("spawn is not available in this worker")
	}
	if len(req.Argv) == 0 || req.Shell != "" {
		return nil, &WireErrorValue{&WireError{Kind: KindBadRequest, Message: "spawn needs argv (and no shell)"}}
	}
	dir, err := s.Root.DirPath(req.Cwd)
	if err != nil {
		return nil, err
	}
	env := req.Env
	if len(env) == 0 {
		env = s.Env
	}
	path, args := req.Argv[0], req.Argv
	if s.testOnlySpawnExe != "" {
		path, args = s.testOnlySpawnExe, []string{s.testOnlySpawnExe}
	} else if !strings.Contains(path, "/") {
		if path, err = lookPath(path, env); err != nil {
			return nil, &WireErrorValue{&WireError{Kind: KindExec, Message: fmt.Sprintf("%s: command not found", req.Argv[0])}}
		}
	}

	t := &s.streams
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, errors.New("the worker is shutting down")
	case t.m[req.ID] != nil:
		return nil, &WireErrorValue{&WireError{Kind: KindBadRequest, Message: fmt.Sprintf("stream %d exists", req.ID)}}
	case len(t.m) >= MaxStreams:
		return nil, &WireErrorValue{&WireError{Kind: KindTooLarge, Message: fmt.Sprintf("more than %d streams", MaxStreams)}}
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
	t.thread.do(func() { err = cmd.Start() })
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, &WireErrorValue{&WireError{Kind: KindExec, Message: err.Error()}}
	}
	st := &wstream{id: req.ID, cmd: cmd, stdin: inW, stdout: outR,
		in: make(chan *Request, StreamStdinQueue), done: make(chan struct{}), thread: &t.thread}
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
				w.write(&Response{ID: req.ID, Error: &WireError{Kind: KindClosed, Message: ErrProcessExited.Error()}})
				continue
			}
			if err != nil {
				w.write(&Response{ID: req.ID, Error: &WireError{Kind: KindOther, Message: "failed to write to the process: " + err.Error()}})
				continue
			}
			w.write(&Response{ID: req.ID, OK: true})
		}
	}
}

// pump sends the process's stdout as events, never more than StreamWindow
// bytes ahead of the client's acks. After a kill it stops reading.
func (st *wstream) pump(w *lineWriter) {
	defer st.stdout.Close()
	buf := make([]byte, StreamChunk)
	for {
		st.mu.Lock()
		for st.unacked >= StreamWindow && !st.killed {
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
			w.write(&Response{Stream: st.id, Event: EventStdout, Data: buf[:n]})
		}
		if err != nil {
			return
		}
	}
}

// waitExit reaps the process, kills what it left in its group, waits for
// the pump and writes the exit event.
func (st *wstream) waitExit(w *lineWriter, pumped <-chan struct{}) {
	err := st.cmd.Wait()
	killGroupOn(st.thread, st.cmd.Process.Pid)
	st.exited.Store(true)
	// Wake a pump blocked on a pipe some escaped child still holds.
	st.stdout.SetReadDeadline(time.Now().Add(streamDrain))
	<-pumped
	st.stdin.Close()
	code := exitCode(st.cmd.ProcessState, err)
	w.write(&Response{Stream: st.id, Event: EventExit, Exit: &code})
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
