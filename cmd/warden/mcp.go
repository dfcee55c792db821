package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/mcp"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
)

func init() { commands = append(commands, newMCPCmd) }

// mcpFlags are the choices of `warden mcp`.
type mcpFlags struct {
	so        setupOptions
	upstreams []string
	db        *string
	noElicit  bool
}

func newMCPCmd(g *globalFlags) *cobra.Command {
	f := &mcpFlags{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve warden's tools over MCP on stdio, or be a policy gateway for remote MCP servers",
		Long: `Serve the tools of the agent (--agent, default build) over MCP on stdin and
stdout. Every call goes through warden's engine: confinement, guards, policy,
approvals, sandbox and audit. A refusal is a tool result with isError set.

A supervised call waits for a decision: from the MCP client through an
elicitation form when it supports one (unless --no-elicit), and from any
supervisor through the shared store ('warden approvals approve ID' in another
terminal, 'warden serve'). The first decision wins. With neither, supervised
calls fail safe.

With --upstream NAME (repeatable, or 'all'), warden serves the tools of the
[[mcp.servers]] NAME instead, as mcp__NAME__TOOL, through the same policy and
approvals: a policy gateway for MCP servers warden did not write. Their tool
definitions are pinned on first use; a changed one is refused until
'warden mcp trust NAME'.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runMCP(ctx, g, f, c.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.so.agent, "agent", "", "agent whose tool set is served: build, plan, review, resume or a configured one")
	fl.StringArrayVar(&f.upstreams, "upstream", nil, "serve this [[mcp.servers]] entry's tools (repeatable; 'all' for every one)")
	fl.BoolVar(&f.so.dryRun, "dry-run", false, "execute nothing; report what would run")
	fl.BoolVar(&f.so.noCommands, "no-commands", false, "do not serve run_command")
	fl.BoolVar(&f.noElicit, "no-elicit", false, "never ask for approvals through the MCP client; only through the store")
	f.db = dbFlag(cmd)
	cmd.AddCommand(newMCPTrustCmd(g))
	return cmd
}

func runMCP(ctx context.Context, g *globalFlags, f *mcpFlags, stderr io.Writer) error {
	log := newLogger(stderr)
	cfg, err := loadConfig(g, f.so, log)
	if err != nil {
		return err
	}
	servers, err := pickUpstreams(cfg, f.upstreams)
	if err != nil {
		return err
	}
	session := mcp.NewSessionID()
	so := f.so
	so.cfg, so.session, so.db = cfg, session, *f.db
	so.approver = mcpApprover(!f.noElicit)
	if len(servers) > 0 {
		so.registry = upstreamRegistry(servers)
	}
	a, err := newApp(ctx, g, stderr, so)
	if err != nil {
		return err
	}
	defer a.Close()
	eng := a.engine
	srv := mcp.NewServer(eng, &mcp.ServerOptions{Logger: log, ApprovalWait: time.Duration(cfg.Security.Approval.MCPWaitSecs) * time.Second})
	log.Info("serving MCP on stdio", "session", mcp.ShortID(session), "tools", len(eng.Tools()))
	err = mcp.Serve(ctx, srv, &sdk.StdioTransport{})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// pickUpstreams returns the [[mcp.servers]] entries --upstream names.
func pickUpstreams(cfg *config.Config, names []string) ([]config.MCPServer, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if slices.Contains(names, "all") {
		if len(cfg.MCP.Servers) == 0 {
			return nil, usageErr("--upstream all: no [[mcp.servers]] are configured")
		}
		return cfg.MCP.Servers, nil
	}
	var out []config.MCPServer
	for _, n := range names {
		i := slices.IndexFunc(cfg.MCP.Servers, func(s config.MCPServer) bool { return s.Name == n })
		if i < 0 {
			return nil, usageErr("--upstream %s: no [[mcp.servers]] entry has that name (configured: %s)", n, serverNames(cfg))
		}
		out = append(out, cfg.MCP.Servers[i])
	}
	return out, nil
}

func serverNames(cfg *config.Config) string {
	var n []string
	for _, s := range cfg.MCP.Servers {
		n = append(n, s.Name)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

func pinsPath() (string, error) {
	dir := config.StateDir()
	if dir == "" {
		return "", fmt.Errorf("failed to find the state directory for the MCP pins (set XDG_STATE_HOME)")
	}
	return filepath.Join(dir, mcp.PinsFile), nil
}

// upstreamRegistry serves the tools of the upstream [[mcp.servers]]
// instead of the built-in ones: warden as a policy gateway.
func upstreamRegistry(servers []config.MCPServer) func(ctx context.Context, a *app) (*tools.Registry, func(), error) {
	return func(ctx context.Context, a *app) (_ *tools.Registry, closeAll func(), err error) {
		var closers closerList
		closeAll = closers.closeAll
		pp, err := pinsPath()
		if err != nil {
			return nil, closeAll, err
		}
		co := &mcp.ClientOptions{
			Pins: mcp.OpenPins(pp), Logger: a.log, Dir: a.root.Dir(), Sandboxed: a.sandboxed,
			Env: command.Environ(a.cfg.Commands.EnvAllowlist, os.LookupEnv),
		}
		if a.sandboxed {
			co.Jail = closers.jail(a.cfg, a.root.Dir(), a.log)
		}
		reg := tools.NewRegistry()
		for _, s := range servers {
			r, err := mcp.Connect(ctx, s, co)
			if err != nil {
				closeAll()
				return nil, func() {}, err
			}
			closers.add(func() { r.Close() })
			for _, t := range r.Tools() {
				reg.Add(t)
			}
		}
		return reg, closeAll, nil
	}
}

// mcpApprover returns the approver constructor of `warden mcp`.
func mcpApprover(elicit bool) func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error) {
	return func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error) {
		return newMCPApprover(ctx, cfg, st, mirror, log, elicit)
	}
}

// newMCPApprover builds the approvers of `warden mcp` on the shared store:
// one that asks nobody here (a supervisor decides through the store, or the
// call fails safe), and, with elicit, one that also asks the MCP client.
// Neither uses the terminal: stdin is the protocol.
func newMCPApprover(ctx context.Context, cfg *config.Config, st store.Store, mirror audit.Sink, log *slog.Logger, elicit bool) (approval.Approver, func(), error) {
	o, closeChannels, err := approval.FromConfig(cfg, &approval.ConfigOptions{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	closeFn := func() { _ = closeChannels() }
	o.Store, o.Logger, o.Audit = st, log, mirror
	o.Channels = append(o.Channels, mcp.ProgressChannel{})
	plain, err := approval.New(ctx, o)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	approval.Listen(plain, o.Channels) // Telegram answers, unless this process already polls
	a := &mcp.Approver{Plain: plain}
	if elicit {
		o.Prompt = mcp.Elicitor{}
		if a.Eliciting, err = approval.New(ctx, o); err != nil {
			closeFn()
			return nil, nil, err
		}
	}
	return a, closeFn, nil
}

func newMCPTrustCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "trust SERVER",
		Short: "Pin the current tool definitions of an [[mcp.servers]] entry, after reviewing them",
		Long: `Connect to the [[mcp.servers]] entry SERVER, list its tools and pin their
definitions (name, description, schemas, hints) as trusted, replacing the
previous pins. Prints each tool and whether its definition changed. Review
the descriptions first: a changed description is how a server turns on the
agent that reads it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, pos []string) error {
			log := newLogger(c.ErrOrStderr())
			cfg, err := loadConfig(g, setupOptions{}, log)
			if err != nil {
				return err
			}
			servers, err := pickUpstreams(cfg, []string{pos[0]})
			if err != nil {
				return err
			}
			pp, err := pinsPath()
			if err != nil {
				return err
			}
			pins := mcp.OpenPins(pp)
			dir := workspaceDir(g, cfg)
			co := &mcp.ClientOptions{Pins: pins, Logger: log, Dir: dir, Sandboxed: sandbox.Enabled(cfg.Sandbox),
				Env: command.Environ(cfg.Commands.EnvAllowlist, os.LookupEnv)}
			var closers closerList
			defer closers.closeAll()
			if co.Sandboxed {
				co.Jail = closers.jail(cfg, dir, log)
			}
			// First see what changed, then pin.
			before, err := mcp.Connect(c.Context(), servers[0], co)
			if err != nil {
				return err
			}
			changed := before.Changed
			before.Close()
			co.Trust = true
			r, err := mcp.Connect(c.Context(), servers[0], co)
			if err != nil {
				return err
			}
			defer r.Close()
			out := c.OutOrStdout()
			for _, t := range r.Tools() {
				mark := "trusted"
				if slices.Contains(changed, strings.TrimPrefix(t.Name, "mcp__"+r.Name()+"__")) {
					mark = "trusted (changed)"
				}
				desc, _, _ := strings.Cut(t.Description, "\n")
				fmt.Fprintf(out, "%s\t%s\t%s\n", t.Name, mark, approval.Printable(desc, 200))
			}
			fmt.Fprintf(c.ErrOrStderr(), "warden: pinned %d tool definitions of %s in %s\n", len(r.Tools()), r.Name(), pins.Path())
			return nil
		},
	}
}

// closerList closes what it was given, last first.
type closerList []func()

func (c *closerList) add(f func()) { *c = append(*c, f) }

func (c *closerList) closeAll() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

// jail returns how stdio MCP servers of a sandboxed workspace start: in a
// jail of the workspace built like the tools' one (same masks, lockdown,
// network and limits), started on first use and closed by c. Their own
// jail, not the tools' worker: a reset of that worker (a cancelled
// command) does not take the servers down with it.
func (c *closerList) jail(cfg *config.Config, dir string, log *slog.Logger) func(ctx context.Context, argv []string) (*sandbox.Process, error) {
	m := sandbox.NewManager(log)
	c.add(func() { m.Close() })
	opts := jailOptions(cfg, dir, log)
	return func(ctx context.Context, argv []string) (*sandbox.Process, error) {
		return m.Spawn(ctx, opts, argv, "", nil)
	}
}
