package jail

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress/relay"
)

// The contract between internal/sandbox and its backends: a backend is
// given a Launch, builds the jail, starts `warden worker` in it and returns
// a Started; internal/sandbox speaks the worker protocol over its pipes.

// Launch is everything a backend needs to start a jail.
type Launch struct {
	// Workspace is the workspace directory as configured (ResolvePaths
	// makes it absolute and symlink-free).
	Workspace string
	// Sandbox is the [sandbox] section, for the keys only one backend reads
	// (docker_image, memory_mb, remote_*).
	Sandbox *config.Sandbox
	// Settings is the section resolved (Resolve).
	Settings Settings
	// Mask and Protected are security.mask and security.protected; the
	// workspace defaults and sandbox.mask are added to them.
	Mask, Protected []string
	// EnvAllowlist names host variables passed into the jail.
	EnvAllowlist []string
	// Executable is the warden binary run as `warden worker` in the jail
	// (default os.Executable()).
	Executable string
	// Bwrap is the bubblewrap binary (default "bwrap" on PATH).
	Bwrap string
	// HostEnv is the environment the allowlist picks from.
	HostEnv []string
	// Logger receives the jail's stderr and lifecycle events.
	Logger *slog.Logger
	// StartTimeout bounds the start.
	StartTimeout time.Duration
	// Egress is set under network = "allowlist": the host side of the
	// jail's network, which the backend binds into the jail.
	Egress *Egress
	// MaskEvents, when set, is told each time a backend restores a mask
	// the host's changes removed, or kills the jail because it cannot (see
	// MaskGuard); the Logger is told too. It is called from the guard's
	// goroutine, which waits for it: it must not block.
	MaskEvents func(MaskEvent)
}

// Egress is what a jail under network = "allowlist" gets from the host's
// egress gateway (internal/egress): the unix socket its relay hands
// connections to, the CA bundle to trust ("" when no secret is brokered),
// and the variables every command gets (the proxy variables, the CA
// variables, the brokered secrets' placeholders — never a real secret).
type Egress struct {
	Socket string
	Bundle string
	Env    []string
}

// Egress's fixed paths in the jail (internal/egress/relay).
const (
	EgressSocket = relay.SocketPath
	EgressBundle = relay.BundlePath
)

// EgressEnv is the variables every command of the jail gets whatever
// environment its request brings (nil without egress).
func (l *Launch) EgressEnv() []string {
	if l.Egress == nil {
		return nil
	}
	return slices.Clone(l.Egress.Env)
}

// Log returns the launch's logger, or one that discards.
func (l *Launch) Log() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Env is the jail's environment (JailEnv of HostEnv and EnvAllowlist),
// with the egress variables.
func (l *Launch) Env() []string {
	return append(JailEnv(l.HostEnv, l.EnvAllowlist), l.EgressEnv()...)
}

// WorkerMask is what the worker's own workspace masks (its file tools):
// security.mask and sandbox.mask (the workspace adds its defaults).
func (l *Launch) WorkerMask() []string { return slices.Concat(l.Mask, l.Settings.Mask) }

// ResolvePaths makes Executable (default: this program) and Workspace
// absolute paths with every symbolic link resolved, as a backend binds them.
func (l *Launch) ResolvePaths() error {
	var err error
	if l.Executable == "" {
		if l.Executable, err = os.Executable(); err != nil {
			return fmt.Errorf("failed to find the warden executable: %w", err)
		}
	}
	if l.Executable, err = filepath.EvalSymlinks(l.Executable); err != nil {
		return fmt.Errorf("failed to find the warden executable: %w", err)
	}
	ws, err := filepath.Abs(l.Workspace)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		return fmt.Errorf("failed to open workspace %s: %w", l.Workspace, err)
	}
	l.Workspace = ws
	return nil
}

// Layout resolves the masks of the workspace (creating their placeholders)
// and computes the jail's layout. Call ResolvePaths first. Release the Hold
// once the jail has exited (or failed to start): the last jail of the
// workspace removes the placeholders.
func (l *Launch) Layout() (*Layout, *Hold, error) {
	m, h, err := PrepareMasks(l.Workspace, l.WorkerMask(), l.Protected)
	if err != nil {
		return nil, nil, err
	}
	layout, err := NewLayout(l.Workspace, l.Executable, l.Settings, m)
	if err != nil {
		h.Release()
		return nil, nil, err
	}
	if l.Egress != nil {
		layout.AddEgress(l.Egress)
	}
	return layout, h, nil
}

// Started is a jail a backend started, with the worker running in it.
type Started struct {
	Proc Process
	// Stdin carries requests to the worker, Stdout its answers.
	Stdin  io.WriteCloser
	Stdout io.Reader
	// Info describes the jail; the handshake adds what the worker says.
	Info Info
	// WantSeccomp refuses a worker that reports no seccomp filter in force.
	WantSeccomp bool
	// Finish, when set, is called after the handshake with its error (nil
	// when the worker answered and info is complete): it may explain a
	// failure in the backend's terms, or add to info.
	Finish func(info *Info, err error) error
}

// Process is the host side of a running jail: how to stop it and clean up
// after it.
type Process interface {
	// Kill stops the worker and everything it started, at once.
	Kill()
	// Wait blocks until the worker has exited.
	Wait() error
	// StderrTail is the end of what the worker and its jail printed.
	StderrTail() string
	// Cleanup releases host resources (cgroup, container) once it exited.
	Cleanup() error
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
	// Cgroup is the pids cgroup holding the jail's processes, when this
	// host made one (local backend).
	Cgroup string `json:"cgroup,omitempty"`
	// Detail is what a backend adds: the container, or the remote host and
	// whether the worker there runs under bubblewrap.
	Detail string `json:"detail,omitempty"`
	// Egress counts the connections of a jail under network =
	// "allowlist", since it started.
	Egress *EgressInfo `json:"egress,omitempty"`
}

// EgressInfo is a jail's egress counters.
type EgressInfo struct {
	Allowed   int64 `json:"allowed"`
	Denied    int64 `json:"denied"`
	Asked     int64 `json:"asked"`
	Active    int64 `json:"active"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// Tail keeps the end of what a jail prints on stderr and logs its lines.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
	log *slog.Logger
}

// NewTail keeps the last max bytes written to it.
func NewTail(max int, log *slog.Logger) *Tail { return &Tail{max: max, log: log} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	if t.log != nil {
		t.log.Debug("sandbox worker stderr", "text", string(bytes.TrimSpace(p)))
	}
	return len(p), nil
}

// String is the kept end, trimmed.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
