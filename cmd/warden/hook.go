package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/hook"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

func newHookCmd(g *globalFlags) *cobra.Command {
	var (
		db     *string
		server string
	)
	cmd := &cobra.Command{
		Use:       "hook claude-code|codex|gemini-cli",
		Short:     "Decide an agent host's own tool call (hook event JSON on stdin, the host's answer on stdout)",
		ValidArgs: []string{string(hook.ClaudeCode), string(hook.Codex), string(hook.GeminiCLI)},
		Long: `The agent host runs 'warden hook HOST' before (and after) each of its own tool
calls, with the call as JSON on stdin. warden maps it to the warden tool call
with the same effect (Bash → run_command, Write → write_file, Read → read_file,
WebFetch → http_request, mcp__S__T → the mcp group, ...) and decides it with
the engine: the command judge, confinement, masks, protected paths, policy,
rules, grants and the mode. The answer is written in the host's own format.

A call that needs a person waits for warden's approval flow ('warden approvals
approve ID', the page, a chat channel) up to [hooks] wait_secs, then is denied
with the request id; the same call made again runs once it was approved. With
[hooks] approval = "host", Claude Code's own prompt decides instead.

Events warden does not judge pass. Input that cannot be read is refused.
'warden setup HOST' writes the host's hook configuration.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			h, err := hook.ParseHost(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			code := runHook(ctx, g, h, *db, server, c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr())
			if code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
	db = dbFlag(cmd)
	cmd.Flags().StringVar(&server, "mcp-server", hook.DefaultWardenServer, "the name the host gives warden's MCP server: its calls are decided by warden mcp itself")
	return cmd
}

// runHook answers one hook event. Everything is read once the event says
// which workspace it is in: its configuration (which says how a supervised
// call is answered), the store, and, only for a call a person may need to
// see, the approval broker.
func runHook(ctx context.Context, g *globalFlags, h hook.Host, db, server string, in io.Reader, out, errOut io.Writer) int {
	log := newLogger(errOut)
	o := hook.Options{Host: h, Map: hook.MapOptions{WardenServer: server}}
	o.Map.Home, _ = os.UserHomeDir()
	o.Open = func(ctx context.Context, ev *hook.Event) (hook.Session, error) {
		return openHookSession(ctx, g, h, ev, db, log)
	}
	return hook.Run(ctx, in, out, errOut, o)
}

// openHookSession opens the workspace of ev and what decides its calls: the
// configuration of that workspace with the hosts' own config files
// protected, the shared store and audit trail, and the approval broker (no
// terminal prompt: the host owns the terminal), built on first use, under
// the host's session id so that the same call made again finds its request.
// The engine is built per call around the one tool the call is decided as.
// Nothing runs here (the host runs the call), so no jail is started.
func openHookSession(ctx context.Context, g *globalFlags, h hook.Host, ev *hook.Event, db string, log *slog.Logger) (hook.Session, error) {
	wg := *g
	ws, err := hook.WorkspaceFor(ev, g.workspace, os.Getenv)
	if err != nil {
		return nil, err
	}
	wg.workspace = ws
	cfg, err := loadConfig(&wg, log)
	if err != nil {
		return nil, err
	}
	cfg.Security.Protected = append(slices.Clone(cfg.Security.Protected), hook.HostProtected...)
	root, err := workspace.Open(ws, &workspace.Options{Mask: cfg.Security.Mask, Protected: cfg.Security.Protected})
	if err != nil {
		return nil, err
	}
	var mirror audit.Multi
	closers := []func() error{root.Close}
	closeAll := func() error {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
		return nil
	}
	if g.logFile != "" {
		f, err := audit.OpenFile(g.logFile)
		if err != nil {
			closeAll()
			return nil, err
		}
		closers = append(closers, f.Close)
		mirror = append(mirror, f)
	}
	// The store is not closed: the process ends after this one event, and
	// closing the last connection would checkpoint and delete the WAL for
	// the next hook to create again. What was committed is in the WAL.
	st, err := app.OpenStore(db, cfg.Store)
	if err != nil {
		closeAll()
		return nil, err
	}
	lazy := approval.Lazy(func() (approval.Approver, func(), error) {
		o, closeChannels, err := app.ApprovalOptions(cfg, log)
		if err != nil {
			return nil, nil, err
		}
		o.Store = st
		if len(mirror) > 0 {
			o.Audit = mirror
		}
		b, err := approval.New(ctx, o)
		if err != nil {
			closeChannels()
			return nil, nil, err
		}
		approval.Listen(b, o.Channels)
		return b, func() { _ = closeChannels() }, nil
	})
	closers = append(closers, func() error { lazy.Close(); return nil })
	session := ev.Session
	if session == "" {
		session = app.NewSessionID(string(h))
	}
	env := &tools.Env{Root: root, FS: workspace.FS(root), Config: cfg, Session: session, Agent: string(h)}
	// The host runs the call itself; warden records the workspace first,
	// as before a call it runs, so that warden undo covers the host's edits.
	cps, closeCps := app.LazyCheckpoints(cfg, root.Dir(), log)
	closers = append(closers, closeCps)
	sinks := append(append(audit.Multi{}, mirror...), st)
	return &hook.EngineSession{Root: root, Config: cfg, Closer: closeAll,
		HostAsks: cfg.Hooks.Approval == config.HookApprovalHost, Wait: time.Duration(cfg.Hooks.WaitSecs) * time.Second,
		NewEngine: func(reg *tools.Registry) (hook.Decider, error) {
			return engine.New(engine.Options{Registry: reg, Env: env, Approver: lazy, Audit: sinks, Log: log, Checkpoints: cps})
		}}, nil
}
