package jailworker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/workspace"
)

// Server serves the worker protocol for one workspace. It is what runs
// inside the jail (see Serve), and it does not trust its input: every
// line is bounded, every path goes through the workspace's confinement, and
// a malformed line gets an error response, never a crash.
//
// Concurrency: requests are multiplexed by id. Each request runs on a goroutine
// of its own while it runs (at most MaxInFlight at once; further lines wait to
// be read; see handlers), and
// responses are written whole, one line each, in completion order. A slow
// command therefore does not hold up a file read issued after it; requests
// in flight at the same time have no order between them, so a client that
// needs one (write, then read) waits for the first response.
type Server struct {
	Root *workspace.Root
	// Runner runs exec requests; nil refuses them.
	Runner command.Runner
	// Env is the environment of an exec request that brings none.
	Env []string
	// Fixed are set in every command's environment, over what the request
	// brings (the egress proxy's variables: a command has no other route).
	Fixed []string
	Hello proto.Hello
	// MaxInFlight bounds concurrent requests (default 32).
	MaxInFlight int
	// Streams allows spawn (long-lived processes whose stdin and stdout
	// cross the protocol, see stream.go); false refuses it.
	Streams bool
	// StreamStderr receives the stderr of spawned processes (nil: discarded).
	StreamStderr *os.File

	// testOnlySpawnExe, when set, is run in place of every spawned program.
	testOnlySpawnExe string
	streams          streamTable
}

// Serve reads requests from in and writes responses to out until in ends or
// ctx is done; it then waits for requests in flight (their commands are
// killed through ctx) and returns. It returns nil on a clean end of input.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := s.MaxInFlight
	if n <= 0 {
		n = 32
	}
	sem := make(chan struct{}, n)
	w := &lineWriter{w: bufio.NewWriter(out)}
	br := bufio.NewReaderSize(in, 64<<10)
	var wg sync.WaitGroup
	h := newHandlers(n)
	// On the way out: let the requests read finish (a spawn among them
	// starts its stream) and the goroutines that ran them end, kill every
	// stream, then wait for their last lines.
	defer s.streams.wait()
	defer s.streams.stop()
	defer h.stop()
	defer wg.Wait()
	for {
		line, tooLong, err := proto.ReadLine(br, proto.MaxLineBytes)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("failed to read request: %w", err)
		}
		if tooLong {
			w.write(&proto.Response{Error: &proto.WireError{Kind: proto.KindTooLarge, Message: fmt.Sprintf("request line is longer than %d bytes", proto.MaxLineBytes)}})
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, bad := parseRequest(line)
		if bad != nil {
			w.write(bad)
			continue
		}
		if resp, ok := s.streamOp(req); ok {
			// stdin, ack and kill never block: served here, in order.
			if resp != nil {
				w.write(resp)
			}
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		wg.Add(1)
		h.run(func() {
			defer wg.Done()
			defer func() { <-sem }()
			if req.Op == proto.OpSpawn {
				s.spawn(req, w)
				return
			}
			w.write(s.handle(ctx, req))
		})
	}
}

// handlers runs requests on goroutines that are kept for the next request
// once theirs is answered, at most max of them (the server's bound on
// requests in flight, so one is always free or about to be).
//
// A new goroutine starts on a small stack, and an exec grows it several
// times over on its way through os/exec: measured, about 7% of the
// worker's CPU time per exec of /bin/true went to copying stacks. A kept
// goroutine keeps its stack (until a garbage collection finds it mostly
// unused and halves it).
type handlers struct {
	work    chan func()
	max     int
	started int // goroutines started; only the serving loop reads and writes it
	wg      sync.WaitGroup
}

func newHandlers(max int) *handlers { return &handlers{work: make(chan func()), max: max} }

// run hands f to an idle goroutine, or starts one when none is idle and
// fewer than max were started, or else waits for one to come free: the
// caller holds one of max slots, so at most max-1 goroutines are busy.
func (h *handlers) run(f func()) {
	select {
	case h.work <- f:
		return
	default:
	}
	if h.started < h.max {
		h.started++
		h.wg.Add(1)
		go h.loop(f)
		return
	}
	h.work <- f
}

func (h *handlers) loop(f func()) {
	defer h.wg.Done()
	for ok := true; ok; f, ok = <-h.work {
		f()
	}
}

// stop ends the idle goroutines once no more work comes, and waits for them.
func (h *handlers) stop() {
	close(h.work)
	h.wg.Wait()
}

func parseRequest(line []byte) (*proto.Request, *proto.Response) {
	var req proto.Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the request")
	}
	if err != nil {
		// Answer with the id if one can be read, so the caller is not left waiting.
		id := req.ID
		if id == 0 {
			var probe struct {
				ID uint64 `json:"id"`
			}
			_ = json.Unmarshal(line, &probe)
			id = probe.ID
		}
		return nil, proto.BadRequest(id, "malformed request: %v", err)
	}
	if req.ID == 0 {
		return nil, proto.BadRequest(0, "request id must be a positive integer")
	}
	return &req, nil
}

type lineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (lw *lineWriter) write(resp *proto.Response) {
	b, err := json.Marshal(resp)
	if err == nil && len(b) > proto.MaxLineBytes {
		b, err = json.Marshal(&proto.Response{ID: resp.ID, Error: &proto.WireError{Kind: proto.KindTooLarge, Message: fmt.Sprintf("response is longer than %d bytes", proto.MaxLineBytes)}})
	}
	if err != nil {
		b, _ = json.Marshal(&proto.Response{ID: resp.ID, Error: &proto.WireError{Kind: proto.KindOther, Message: "failed to encode response: " + err.Error()}})
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.w.Write(b)
	lw.w.WriteByte('\n')
	lw.w.Flush()
}

// handle serves one request; it never panics out (a panic becomes an error
// response, so one bad request cannot take the worker down).
func (s *Server) handle(ctx context.Context, req *proto.Request) (resp *proto.Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = &proto.Response{ID: req.ID, Error: &proto.WireError{Kind: proto.KindOther, Message: fmt.Sprintf("internal error serving %s: %v", req.Op, r)}}
		}
	}()
	resp, err := s.dispatch(ctx, req)
	if err != nil {
		return &proto.Response{ID: req.ID, Error: proto.EncodeError(err)}
	}
	if resp == nil {
		resp = &proto.Response{}
	}
	resp.ID, resp.OK = req.ID, true
	return resp
}

func (s *Server) dispatch(ctx context.Context, req *proto.Request) (*proto.Response, error) {
	if req.Op != proto.OpPing && s.Root == nil {
		return nil, errors.New("no workspace is open")
	}
	switch req.Op {
	case proto.OpPing:
		h := s.Hello
		return &proto.Response{Hello: &h}, nil
	case proto.OpReadFile:
		limit := req.Limit
		if limit <= 0 || limit > proto.MaxFileBytes {
			limit = proto.MaxFileBytes
		}
		data, err := s.Root.ReadFile(req.Path, limit)
		if err != nil {
			return nil, err
		}
		return &proto.Response{Data: data}, nil
	case proto.OpWriteFile:
		perm := fs.FileMode(req.Perm).Perm()
		if req.Perm == 0 {
			perm = 0o644
		}
		if req.Real != "" {
			return nil, s.Root.WriteFileAt(req.Path, req.Real, req.Data, perm)
		}
		return nil, s.Root.WriteFile(req.Path, req.Data, perm)
	case proto.OpStat, proto.OpLstat:
		stat := s.Root.Stat
		if req.Op == proto.OpLstat {
			stat = s.Root.Lstat
		}
		st, err := stat(req.Path)
		if err != nil {
			return nil, err
		}
		wi := proto.InfoOf("", st)
		return &proto.Response{Info: &wi}, nil
	case proto.OpDirPath:
		p, err := s.Root.DirPath(req.Path)
		if err != nil {
			return nil, err
		}
		return &proto.Response{Path: p}, nil
	case proto.OpList:
		ents, err := s.Root.ReadDir(req.Path)
		if err != nil {
			return nil, err
		}
		out := make([]proto.WireInfo, 0, len(ents))
		for _, e := range ents {
			if st, err := e.Info(); err == nil {
				out = append(out, proto.InfoOf("", st))
			} else {
				out = append(out, proto.WireInfo{Name: e.Name(), Mode: e.Type()})
			}
		}
		return &proto.Response{Entries: out}, nil
	case proto.OpWalk:
		return s.walk(req)
	case proto.OpRemove:
		if req.Real != "" {
			return nil, s.Root.RemoveAt(req.Path, req.Real)
		}
		return nil, s.Root.Remove(req.Path)
	case proto.OpLocate:
		real, err := s.Root.Locate("write", req.Path)
		if err != nil {
			return nil, err
		}
		return &proto.Response{Path: real}, nil
	case proto.OpMkdir:
		perm := fs.FileMode(req.Perm).Perm()
		if req.Perm == 0 {
			perm = 0o755
		}
		return nil, s.Root.MkdirAll(req.Path, perm)
	case proto.OpRename:
		return nil, s.Root.Rename(req.Path, req.NewPath)
	case proto.OpExec:
		return s.exec(ctx, req)
	default:
		return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindBadRequest, Message: fmt.Sprintf("unknown op %q", req.Op)}}
	}
}

func (s *Server) walk(req *proto.Request) (*proto.Response, error) {
	var out []proto.WireInfo
	errFull := errors.New("full")
	err := s.Root.Walk(req.Path, func(p string, d fs.DirEntry, err error) error {
		if len(out) >= proto.MaxWalkEntries {
			return errFull
		}
		wi := proto.WireInfo{Path: p, Name: path.Base(p)}
		if d != nil {
			wi.Mode = d.Type()
			if st, ierr := d.Info(); ierr == nil {
				wi = proto.InfoOf(p, st)
			}
		}
		if err != nil {
			wi.Err = proto.EncodeError(err)
		}
		wi.NoEntry = d == nil
		out = append(out, wi)
		return nil
	})
	if errors.Is(err, errFull) {
		return nil, &workspace.PathError{Op: "list", Path: req.Path, Err: fmt.Errorf("%w: more than %d entries to walk", workspace.ErrTooLarge, proto.MaxWalkEntries)}
	}
	if err != nil {
		return nil, err
	}
	return &proto.Response{Entries: out}, nil
}

func (s *Server) exec(ctx context.Context, req *proto.Request) (*proto.Response, error) {
	if s.Runner == nil {
		return nil, errors.New("exec is not available in this worker")
	}
	if (len(req.Argv) == 0) == (req.Shell == "") {
		return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindBadRequest, Message: "exec needs exactly one of argv and shell"}}
	}
	// The workspace resolves the working directory (confined, not masked,
	// a directory); the runner gets the result.
	abs, err := s.Root.DirPath(req.Cwd)
	if err != nil {
		return nil, err
	}
	rel, _ := s.Root.Clean("exec", req.Cwd)
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = proto.DefaultExecTimeout
	}
	timeout = min(timeout, proto.MaxExecTimeout)
	res, err := s.Runner.Run(ctx, command.Spec{
		Argv: req.Argv, Shell: req.Shell, Dir: rel, AbsDir: abs, Env: s.env(req.Env),
		Timeout: timeout, MaxOutputLines: req.MaxOutputLines,
	})
	if err != nil {
		return nil, &proto.Error{W: &proto.WireError{Kind: proto.KindExec, Message: err.Error()}}
	}
	return &proto.Response{Exec: &res}, nil
}

// env is the environment of a command whose request brings req: req, or
// Env when it brings none, with Fixed set over it.
func (s *Server) env(req []string) []string {
	env := req
	if len(env) == 0 {
		env = s.Env
	}
	if len(s.Fixed) == 0 {
		return env
	}
	fixed := map[string]bool{}
	for _, kv := range s.Fixed {
		k, _, _ := strings.Cut(kv, "=")
		fixed[k] = true
	}
	out := make([]string, 0, len(env)+len(s.Fixed))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !fixed[k] {
			out = append(out, kv)
		}
	}
	return append(out, s.Fixed...)
}
