package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// Serve is a running warden serve found by FindServes.
type Serve struct {
	PID    int    `json:"pid"`
	Socket string `json:"socket"`
}

// FindServes lists the live control sockets in dir ("" means Dir),
// sorted by pid, removing those of processes that are gone. A missing
// directory means none; one that is not private to this user is an error.
func FindServes(dir string) ([]Serve, error) {
	if dir == "" {
		var err error
		if dir, err = Dir(); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	removeStale(dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Serve
	for _, e := range ents {
		pid, ok := socketPID(e.Name())
		if !ok || e.Type()&os.ModeSocket == 0 {
			continue
		}
		out = append(out, Serve{PID: pid, Socket: filepath.Join(dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

func socketPID(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, controlPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, controlSuffix)
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0 && strconv.Itoa(pid) == s
}

// removeStale removes the sockets of this user whose process is gone.
func removeStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, ok := socketPID(e.Name())
		if !ok || e.Type()&os.ModeSocket == 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // alive (or not ours to signal, but then not ours to judge)
		}
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
}

// client talks HTTP over the socket and checks that the server is this
// user: a socket planted by someone else never sees a command line.
func (s Serve) client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", s.Socket)
			if err != nil {
				return nil, err
			}
			cred, err := peerCred(conn)
			if err == nil && int(cred.Uid) != os.Getuid() {
				err = fmt.Errorf("%w: the control socket %s is served by uid %d", ErrPeerRefused, s.Socket, cred.Uid)
			}
			if err != nil {
				conn.Close()
				return nil, err
			}
			return conn, nil
		},
		DisableKeepAlives: true,
	}}
}

func (s Serve) do(ctx context.Context, method, path string, body []byte) (int, *response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://warden"+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out response
	if err := json.NewDecoder(io.LimitReader(resp.Body, proto.MaxLineBytes)).Decode(&out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("warden serve (pid %d) sent a malformed answer: %w", s.PID, err)
	}
	return resp.StatusCode, &out, nil
}

// Status asks the server what it holds.
func (s Serve) Status(ctx context.Context) (*ServeStatus, error) {
	code, resp, err := s.do(ctx, http.MethodGet, "/v1/status", nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK || resp.Status == nil {
		return nil, fmt.Errorf("warden serve (pid %d): %s", s.PID, resp.Error)
	}
	return resp.Status, nil
}

// Exec runs req in the server's worker. ErrNotHeld means it does not hold
// the workspace with these options; ErrPeerRefused that it refused us.
func (s Serve) Exec(ctx context.Context, req *Request) (command.Result, error) {
	if err := req.check(); err != nil {
		return command.Result{}, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return command.Result{}, err
	}
	code, resp, err := s.do(ctx, http.MethodPost, "/v1/exec", body)
	if err != nil {
		return command.Result{}, err
	}
	switch {
	case code == http.StatusOK && resp.Result != nil:
		return *resp.Result, nil
	case resp.Code == codeNotHeld:
		return command.Result{}, fmt.Errorf("%w: %s", ErrNotHeld, resp.Error)
	case resp.Code == codeRefused:
		return command.Result{}, fmt.Errorf("%w by warden serve (pid %d): %s", ErrPeerRefused, s.PID, resp.Error)
	}
	return command.Result{}, fmt.Errorf("warden serve (pid %d): %s", s.PID, resp.Error)
}

// ExecViaServe runs spec (Argv, Dir, Timeout) in the worker of a running
// warden serve of this user that holds opts.Workspace with the same
// options, found in dir ("" means Dir). It returns the server's pid.
// An error wrapping ErrNotHeld means no server could take the command and
// it did not run; any other error came from a server that took it.
func ExecViaServe(ctx context.Context, dir string, opts *sandbox.Options, spec command.Spec) (command.Result, int, error) {
	ws, err := resolveDir(opts.Workspace)
	if err != nil {
		return command.Result{}, 0, err
	}
	req := &Request{
		Workspace: ws, Fingerprint: sandbox.OptionsFingerprint(opts), Argv: spec.Argv, Cwd: spec.Dir,
		TimeoutMS: min(spec.Timeout, proto.MaxExecTimeout).Milliseconds(),
	}
	if err := req.check(); err != nil {
		return command.Result{}, 0, err
	}
	serves, err := FindServes(dir)
	if err != nil {
		return command.Result{}, 0, fmt.Errorf("%w: %v", ErrNotHeld, err)
	}
	for _, s := range serves {
		res, err := s.Exec(ctx, req)
		switch {
		case err == nil:
			return res, s.PID, nil
		case ctx.Err() != nil:
			return command.Result{}, s.PID, ctx.Err()
		case errors.Is(err, ErrNotHeld), errors.Is(err, ErrPeerRefused), isDialError(err):
			logger(opts).Debug("warden serve cannot take the command", "pid", s.PID, "why", err)
			continue
		default:
			return command.Result{}, s.PID, err
		}
	}
	return command.Result{}, 0, ErrNotHeld
}

// isDialError reports an error of connecting (the request was not sent).
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func resolveDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("failed to resolve workspace %s: %w", dir, err)
	}
	return abs, nil
}

func logger(o *sandbox.Options) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}
