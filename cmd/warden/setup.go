package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// app is everything one CLI invocation needs to run tool calls.
type app struct {
	cfg     *config.Config
	root    *workspace.Root
	engine  *engine.Engine
	log     *slog.Logger
	closers []func() error
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
}

// newApp loads the configuration, opens the workspace and builds the engine.
func newApp(ctx context.Context, g *globalFlags, stderr io.Writer, so setupOptions) (*app, error) {
	a := &app{}
	a.log = newLogger(stderr)
	cfg, err := loadConfig(g, so, a.log)
	if err != nil {
		return nil, err
	}
	a.cfg = cfg
	dir := g.workspace
	if dir == "" {
		dir = cfg.Workspace.Root
	}
	if dir == "" {
		dir = "."
	}
	root, err := workspace.Open(dir, &workspace.Options{Mask: cfg.Security.Mask, Protected: cfg.Security.Protected})
	if err != nil {
		return nil, err
	}
	a.root = root
	a.closers = append(a.closers, root.Close)

	var sinks audit.Multi
	if g.logFile != "" {
		f, err := audit.OpenFile(g.logFile)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.closers = append(a.closers, f.Close)
		sinks = append(sinks, f)
	}
	if so.session == "" {
		so.session = newSessionID("cli")
	}
	env := &tools.Env{Root: root, Config: cfg, Session: so.session, Agent: so.agent}
	env.FS, env.Runner = workspace.FS(root), command.Runner(&command.Local{Root: root.Dir()})
	if sandbox.Enabled(cfg.Sandbox) {
		// Every effect goes through the jailed worker, started on first use;
		// it never falls back to the host.
		if cfg.Sandbox.Invalid != "" {
			a.log.Error("the [sandbox] section is invalid; running in lockdown (no network, read-only workspace)", "why", cfg.Sandbox.Invalid)
		}
		m := sandbox.NewManager(a.log)
		a.closers = append(a.closers, m.Close)
		opts := &sandbox.Options{
			Workspace: root.Dir(), Sandbox: cfg.Sandbox,
			Mask: cfg.Security.Mask, Protected: cfg.Security.Protected,
			EnvAllowlist: cfg.Commands.EnvAllowlist, Logger: a.log,
		}
		env.FS, env.Runner = m.FS(opts), m.Runner(opts)
	}
	// The store holds approval requests and the hash-chained audit trail,
	// shared by every warden process of this user.
	broker, closeBroker, err := newApprovalBroker(ctx, cfg, "", sinks, a.log)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.closers = append(a.closers, func() error { closeBroker(); return nil })
	if s, ok := broker.Store().(audit.Sink); ok {
		sinks = append(sinks, s)
	}
	var hooks engine.HookRunner
	if len(cfg.Hooks.PostEdit) > 0 {
		hooks = &engine.PostEditHooks{
			Hooks:  cfg.Hooks.PostEdit,
			Runner: env.Runner,
			Env:    command.Environ(cfg.Commands.EnvAllowlist, os.LookupEnv),
		}
	}
	eng, err := engine.New(engine.Options{
		Registry:  tools.Builtin(cfg),
		Env:       env,
		AgentName: so.agent,
		Audit:     sinks,
		Approver:  broker,
		DryRun:    so.dryRun,
		Hooks:     hooks,
		Log:       a.log,
	})
	if err != nil {
		a.Close()
		return nil, err
	}
	a.engine = eng
	return a, nil
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
