package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/mcp"
	"github.com/wardenhq/warden/internal/server"
)

func init() { commands = append(commands, newServeCmd) }

func newServeCmd(g *globalFlags) *cobra.Command {
	var addr, cert, key string
	var insecurePublic bool
	var mcpWorkspaces []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the supervisor page, the approvals API and MCP over HTTP (loopback by default)",
		Long: `Serve the supervisor page at / (sign in with a supervisor's token), the
approvals REST API (/api/approvals, /api/grants, with an SSE stream) and, for
each --mcp-workspace NAME=DIR, warden's tools over MCP streamable HTTP at
/mcp/NAME.

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
		log := newLogger(c.ErrOrStderr())
		cfg, err := loadApprovalConfig(g, log)
		if err != nil {
			return err
		}
		tokens, missing := server.SupervisorTokens(&cfg.Security.Approval)
		if len(missing) > 0 {
			log.Warn("supervisors without an API token cannot use the API", "supervisors", strings.Join(missing, ", "))
		}
		st, err := openApprovalStore(*db)
		if err != nil {
			return err
		}
		defer st.Close()
		// Channels that take answers (Telegram) poll here and decide
		// through this broker; their chats are supervisors too.
		co, closeChannels, err := approval.FromConfig(cfg, &approval.ConfigOptions{Logger: log})
		if err != nil {
			return err
		}
		defer closeChannels()
		b, err := approval.New(c.Context(), approval.Options{Store: st, Supervisors: co.Supervisors, Logger: log,
			GrantMax: approval.GrantMax(&cfg.Security.Approval)})
		if err != nil {
			return err
		}
		approval.Listen(b, co.Channels)
		api, err := server.New(server.Options{Broker: b, Tokens: tokens, Logger: log})
		if err != nil {
			return err
		}
		handler := api.Handler()
		if len(mcpWorkspaces) > 0 {
			mh, closeMCP, err := mcpHTTP(c.Context(), g, mcpWorkspaces, *db, b, c.ErrOrStderr(), log)
			if err != nil {
				api.Close()
				return err
			}
			defer closeMCP()
			mux := http.NewServeMux()
			mux.Handle("/mcp/", mh)
			mux.Handle("/", handler)
			handler = mux
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			api.Close()
			return fmt.Errorf("failed to listen on %s: %w", addr, err)
		}
		srv := &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    16 << 10,
		}
		srv.RegisterOnShutdown(api.Close)
		ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		scheme := "http"
		if cert != "" {
			scheme = "https"
		}
		fmt.Fprintf(c.ErrOrStderr(), "warden: serving approvals on %s://%s (database %s)\n", scheme, ln.Addr(), st.Path())
		errc := make(chan error, 1)
		go func() {
			if cert != "" {
				errc <- srv.ServeTLS(ln, cert, key)
			} else {
				errc <- srv.Serve(ln)
			}
		}()
		select {
		case err := <-errc:
			api.Close()
			return err
		case <-ctx.Done():
		}
		fmt.Fprintln(c.ErrOrStderr(), "warden: shutting down")
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = srv.Shutdown(sctx)
		if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
			err = e
		}
		return err
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address (loopback unless TLS or --insecure-public)")
	f.StringVar(&cert, "tls-cert", "", "TLS certificate file")
	f.StringVar(&key, "tls-key", "", "TLS key file")
	f.BoolVar(&insecurePublic, "insecure-public", false, "allow a non-loopback address without TLS")
	f.StringArrayVar(&mcpWorkspaces, "mcp-workspace", nil, "serve MCP for workspace DIR at /mcp/NAME (NAME=DIR, repeatable)")
	return cmd
}

// mcpHTTP builds the MCP streamable-HTTP handler for the workspaces given
// as NAME=DIR: one app (configuration, jail, store) per workspace, and one
// engine per MCP session so the audit trail tells sessions apart.
func mcpHTTP(ctx context.Context, g *globalFlags, specs []string, db string, b *approval.Broker, stderr io.Writer, log *slog.Logger) (http.Handler, func(), error) {
	var apps []*app
	closeAll := func() {
		for _, a := range apps {
			a.Close()
		}
	}
	servers := map[string]*sdk.Server{}
	for _, spec := range specs {
		name, dir, ok := strings.Cut(spec, "=")
		if !ok || name == "" || dir == "" {
			closeAll()
			return nil, nil, usageErr("--mcp-workspace %q: want NAME=DIR", spec)
		}
		if _, ok := mcp.WorkspaceFromPath("/mcp/" + name); !ok {
			closeAll()
			return nil, nil, usageErr("--mcp-workspace %q: NAME must be letters, digits, '-' or '_'", spec)
		}
		if servers[name] != nil {
			closeAll()
			return nil, nil, usageErr("--mcp-workspace %s: the name is used twice", name)
		}
		wg := *g
		wg.workspace = dir
		a, err := newApp(ctx, &wg, stderr, setupOptions{db: db, session: "mcp-http", approver: mcpApprover(true)})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--mcp-workspace %s: %w", name, err)
		}
		apps = append(apps, a)
		servers[name] = mcp.NewServer(a.engine, &mcp.ServerOptions{
			Logger:       log,
			ForSession:   func(session string) (mcp.Engine, error) { return a.engineFor(session) },
			ApprovalWait: time.Duration(a.cfg.Security.Approval.MCPWaitSecs) * time.Second,
		})
	}
	tokens, err := mcp.TokensFromEnv(os.Environ())
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	if len(tokens) == 0 {
		log.Warn("no MCP client tokens (" + mcp.TokenEnvPrefix + "<CLIENT>=<token>): every MCP request will be refused")
	}
	h, err := mcp.NewHTTPHandler(mcp.HTTPOptions{
		Server:        func(name string) *sdk.Server { return servers[name] },
		Tokens:        tokens,
		OnAuthFailure: b.AuditAuthFailure,
		Logger:        log,
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closeControl := serveControl(apps, log)
	return h, func() { closeControl(); closeAll() }, nil
}
