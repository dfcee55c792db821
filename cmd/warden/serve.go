package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/server"
)

func init() { commands = append(commands, newServeCmd) }

func newServeCmd(g *globalFlags) *cobra.Command {
	var addr, cert, key string
	var insecurePublic bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the approvals API (bearer-token protected, loopback by default)",
		Args:  cobra.NoArgs,
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
		b, err := approval.New(c.Context(), approval.Options{Store: st, Supervisors: approval.SupervisorIDs(&cfg.Security.Approval), Logger: log})
		if err != nil {
			return err
		}
		api, err := server.New(server.Options{Broker: b, Tokens: tokens, Logger: log})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			api.Close()
			return fmt.Errorf("failed to listen on %s: %w", addr, err)
		}
		srv := &http.Server{
			Handler:           api.Handler(),
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
	return cmd
}
