package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/sandbox"
)

func init() { commands = append(commands, newWorkerCmd) }

// newWorkerCmd is `warden worker`, the process inside a sandbox jail. It is
// hidden: only warden starts it, under bubblewrap.
func newWorkerCmd(g *globalFlags) *cobra.Command {
	var spec string
	c := &cobra.Command{
		Use:    "worker --spec JSON",
		Short:  "Serve the sandbox worker protocol inside a jail (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec == "" {
				return usageErr("worker needs --spec")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return sandbox.ServeWorker(ctx, spec, os.Stdin, os.Stdout)
		},
	}
	c.Flags().StringVar(&spec, "spec", "", "worker spec (JSON)")
	return c
}
