package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// app is everything one invocation needs to run tool calls.
type app struct {
	cfg    *config.Config
	root   *workspace.Root
	env    *tools.Env
	engine *engine.Engine
	// engineOpts built engine; a server copies them for each session.
	engineOpts engine.Options
	store      *store.SQLite
	// audit is where the engine's records go (the --log-file and the
	// store); commands add their own records (an agent's stop) to it.
	audit     audit.Sink
	log       *slog.Logger
	sandboxed bool
	// jail holds the workspace's worker when sandboxed, started with jailOpts.
	jail     *sandbox.Manager
	jailOpts *sandbox.Options
	closers  []func() error
}

func (a *app) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		_ = a.closers[i]()
	}
}

// setupOptions are the per-command choices that shape the engine.
type setupOptions struct {
	dryRun     bool
	noCommands bool
	agent      string
	session    string
	// db is the approvals and audit database ("" for the default).
	db string
	// cfg, when set, is the configuration already loaded by the command.
	cfg *config.Config
	// approver builds the approver on the shared store; nil means the
	// broker with the terminal prompt when stdin and stderr are a terminal.
	approver func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error)
	// registry builds the tools; nil means tools.Builtin.
	registry func(ctx context.Context, a *app) (*tools.Registry, func(), error)
}

// newApp loads the configuration, opens the workspace, the jail when the
// workspace has one, the approvals and audit store, and builds the engine.
func newApp(ctx context.Context, g *globalFlags, stderr io.Writer, so setupOptions) (_ *app, err error) {
	a := &app{log: newLogger(stderr)}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	a.cfg = so.cfg
	if a.cfg == nil {
		if a.cfg, err = loadConfig(g, so, a.log); err != nil {
			return nil, err
		}
	}
	cfg := a.cfg
	if _, err := policy.LookupAgent(cfg, so.agent); err != nil {
		return nil, usageErr("--agent: %v", err)
	}
	if a.root, err = workspace.Open(workspaceDir(g, cfg), &workspace.Options{Mask: cfg.Security.Mask, Protected: cfg.Security.Protected}); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.root.Close)

	// The file sink mirrors every record; the store holds approval requests
	// and the hash-chained audit trail shared by every warden process.
	var mirror audit.Multi
	if g.logFile != "" {
		f, err := audit.OpenFile(g.logFile)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, f.Close)
		mirror = append(mirror, f)
	}
	if a.store, err = openApprovalStore(so.db); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.store.Close)
	sinks := append(append(audit.Multi{}, mirror...), a.store)
	a.audit = sinks

	if so.session == "" {
		so.session = newSessionID("cli")
	}
	env := &tools.Env{Root: a.root, Config: cfg, Session: so.session, Agent: so.agent}
	env.FS, env.Runner = workspace.FS(a.root), command.Runner(&command.Local{Root: a.root.Dir()})
	if a.sandboxed = sandbox.Enabled(cfg.Sandbox); a.sandboxed {
		// Every effect goes through the jailed worker, started on first use;
		// it never falls back to the host.
		m := sandbox.NewManager(a.log)
		a.closers = append(a.closers, m.Close)
		opts := jailOptions(cfg, a.root.Dir(), a.log)
		env.FS, env.Runner = m.FS(opts), m.Runner(opts)
		a.jail, a.jailOpts = m, opts
	}
	a.env = env

	newApprover := so.approver
	if newApprover == nil {
		newApprover = func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error) {
			return newApprovalBroker(ctx, cfg, st, mirror, log)
		}
	}
	approver, closeApprover, err := newApprover(ctx, cfg, a.store, mirror, a.log)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() error { closeApprover(); return nil })

	reg := tools.Builtin(cfg)
	if so.registry != nil {
		r, closeReg, err := so.registry(ctx, a)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() error { closeReg(); return nil })
		reg = r
	}

	var hooks engine.HookRunner
	if len(cfg.Hooks.PostEdit) > 0 {
		hooks = &engine.PostEditHooks{
			Hooks:  cfg.Hooks.PostEdit,
			Runner: env.Runner,
			Env:    command.Environ(cfg.Commands.EnvAllowlist, os.LookupEnv),
		}
	}
	a.engineOpts = engine.Options{
		Registry:  reg,
		Env:       env,
		AgentName: so.agent,
		Audit:     sinks,
		Approver:  approver,
		DryRun:    so.dryRun,
		Hooks:     hooks,
		Log:       a.log,
	}
	if a.engine, err = engine.New(a.engineOpts); err != nil {
		return nil, err
	}
	return a, nil
}

// engineFor returns an engine like a's whose calls are recorded under
// session: one per MCP session of a server.
func (a *app) engineFor(session string) (*engine.Engine, error) {
	o := a.engineOpts
	env := *o.Env
	env.Session = session
	o.Env = &env
	return engine.New(o)
}

// workspaceDir is the workspace: --workspace, else workspace.root, else
// the current directory.
func workspaceDir(g *globalFlags, cfg *config.Config) string {
	switch {
	case g.workspace != "":
		return g.workspace
	case cfg.Workspace.Root != "":
		return cfg.Workspace.Root
	}
	return "."
}

// loadConfig returns the effective configuration for g: defaults < user
// config < --config file < workspace file (tighten only) < WARDEN_* < flags.
func loadConfig(g *globalFlags, so setupOptions, log *slog.Logger) (*config.Config, error) {
	ld, err := config.Load(config.LoadOptions{
		WorkspaceDir: g.workspace,
		ExtraFile:    g.config,
		Flags:        config.Overrides{Mode: g.mode, NoCommands: so.noCommands, DryRun: so.dryRun},
	})
	if err != nil {
		return nil, err
	}
	for _, w := range ld.Warnings {
		log.Warn(w)
	}
	return ld.Config, nil
}

func newSessionID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// newLogger writes human logs to stderr: warnings and errors, or more with
// WARDEN_LOG=info|debug.
func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	switch os.Getenv("WARDEN_LOG") {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
