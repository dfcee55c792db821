package main

import (
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/server"
)

func newServeCmd(g *globalFlags) *cobra.Command {
	var addr, cert, key string
	var insecurePublic bool
	var mcpWorkspaces, allowedHosts, allowedOrigins []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the supervisor page, the approvals API and MCP over HTTP (loopback by default)",
		Long: `Serve the supervisor page at / (sign in with a supervisor's token), the
approvals REST API (/api/approvals, /api/grants, with an SSE stream) and, for
each --mcp-workspace NAME=DIR, warden's tools over MCP streamable HTTP at
/mcp/NAME.

Every request but /healthz must name this server in Host (the address it
listens on, localhost or NAME.localhost, or an --allowed-host), and a
browser's Origin must be the server's own or an --allowed-origin: a page
elsewhere, or one reached through DNS rebinding, gets 403.

API calls need a supervisor's bearer token (security.approval.supervisors'
token_env). MCP clients need a token of their own, from the environment:
WARDEN_MCP_TOKEN_<CLIENT>=<token> (at least 20 characters). A workspace with a
[sandbox] section keeps one jailed worker while the server runs; warden exec
and warden sandbox status reach it through a private unix socket. With
"telegram" in notify_channels, the server takes the supervisors' answers
from Telegram (long polling: no public URL needed).`,
		Args: cobra.NoArgs,
	}
	db := dbFlag(cmd)
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		if (cert == "") != (key == "") {
			return usageErr("--tls-cert and --tls-key go together")
		}
		if err := server.CheckAddr(addr, cert != "", insecurePublic); err != nil {
			return usageErr("%v", err)
		}
		workspaces, err := parseMCPWorkspaces(mcpWorkspaces)
		if err != nil {
			return err
		}
		stderr := c.ErrOrStderr()
		log := newLogger(stderr)
		protectSecrets(log)
		cfg, err := loadConfig(g, log)
		if err != nil {
			return err
		}
		tokens, missing, err := server.SupervisorTokens(&cfg.Security.Approval)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			log.Warn("supervisors without an API token cannot use the API", "supervisors", strings.Join(missing, ", "))
		}
		st, err := app.OpenStore(*db, cfg.Store)
		if err != nil {
			return err
		}
		defer st.Close()
		// Channels that take answers (Telegram) poll here and decide
		// through this broker; their chats are supervisors too.
		b, closeChannels, err := app.DecidingBroker(c.Context(), cfg, st, log)
		if err != nil {
			return err
		}
		defer closeChannels()
		api, err := server.New(server.Options{Broker: b, Tokens: tokens, Logger: log, Checkpoints: app.CheckpointSource{Log: log},
			Origins: server.OriginPolicy{Hosts: allowedHosts, Origins: allowedOrigins}})
		if err != nil {
			return err
		}
		handler := api.Handler()
		if len(workspaces) > 0 {
			base := app.Options{Flags: g.app(false, false), DB: *db, Logger: log}
			mh, closeMCP, err := app.MCPHandler(c.Context(), base, workspaces, b)
			if err != nil {
				api.Close()
				return err
			}
			defer closeMCP()
			mux := http.NewServeMux()
			mux.Handle("/mcp/", api.Guard(mh))
			mux.Handle("/", handler)
			handler = mux
		}
		ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return server.ListenAndServe(ctx, handler, server.ListenOptions{
			Addr: addr, CertFile: cert, KeyFile: key,
			Listening: func(scheme string, a net.Addr) {
				fmt.Fprintf(stderr, "warden: serving approvals on %s://%s (database %s)\n", scheme, a, st.Where())
			},
			Stopping:   func() { fmt.Fprintln(stderr, "warden: shutting down") },
			OnShutdown: api.Close,
		})
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address (loopback unless TLS or --insecure-public)")
	f.StringVar(&cert, "tls-cert", "", "TLS certificate file")
	f.StringVar(&key, "tls-key", "", "TLS key file")
	f.BoolVar(&insecurePublic, "insecure-public", false, "allow a non-loopback address without TLS")
	f.StringArrayVar(&mcpWorkspaces, "mcp-workspace", nil, "serve MCP for workspace DIR at /mcp/NAME (NAME=DIR, repeatable)")
	f.StringArrayVar(&allowedHosts, "allowed-host", nil, "a name (or name:port) requests may carry in Host besides the address served and localhost, e.g. a proxy's (repeatable)")
	f.StringArrayVar(&allowedOrigins, "allowed-origin", nil, "a browser origin (scheme://host[:port]) allowed besides the server's own, e.g. its public URL behind a TLS proxy (repeatable)")
	return cmd
}

// parseMCPWorkspaces reads the --mcp-workspace NAME=DIR values.
func parseMCPWorkspaces(specs []string) ([]app.MCPWorkspace, error) {
	var ws []app.MCPWorkspace
	for _, spec := range specs {
		name, dir, ok := strings.Cut(spec, "=")
		if !ok || name == "" || dir == "" {
			return nil, usageErr("--mcp-workspace %q: want NAME=DIR", spec)
		}
		ws = append(ws, app.MCPWorkspace{Name: name, Dir: dir})
	}
	return ws, nil
}
