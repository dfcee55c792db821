package control

import (
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
	"sync"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox"
	"golang.org/x/sys/unix"
)

// Dir is where control sockets live: $XDG_RUNTIME_DIR/warden, else
// $XDG_STATE_HOME/warden/run, else ~/.local/state/warden/run.
func Dir() (string, error) {
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

// Target is one sandboxed workspace a server holds.
type Target struct {
	Options *sandbox.Options
	Manager *sandbox.Manager
}

type target struct {
	opts *sandbox.Options
	m    *sandbox.Manager
	fp   string
}

// Server is the control endpoint of one warden serve process.
type Server struct {
	path    string
	ln      *net.UnixListener
	srv     *http.Server
	log     *slog.Logger
	uid     int
	selfNS  string
	started time.Time
	targets map[string]target
	done    chan struct{}
	once    sync.Once
}

type peerKey struct{}

// Listen listens on dir/serve-PID.sock (dir "" means Dir)
// for requests about targets' workers, removing the sockets of warden
// processes that died. The caller closes the server before the managers.
func Listen(dir string, targets []Target, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if dir == "" {
		var err error
		if dir, err = Dir(); err != nil {
			return nil, err
		}
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	removeStale(dir)
	self, err := namespacesOf("self")
	if err != nil {
		return nil, fmt.Errorf("failed to read this process's namespaces: %w", err)
	}
	c := &Server{
		log: log, uid: os.Getuid(), selfNS: self, started: time.Now(),
		targets: map[string]target{}, done: make(chan struct{}),
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
			c.targets[ws] = target{opts: t.Options, m: t.Manager, fp: sandbox.OptionsFingerprint(t.Options)}
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
func (c *Server) Path() string { return c.path }

// Close stops accepting requests, cancels those in flight (their commands
// are killed with their worker) and removes the socket.
func (c *Server) Close() error {
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

func (c *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err, _ := r.Context().Value(peerKey{}).(error); err != nil {
			c.log.Warn("control endpoint refused a connection", "why", err)
			writeResponse(w, http.StatusForbidden, response{Error: err.Error(), Code: codeRefused})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkConn reads the peer's credentials; nil means it may talk to us.
func (c *Server) checkConn(conn net.Conn) error {
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

func (c *Server) status() *ServeStatus {
	st := &ServeStatus{PID: os.Getpid(), Started: c.started, Workspaces: []string{}, Workers: []sandbox.Info{}}
	seen := map[*sandbox.Manager]bool{}
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

func (c *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeResponse(w, http.StatusMethodNotAllowed, response{Error: "use GET", Code: codeBadRequest})
		return
	}
	writeResponse(w, http.StatusOK, response{Status: c.status()})
}

func (c *Server) handleExec(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeResponse(w, http.StatusMethodNotAllowed, response{Error: "use POST", Code: codeBadRequest})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	if err != nil {
		writeResponse(w, http.StatusBadRequest, response{Error: "failed to read the request: " + err.Error(), Code: codeBadRequest})
		return
	}
	req, err := DecodeRequest(body)
	if err != nil {
		writeResponse(w, http.StatusBadRequest, response{Error: err.Error(), Code: codeBadRequest})
		return
	}
	t, ok := c.targets[req.Workspace]
	if !ok {
		writeResponse(w, http.StatusNotFound, response{Error: "this server does not hold workspace " + req.Workspace, Code: codeNotHeld})
		return
	}
	if t.fp != req.Fingerprint {
		writeResponse(w, http.StatusNotFound, response{Error: "this server holds workspace " + req.Workspace + " with other sandbox options", Code: codeNotHeld})
		return
	}
	c.log.Info("control: exec in the workspace's worker", "workspace", req.Workspace, "command", req.Argv[0])
	res, err := t.m.Runner(t.opts).Run(r.Context(), command.Spec{
		Argv: req.Argv, Dir: req.Cwd, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond,
	})
	if err != nil {
		writeResponse(w, http.StatusInternalServerError, response{Error: err.Error(), Code: codeFailed})
		return
	}
	writeResponse(w, http.StatusOK, response{Result: &res})
}

func writeResponse(w http.ResponseWriter, code int, resp response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(resp)
}

// prepareDir creates dir (0700) and refuses one that is not a
// directory of this user, or that others can enter.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create the control socket directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	return nil
}

// checkDir accepts only a real directory owned by this user that
// nobody else can enter.
func checkDir(dir string) error {
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
