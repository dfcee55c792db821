package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/mcp"
)

// mcpFlags are the choices of `warden mcp`.
type mcpFlags struct {
	agent      string
	dryRun     bool
	noCommands bool
	upstreams  []string
	db         *string
	noElicit   bool
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
	fl.StringVar(&f.agent, "agent", "", "agent whose tool set is served: build, plan, review, resume or a configured one")
	fl.StringArrayVar(&f.upstreams, "upstream", nil, "serve this [[mcp.servers]] entry's tools (repeatable; 'all' for every one)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "execute nothing; report what would run")
	fl.BoolVar(&f.noCommands, "no-commands", false, "do not serve run_command")
	fl.BoolVar(&f.noElicit, "no-elicit", false, "never ask for approvals through the MCP client; only through the store")
	f.db = dbFlag(cmd)
	cmd.AddCommand(newMCPTrustCmd(g))
	return cmd
}

// mcpGCPercent is the garbage collector's target for a `warden mcp`
// session, unless $GOGC sets one. The MCP SDK decodes every message with a
// fresh JSON decoder and its large buffer while the live heap stays a few
// MB, so at Go's default (100) the collector ran every few dozen calls and
// took a fifth of the process's CPU; 400 nearly doubled the calls a
// session serves per second (BENCHMARKS.md, MCP).
const mcpGCPercent = 400

func runMCP(ctx context.Context, g *globalFlags, f *mcpFlags, stderr io.Writer) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(mcpGCPercent)
	}
	log := newLogger(stderr)
	protectSecrets(log)
	flags := g.app(f.noCommands, f.dryRun)
	cfg, files, err := app.LoadConfigFiles(flags, log)
	if err != nil {
		return err
	}
	if files == nil {
		files = []string{}
	}
	servers, err := pickUpstreams(cfg, f.upstreams)
	if err != nil {
		return err
	}
	session := mcp.NewSessionID()
	o := app.Options{Flags: flags, Config: cfg, ConfigFiles: files, Agent: f.agent, Session: session, DB: *f.db, Logger: log,
		Approver: app.MCPApprover(!f.noElicit)}
	if len(servers) > 0 {
		o.Registry = app.UpstreamRegistry(servers)
	}
	a, err := app.New(ctx, o)
	if err != nil {
		return err
	}
	defer a.Close()
	eng := a.Engine()
	srv := mcp.NewServer(eng, &mcp.ServerOptions{Logger: log, ApprovalWait: time.Duration(cfg.Security.Approval.MCPWaitSecs) * time.Second})
	log.Info("serving MCP on stdio", "session", mcp.ShortID(session), "tools", len(eng.Tools()))
	err = mcp.Serve(ctx, srv, mcp.NewStdioTransport())
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// pickUpstreams returns the [[mcp.servers]] entries --upstream names.
func pickUpstreams(cfg *config.Config, names []string) ([]config.MCPServer, error) {
	return pickServers(cfg, names, "--upstream ")
}

// pickServers is pickUpstreams with errors naming what was given as
// what (the flag, or the argument of mcp trust).
func pickServers(cfg *config.Config, names []string, what string) ([]config.MCPServer, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if slices.Contains(names, "all") {
		if len(cfg.MCP.Servers) == 0 {
			return nil, usageErr("%sall: no [[mcp.servers]] are configured", what)
		}
		return cfg.MCP.Servers, nil
	}
	var out []config.MCPServer
	for _, n := range names {
		i := slices.IndexFunc(cfg.MCP.Servers, func(s config.MCPServer) bool { return s.Name == n })
		if i < 0 {
			return nil, usageErr("%s%s: no [[mcp.servers]] entry has that name (configured: %s)", what, n, serverNames(cfg))
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
			flags := g.app(false, false)
			cfg, err := app.LoadConfig(flags, log)
			if err != nil {
				return err
			}
			servers, err := pickServers(cfg, []string{pos[0]}, "mcp trust ")
			if err != nil {
				return err
			}
			co, closeJail, err := app.MCPClientOptions(cfg, app.WorkspaceDir(flags, cfg), log)
			if err != nil {
				return err
			}
			defer closeJail()
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
			fmt.Fprintf(c.ErrOrStderr(), "warden: pinned %d tool definitions of %s in %s\n", len(r.Tools()), r.Name(), co.Pins.Path())
			return nil
		},
	}
}
