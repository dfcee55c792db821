package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/control"
)

// JailOptions are the sandbox options of the workspace dir under cfg. An
// invalid [sandbox] section is said loudly: it runs in lockdown.
func JailOptions(cfg *config.Config, dir string, log *slog.Logger) *sandbox.Options {
	if cfg.Sandbox.Invalid != "" {
		log.Error("the [sandbox] section is invalid; running in lockdown (no network, read-only workspace)", "why", cfg.Sandbox.Invalid)
	}
	return &sandbox.Options{
		Workspace:    dir,
		Sandbox:      cfg.Sandbox,
		Mask:         cfg.Security.Mask,
		Protected:    cfg.Security.Protected,
		EnvAllowlist: cfg.Commands.EnvAllowlist,
		Logger:       log,
	}
}

// SandboxOptions loads the configuration for f and returns the sandbox
// options of its workspace, or nil when it has no [sandbox] section.
func SandboxOptions(f Flags, log *slog.Logger) (*sandbox.Options, error) {
	cfg, err := LoadConfig(f, log)
	if err != nil {
		return nil, err
	}
	if !sandbox.Enabled(cfg.Sandbox) {
		return nil, nil
	}
	// The workspace as the engine and the rules name it: absolute, links
	// resolved (a person approving one of its connections sees where it
	// is, and "always" scopes its rule to it).
	dir, err := filepath.Abs(WorkspaceDir(f, cfg))
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return JailOptions(cfg, dir, log), nil
}

// jailSpawner returns how stdio MCP servers of a sandboxed workspace
// start: in a jail of the workspace built like the tools' one (same masks,
// lockdown, network and limits), started on first use and closed by c.
// Their own jail, not the tools' worker: a reset of that worker (a
// cancelled command) does not take the servers down with it.
func jailSpawner(c *closers, cfg *config.Config, dir string, log *slog.Logger, eo *sandbox.EgressOptions) func(ctx context.Context, argv []string) (*sandbox.Process, error) {
	m := sandbox.NewManager(log)
	c.add(m.Close)
	opts := JailOptions(cfg, dir, log)
	opts.Egress = eo
	return func(ctx context.Context, argv []string) (*sandbox.Process, error) {
		return m.Spawn(ctx, opts, argv, "", nil)
	}
}

// serveControl offers the sandboxed workspaces of apps to the user's other
// warden processes (warden exec, warden sandbox status) until the returned
// function is called. Without it they build jails of their own, so a
// failure is a warning, not the end of the server.
func serveControl(apps []*App, log *slog.Logger) func() {
	var targets []control.Target
	for _, a := range apps {
		if a.jail != nil {
			targets = append(targets, control.Target{Options: a.jailOpts, Manager: a.jail})
		}
	}
	if len(targets) == 0 {
		return func() {}
	}
	cs, err := control.Listen("", targets, log)
	if err != nil {
		log.Warn("warden exec and warden sandbox status cannot reach this server's workers", "error", err)
		return func() {}
	}
	return func() { cs.Close() }
}

// jailCheck is the engine's JailCheck on the workspace's sandbox manager:
// the worker is started if needed and must answer a ping, and a local
// (bubblewrap) worker must run under its seccomp filter with no_new_privs.
// A healthy answer is kept for a few seconds; an unhealthy one is
// checked again at the next call.
type jailCheck struct {
	m    *sandbox.Manager
	opts *sandbox.Options

	mu    sync.Mutex
	until time.Time
	why   string
}

// jailHealthyFor is how long a healthy check stands.
const jailHealthyFor = 5 * time.Second

func newJailCheck(m *sandbox.Manager, opts *sandbox.Options) *jailCheck {
	return &jailCheck{m: m, opts: opts}
}

// JailHealthy implements engine.JailCheck.
func (j *jailCheck) JailHealthy(ctx context.Context) (bool, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if time.Now().Before(j.until) {
		return true, j.why
	}
	s, err := sandbox.Resolve(j.opts.Sandbox)
	if err != nil {
		return false, "the [sandbox] section cannot be used: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := j.m.Get(ctx, j.opts)
	if err != nil {
		return false, "the jail does not start: " + err.Error()
	}
	h, err := w.Ping(ctx)
	if err != nil {
		return false, "the jail does not answer: " + err.Error()
	}
	if s.Backend == sandbox.BackendLocal && (h.Seccomp != "filter" || !h.NoNewPrivs) {
		return false, fmt.Sprintf("the worker runs without its seccomp filter or no_new_privs (seccomp %q)", h.Seccomp)
	}
	j.why = fmt.Sprintf("%s backend, seccomp %s, landlock %s", s.Backend, h.Seccomp, h.Landlock)
	j.until = time.Now().Add(jailHealthyFor)
	return true, j.why
}
