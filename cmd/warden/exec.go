package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/control"
)

// newExecCmd is `warden exec -- CMD ARGS…`: one command in the workspace's
// jail, exiting with its status: in the worker of a warden serve that holds
// the workspace with the same sandbox options, else in a jail for the call.
func newExecCmd(g *globalFlags) *cobra.Command {
	var timeout time.Duration
	var verbose bool
	c := &cobra.Command{
		Use:   "exec [--workspace DIR] [--config FILE] -- CMD [ARGS...]",
		Short: "Run one command in the workspace's sandbox jail; exit with its status",
		Long: `Run one command in the workspace's sandbox jail and exit with its status.

The workspace must have a [sandbox] section; warden never runs a command of a
sandboxed workspace outside the jail, and refuses when the jail cannot be built.
When a running 'warden serve' holds the workspace with the same sandbox
options, the command runs in its persistent worker (faster, and the worker's
environment); otherwise warden starts a jail for this call. Ctrl-C kills the
command either way. --verbose says on stderr which it was.
Output (stdout and stderr, interleaved) goes to stdout.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return usageErr("put the command after --, as in: warden exec -- make test")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			opts, err := app.SandboxOptions(g.app(false, false), newLogger(cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			if opts == nil {
				return withHint(errors.New("this workspace has no [sandbox] section, so there is no jail to run in"),
					"add [sandbox] with enabled = true to the workspace's warden.toml, or run the command directly")
			}
			eo, closeEgress, err := app.ExecEgress(ctx, g.app(false, false), newLogger(cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			defer closeEgress()
			opts.Egress = eo
			res, err := execInJail(ctx, opts, command.Spec{Argv: args, Timeout: timeout}, verbose, cmd.ErrOrStderr())
			if err != nil {
				if ctx.Err() != nil {
					return &exitError{code: 130, err: fmt.Errorf("interrupted: %s was killed with its jail", args[0])}
				}
				return fmt.Errorf("failed to run %s in the jail: %w", args[0], err)
			}
			fmt.Fprint(cmd.OutOrStdout(), res.Output)
			if res.TimedOut {
				fmt.Fprintf(cmd.ErrOrStderr(), "warden: error: %s timed out after %v\n", args[0], timeout)
			}
			if res.ExitCode != 0 {
				return silentExit(res.ExitCode)
			}
			return nil
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "kill the command after this long (at most 10m)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say on stderr whether the command ran in warden serve's worker or a jail of its own")
	return c
}

// execInJail runs spec in the worker of a warden serve holding the
// workspace, else in a jail started for the call. A serve that took the
// command and failed is an error: the command may have run, so it is not
// run again.
func execInJail(ctx context.Context, opts *sandbox.Options, spec command.Spec, verbose bool, stderr io.Writer) (command.Result, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res, pid, err := control.ExecViaServe(ctx, "", opts, spec)
	if err == nil {
		log.Info("ran in the worker of warden serve", "pid", pid)
		if verbose {
			fmt.Fprintf(stderr, "warden: ran in the worker of warden serve (pid %d)\n", pid)
		}
		return res, nil
	}
	if !errors.Is(err, control.ErrNotHeld) {
		return command.Result{}, err
	}
	log.Info("no warden serve holds this workspace; starting a jail for the call", "why", err)
	if verbose {
		why := ""
		if err != control.ErrNotHeld {
			why = " (" + strings.TrimPrefix(err.Error(), control.ErrNotHeld.Error()+": ") + ")"
		}
		fmt.Fprintf(stderr, "warden: no warden serve holds this workspace%s; starting a jail for this call\n", why)
	}
	w, err := sandbox.Start(ctx, opts)
	if err != nil {
		return command.Result{}, err
	}
	defer w.Close()
	return w.Runner().Run(ctx, spec)
}
