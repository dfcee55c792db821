package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/sandbox/jailworker"
	"github.com/wardenhq/warden/internal/sandbox/sshjail"
)

// newWorkerCmd is `warden worker`, the process inside a sandbox jail. It is
// hidden: only warden starts it, under bubblewrap. With --jail it is the
// remote end of the ssh backend: it builds the bubblewrap jail on this host
// and relays the worker protocol between its stdin/stdout and the worker
// inside.
func newWorkerCmd(g *globalFlags) *cobra.Command {
	var spec, dir, jailSpec string
	var jail bool
	c := &cobra.Command{
		Use:    "worker --spec JSON | worker --jail --workspace DIR --sandbox JSON",
		Short:  "Serve the sandbox worker protocol inside a jail (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			if jail {
				if dir == "" || jailSpec == "" || spec != "" {
					return usageErr("worker --jail needs --workspace and --sandbox (and no --spec)")
				}
				return sshjail.ServeJail(ctx, dir, jailSpec, os.Stdin, os.Stdout, os.Stderr)
			}
			if spec == "" {
				return usageErr("worker needs --spec")
			}
			return jailworker.Serve(ctx, spec, os.Stdin, os.Stdout)
		},
	}
	c.Flags().StringVar(&spec, "spec", "", "worker spec (JSON)")
	c.Flags().BoolVar(&jail, "jail", false, "start a bubblewrap jail on this host and relay the protocol to the worker in it (ssh backend)")
	c.Flags().StringVar(&dir, "workspace", "", "workspace directory on this host (with --jail)")
	c.Flags().StringVar(&jailSpec, "sandbox", "", "jail spec (JSON, with --jail)")
	return c
}
