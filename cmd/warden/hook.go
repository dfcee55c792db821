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

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/hook"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
)

func init() { commands = append(commands, newHookCmd) }

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

// runHook answers one hook event. The configuration is read first (it says
// how a supervised call is answered); a configuration that cannot be read
// refuses every tool call, with the reason.
func runHook(ctx context.Context, g *globalFlags, h hook.Host, db, server string, in io.Reader, out, errOut io.Writer) int {
	log := newLogger(errOut)
	o := hook.Options{Host: h, Map: hook.MapOptions{WardenServer: server}}
	o.Map.Home, _ = os.UserHomeDir()
	var loaded *config.Config
	o.Open = func(ctx context.Context, ev *hook.Event) (hook.Session, error) {
		return openHookSession(ctx, g, h, ev, db, log, loaded)
	}
	// The hook's own settings come from the configuration of the event's
	// workspace; they are read when the event is, in Open. Until then the
	// defaults apply.
	cfg, err := loadConfig(g, setupOptions{}, log)
	if err == nil {
		loaded = cfg
		o.HostAsks = cfg.Hooks.Approval == config.HookApprovalHost
		o.Wait = time.Duration(cfg.Hooks.WaitSecs) * time.Second
	} else {
		o.Open = func(context.Context, *hook.Event) (hook.Session, error) { return nil, err }
	}
	return hook.Run(ctx, in, out, errOut, o)
}

// openHookSession opens the workspace of ev and builds the engine that
// decides its calls: the user's configuration with the hosts' own config
// files protected, the shared store, the approval broker (no terminal
// prompt: the host owns the terminal) and the audit trail, under the host's
// session id so that the same call made again finds its request.
func openHookSession(ctx context.Context, g *globalFlags, h hook.Host, ev *hook.Event, db string, log *slog.Logger, cfg *config.Config) (hook.Session, error) {
	wg := *g
	ws, err := hook.WorkspaceFor(ev, g.workspace, os.Getenv)
	if err != nil {
		return nil, err
	}
	wg.workspace = ws
	if g.workspace == "" {
		// The configuration of the event's workspace (its warden.toml).
		if cfg, err = loadConfig(&wg, setupOptions{}, log); err != nil {
			return nil, err
		}
	}
	cfg.Security.Protected = append(slices.Clone(cfg.Security.Protected), hook.HostProtected...)
	session := ev.Session
	if session == "" {
		session = newSessionID(string(h))
	}
	so := setupOptions{cfg: cfg, session: session, db: db, agent: "",
		approver: func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error) {
			o, closeChannels, err := approval.FromConfig(cfg, &approval.ConfigOptions{Logger: log})
			if err != nil {
				return nil, nil, err
			}
			o.Store, o.Logger, o.GrantMax = st, log, approval.GrantMax(&cfg.Security.Approval)
			if mirror != nil {
				o.Audit = mirror
			}
			b, err := approval.New(ctx, o)
			if err != nil {
				closeChannels()
				return nil, nil, err
			}
			approval.Listen(b, o.Channels)
			return b, func() { _ = closeChannels() }, nil
		},
		registry: func(ctx context.Context, a *app) (*tools.Registry, func(), error) {
			reg := tools.Builtin(a.cfg)
			for _, t := range hook.HostTools("") {
				reg.Add(t)
			}
			return reg, func() {}, nil
		},
	}
	a, err := newApp(ctx, &wg, io.Discard, so)
	if err != nil {
		return nil, err
	}
	a.log = log
	return &hook.EngineSession{Root: a.root, Config: cfg, Closer: func() error { a.Close(); return nil },
		NewEngine: func(reg *tools.Registry) (hook.Decider, error) {
			eo := a.engineOpts
			eo.Registry = reg
			env := *eo.Env
			env.Agent = string(h)
			eo.Env = &env
			return engine.New(eo)
		}}, nil
}
