package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/command"
)

// The control endpoint lets other warden processes of the same user reach
// the workers a long-running `warden serve` holds: `warden exec` runs its
// command in the held worker instead of building a jail for the call, and
// `warden sandbox status` lists the workers. It is HTTP over a unix socket
// named serve-PID.sock in a private directory (see ControlDir).
//
// Who may connect: the directory is 0700 and the socket 0600, both owned
// by the user; on top of that every connection's SO_PEERCRED must show the
// server's uid and a process in the server's user and PID namespaces. A
// jailed command runs in namespaces of its own (bubblewrap --unshare-user
// and --unshare-pid; a docker container shares the host's user namespace
// but has a PID namespace of its own), so even a jail that could see the
// socket (a workspace holding the control directory) is refused. Commands sent here run through the same
// Manager.Runner as the server's own tool calls: inside the jail, never
// beside it.

const (
	controlPrefix = "serve-"
	controlSuffix = ".sock"
	// maxControlBody bounds a control request.
	maxControlBody = 1 << 20
	// maxControlArgs bounds the argument count of a remote exec.
	maxControlArgs = 4096
	// maxSocketPath is what fits in sockaddr_un.sun_path with its NUL.
	maxSocketPath = 107
)

// Response codes of the control protocol.
const (
	codeNotHeld    = "not_held"
	codeRefused    = "refused"
	codeBadRequest = "bad_request"
	codeFailed     = "failed"
)

var (
	// ErrNotHeld means no running warden serve holds the workspace with the
	// same sandbox options; the caller builds a jail of its own.
	ErrNotHeld = errors.New("no warden serve holds this workspace with these sandbox options")
	// ErrPeerRefused means the control endpoint refused a connection: another
	// user, or a process in another user namespace (a jail).
	ErrPeerRefused = errors.New("control connection refused")
)

// ControlDir is where control sockets live: $XDG_RUNTIME_DIR/warden, else
// $XDG_STATE_HOME/warden/run, else ~/.local/state/warden/run.
func ControlDir() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "warden"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "warden", "run"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("failed to find the control socket directory: %w (set XDG_RUNTIME_DIR)", err)
	}
	return filepath.Join(home, ".local", "state", "warden", "run"), nil
}

// OptionsFingerprint identifies the jail opts describe (everything a worker
// is started with but the workspace): a served worker is used only by a
// caller whose options have the same fingerprint.
func OptionsFingerprint(o *Options) string {
	sum := sha256.Sum256([]byte(fingerprint(o)))
	return hex.EncodeToString(sum[:])
}

// ControlRequest is a remote exec: one command in the worker of Workspace.
type ControlRequest struct {
	// Workspace is the absolute, symlink-free workspace directory.
	Workspace string `json:"workspace"`
	// Fingerprint is OptionsFingerprint of the caller's options.
	Fingerprint string   `json:"fingerprint"`
	Argv        []string `json:"argv"`
	// Cwd is workspace-relative ("" for the root); the worker confines it.
	Cwd       string `json:"cwd,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// DecodeControlRequest parses and checks a remote exec request. Anything it
// accepts is bounded: one JSON object, known fields, an absolute clean
// workspace, a SHA-256 fingerprint, 1 to 4096 arguments without NUL bytes,
// a local cwd and a timeout of at most MaxExecTimeout.
func DecodeControlRequest(b []byte) (*ControlRequest, error) {
	if len(b) > maxControlBody {
		return nil, fmt.Errorf("control request is larger than %d bytes", maxControlBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r ControlRequest
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("malformed control request: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed control request: data after the object")
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *ControlRequest) check() error {
	switch {
	case !filepath.IsAbs(r.Workspace) || filepath.Clean(r.Workspace) != r.Workspace || strings.ContainsRune(r.Workspace, 0):
		return fmt.Errorf("control request: workspace %q is not an absolute clean path", r.Workspace)
	case len(r.Fingerprint) != 2*sha256.Size || strings.Trim(r.Fingerprint, "0123456789abcdef") != "":
		return errors.New("control request: fingerprint is not a SHA-256 in hex")
	case len(r.Argv) == 0 || r.Argv[0] == "":
		return errors.New("control request: no command")
	case len(r.Argv) > maxControlArgs:
		return fmt.Errorf("control request: more than %d arguments", maxControlArgs)
	case r.Cwd != "" && (!filepath.IsLocal(r.Cwd) || strings.ContainsRune(r.Cwd, 0)):
		return fmt.Errorf("control request: cwd %q is not inside the workspace", r.Cwd)
	case r.TimeoutMS < 0 || r.TimeoutMS > MaxExecTimeout.Milliseconds():
		return fmt.Errorf("control request: timeout %d ms is not between 0 and %v", r.TimeoutMS, MaxExecTimeout)
	}
	for _, a := range r.Argv {
		if strings.ContainsRune(a, 0) {
			return errors.New("control request: an argument holds a NUL byte")
		}
	}
	return nil
}

// controlResponse is the body of every control answer.
type controlResponse struct {
	Result *command.Result `json:"result,omitempty"`
	Status *ServeStatus    `json:"status,omitempty"`
	Error  string          `json:"error,omitempty"`
	Code   string          `json:"code,omitempty"`
}

// ServeStatus is what a warden serve holds.
type ServeStatus struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Workspaces are the sandboxed workspaces it serves (a worker starts on
	// first use and stops when idle).
	Workspaces []string `json:"workspaces"`
	// Workers are the running workers.
	Workers []Info `json:"workers"`
}

// ControlTarget is one sandboxed workspace a server holds.
type ControlTarget struct {
	Options *Options
	Manager *Manager
}

type controlTarget struct {
	opts *Options
	m    *Manager
	fp   string
}

// ControlServer is the control endpoint of one warden serve process.
type ControlServer struct {
	path    string
	ln      *net.UnixListener
	srv     *http.Server
	log     *slog.Logger
	uid     int
	selfNS  string
	started time.Time
	targets map[string]controlTarget
	done    chan struct{}
	once    sync.Once
}

type peerKey struct{}

// ListenControl listens on dir/serve-PID.sock (dir "" means ControlDir)
// for requests about targets' workers, removing the sockets of warden
// processes that died. The caller closes the server before the managers.
func ListenControl(dir string, targets []ControlTarget, log *slog.Logger) (*ControlServer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if dir == "" {
		var err error
		if dir, err = ControlDir(); err != nil {
			return nil, err
		}
	}
	if err := prepareControlDir(dir); err != nil {
		return nil, err
	}
	removeStale(dir)
	self, err := namespacesOf("self")
	if err != nil {
		return nil, fmt.Errorf("failed to read this process's namespaces: %w", err)
	}
	c := &ControlServer{
		log: log, uid: os.Getuid(), selfNS: self, started: time.Now(),
		targets: map[string]controlTarget{}, done: make(chan struct{}),
	}
	for _, t := range targets {
		if t.Options == nil || t.Manager == nil {
			return nil, errors.New("sandbox: a control target needs options and a manager")
		}
		ws, err := resolveDir(t.Options.Workspace)
		if err != nil {
			return nil, err
		}
		if _, dup := c.targets[ws]; !dup {
			c.targets[ws] = controlTarget{opts: t.Options, m: t.Manager, fp: OptionsFingerprint(t.Options)}
		}
	}
	c.path = filepath.Join(dir, controlPrefix+strconv.Itoa(os.Getpid())+controlSuffix)
	if len(c.path) > maxSocketPath {
		return nil, fmt.Errorf("control socket path %s is longer than %d bytes; set XDG_RUNTIME_DIR to a shorter directory", c.path, maxSocketPath)
	}
	// A file with this process's pid is left by a dead process.
	if err := os.Remove(c.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to remove the stale control socket %s: %w", c.path, err)
	}
	c.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: c.path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("failed to listen on the control socket: %w", err)
	}
	c.ln.SetUnlinkOnClose(true)
	if err := os.Chmod(c.path, 0o600); err != nil {
		c.ln.Close()
		return nil, fmt.Errorf("failed to restrict the control socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/status", c.handleStatus)
	mux.HandleFunc("/v1/exec", c.handleExec)
	c.srv = &http.Server{
		Handler:           c.authorize(mux),
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, conn net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, c.checkConn(conn))
		},
	}
	go func() {
		defer close(c.done)
		if err := c.srv.Serve(c.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control endpoint stopped", "error", err)
		}
	}()
	log.Info("control endpoint listening", "socket", c.path, "workspaces", len(c.targets))
	return c, nil
}

// Path is the socket's path.
func (c *ControlServer) Path() string { return c.path }

// Close stops accepting requests, cancels those in flight (their commands
// are killed with their worker) and removes the socket.
func (c *ControlServer) Close() error {
	var err error
	c.once.Do(func() {
		err = c.srv.Close()
		<-c.done
		if e := os.Remove(c.path); e != nil && !errors.Is(e, os.ErrNotExist) && err == nil {
			err = e
		}
	})
	return err
}

func (c *ControlServer) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err, _ := r.Context().Value(peerKey{}).(error); err != nil {
			c.log.Warn("control endpoint refused a connection", "why", err)
			writeControl(w, http.StatusForbidden, controlResponse{Error: err.Error(), Code: codeRefused})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkConn reads the peer's credentials; nil means it may talk to us.
func (c *ControlServer) checkConn(conn net.Conn) error {
	cred, err := peerCred(conn)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPeerRefused, err)
	}
	return checkPeer(cred, c.uid, c.selfNS, peerNamespaces)
}

// checkPeer admits a peer of uid whose process is in the namespaces selfNS
// (as nsOf tells).
func checkPeer(cred *unix.Ucred, uid int, selfNS string, nsOf func(pid int32) (string, error)) error {
	if cred == nil {
		return fmt.Errorf("%w: no peer credentials", ErrPeerRefused)
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("%w: peer uid %d is not this server's uid %d", ErrPeerRefused, cred.Uid, uid)
	}
	if cred.Pid <= 0 {
		return fmt.Errorf("%w: the peer process is not visible from here", ErrPeerRefused)
	}
	ns, err := nsOf(cred.Pid)
	if err != nil {
		return fmt.Errorf("%w: cannot read the peer's namespaces: %v", ErrPeerRefused, err)
	}
	if ns != selfNS {
		return fmt.Errorf("%w: the peer (pid %d) runs in other namespaces (%s, a jail?)", ErrPeerRefused, cred.Pid, ns)
	}
	return nil
}

func peerNamespaces(pid int32) (string, error) {
	return namespacesOf(strconv.Itoa(int(pid)))
}

// namespacesOf names the user and PID namespaces of /proc/PROC.
func namespacesOf(proc string) (string, error) {
	var out []string
	for _, ns := range []string{"user", "pid"} {
		l, err := os.Readlink("/proc/" + proc + "/ns/" + ns)
		if err != nil {
			return "", err
		}
		out = append(out, l)
	}
	return strings.Join(out, " "), nil
}

func peerCred(conn net.Conn) (*unix.Ucred, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("not a unix socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

func (c *ControlServer) status() *ServeStatus {
	st := &ServeStatus{PID: os.Getpid(), Started: c.started, Workspaces: []string{}, Workers: []Info{}}
	seen := map[*Manager]bool{}
	for ws, t := range c.targets {
		st.Workspaces = append(st.Workspaces, ws)
		if !seen[t.m] {
			seen[t.m] = true
			st.Workers = append(st.Workers, t.m.List()...)
		}
	}
	sort.Strings(st.Workspaces)
	sort.Slice(st.Workers, func(i, j int) bool { return st.Workers[i].Workspace < st.Workers[j].Workspace })
	return st
}

func (c *ControlServer) handleStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeControl(w, http.StatusMethodNotAllowed, controlResponse{Error: "use GET", Code: codeBadRequest})
		return
	}
	writeControl(w, http.StatusOK, controlResponse{Status: c.status()})
}

func (c *ControlServer) handleExec(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeControl(w, http.StatusMethodNotAllowed, controlResponse{Error: "use POST", Code: codeBadRequest})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	if err != nil {
		writeControl(w, http.StatusBadRequest, controlResponse{Error: "failed to read the request: " + err.Error(), Code: codeBadRequest})
		return
	}
	req, err := DecodeControlRequest(body)
	if err != nil {
		writeControl(w, http.StatusBadRequest, controlResponse{Error: err.Error(), Code: codeBadRequest})
		return
	}
	t, ok := c.targets[req.Workspace]
	if !ok {
		writeControl(w, http.StatusNotFound, controlResponse{Error: "this server does not hold workspace " + req.Workspace, Code: codeNotHeld})
		return
	}
	if t.fp != req.Fingerprint {
		writeControl(w, http.StatusNotFound, controlResponse{Error: "this server holds workspace " + req.Workspace + " with other sandbox options", Code: codeNotHeld})
		return
	}
	c.log.Info("control: exec in the workspace's worker", "workspace", req.Workspace, "command", req.Argv[0])
	res, err := t.m.Runner(t.opts).Run(r.Context(), command.Spec{
		Argv: req.Argv, Dir: req.Cwd, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond,
	})
	if err != nil {
		writeControl(w, http.StatusInternalServerError, controlResponse{Error: err.Error(), Code: codeFailed})
		return
	}
	writeControl(w, http.StatusOK, controlResponse{Result: &res})
}

func writeControl(w http.ResponseWriter, code int, resp controlResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(resp)
}

// prepareControlDir creates dir (0700) and refuses one that is not a
// directory of this user, or that others can enter.
func prepareControlDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create the control socket directory: %w", err)
	}
	if err := checkControlDir(dir); err != nil {
		return err
	}
	return nil
}

// checkControlDir accepts only a real directory owned by this user that
// nobody else can enter.
func checkControlDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("control socket directory %s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("control socket directory %s is not owned by this user", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("control socket directory %s is open to other users (mode %v); chmod 700 it", dir, fi.Mode().Perm())
	}
	return nil
}

// Serve is a running warden serve found by FindServes.
type Serve struct {
	PID    int    `json:"pid"`
	Socket string `json:"socket"`
}

// FindServes lists the live control sockets in dir ("" means ControlDir),
// sorted by pid, removing those of processes that are gone. A missing
// directory means none; one that is not private to this user is an error.
func FindServes(dir string) ([]Serve, error) {
	if dir == "" {
		var err error
		if dir, err = ControlDir(); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err := checkControlDir(dir); err != nil {
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

func (s Serve) do(ctx context.Context, method, path string, body []byte) (int, *controlResponse, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://warden"+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out controlResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxLineBytes)).Decode(&out); err != nil {
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
func (s Serve) Exec(ctx context.Context, req *ControlRequest) (command.Result, error) {
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
// options, found in dir ("" means ControlDir). It returns the server's pid.
// An error wrapping ErrNotHeld means no server could take the command and
// it did not run; any other error came from a server that took it.
func ExecViaServe(ctx context.Context, dir string, opts *Options, spec command.Spec) (command.Result, int, error) {
	ws, err := resolveDir(opts.Workspace)
	if err != nil {
		return command.Result{}, 0, err
	}
	req := &ControlRequest{
		Workspace: ws, Fingerprint: OptionsFingerprint(opts), Argv: spec.Argv, Cwd: spec.Dir,
		TimeoutMS: min(spec.Timeout, MaxExecTimeout).Milliseconds(),
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
			opts.logger().Debug("warden serve cannot take the command", "pid", s.PID, "why", err)
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
