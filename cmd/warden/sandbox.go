package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/control"
)

func newSandboxCmd(g *globalFlags) *cobra.Command {
	c := &cobra.Command{Use: "sandbox", Short: "Inspect the workspace sandbox"}
	c.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show the sandbox of this workspace and the workers warden serve holds",
		Long: `Show the sandbox a command of this workspace would run in (backend,
lockdown, network, seccomp and Landlock state), then the workers every running
'warden serve' of this user holds: workspace, backend, lockdown, seccomp,
Landlock, worker pid, uptime and masked paths. A served workspace has no
worker until its first use, and none again after its idle timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := app.SandboxOptions(g.app(false, false), newLogger(cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			var st sandboxStatus
			st.Serves, st.Workers = servedWorkers(cmd.Context(), newLogger(cmd.ErrOrStderr()))
			if opts == nil {
				st.Sandboxed = false
				return printStatus(cmd.OutOrStdout(), g.json, st)
			}
			st.Sandboxed = true
			s, err := sandbox.Resolve(opts.Sandbox)
			if err != nil {
				return err
			}
			st.Settings = &s
			host := sandbox.Probe(cmd.Context(), "")
			st.Host = &host
			return printStatus(cmd.OutOrStdout(), g.json, st)
		},
	})
	return c
}

type sandboxStatus struct {
	Sandboxed bool                `json:"sandboxed"`
	Settings  *sandbox.Settings   `json:"settings,omitempty"`
	Host      *sandbox.HostReport `json:"host,omitempty"`
	// Serves are the running warden serve processes of this user.
	Serves []control.ServeStatus `json:"serves"`
	// Workers are their running workers, for every workspace.
	Workers []servedWorker `json:"workers"`
}

// servedWorker is a worker and the warden serve that holds it.
type servedWorker struct {
	ServePID int `json:"serve_pid"`
	sandbox.Info
}

// servedWorkers asks every running warden serve of this user what it
// holds. One that does not answer is logged and left out.
func servedWorkers(ctx context.Context, log *slog.Logger) ([]control.ServeStatus, []servedWorker) {
	serves, workers := []control.ServeStatus{}, []servedWorker{}
	found, err := control.FindServes("")
	if err != nil {
		log.Warn("cannot look for warden serve processes", "error", err)
		return serves, workers
	}
	for _, s := range found {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := s.Status(ctx)
		cancel()
		if err != nil {
			log.Warn("a warden serve did not answer", "pid", s.PID, "error", err)
			continue
		}
		serves = append(serves, *st)
		for _, i := range st.Workers {
			workers = append(workers, servedWorker{ServePID: st.PID, Info: i})
		}
	}
	return serves, workers
}

func printStatus(w io.Writer, asJSON bool, st sandboxStatus) error {
	if asJSON {
		return writeJSON(w, st)
	}
	if !st.Sandboxed {
		fmt.Fprintln(w, "sandbox: off (the workspace has no [sandbox] section)")
	} else {
		s, h := st.Settings, st.Host
		fmt.Fprintf(w, "sandbox:  on, backend %s\n", s.Backend)
		if s.Forced != "" {
			fmt.Fprintf(w, "lockdown: yes, forced: %s\n", s.Forced)
		} else {
			fmt.Fprintf(w, "lockdown: %v\n", s.Lockdown)
		}
		fmt.Fprintf(w, "network:  %s\n", networkMode(s))
		fmt.Fprintf(w, "seccomp:  %s\n", h.Seccomp)
		fmt.Fprintf(w, "landlock: %s (mode %s)\n", h.Landlock, s.Landlock)
		fmt.Fprintf(w, "idle:     %v\n", s.Idle.Round(time.Second))
	}
	if len(st.Serves) == 0 {
		fmt.Fprintln(w, "workers:  none (no warden serve is running for this user)")
		return nil
	}
	fmt.Fprintf(w, "workers:  %d, held by %d warden serve process(es)\n", len(st.Workers), len(st.Serves))
	for _, sv := range st.Serves {
		fmt.Fprintf(w, "  serve pid %d, up %v, workspaces: %s\n", sv.PID, time.Since(sv.Started).Round(time.Second), strings.Join(sv.Workspaces, ", "))
	}
	for _, i := range st.Workers {
		lock := strconv.FormatBool(i.Lockdown)
		if i.Forced != "" {
			lock = "forced"
		}
		fmt.Fprintf(w, "  %s\n    serve pid %d  worker pid %d  up %v  backend %s  lockdown %s  seccomp %s  landlock %s  masked %d\n",
			i.Workspace, i.ServePID, i.PID, i.Uptime.Round(time.Second), i.Backend, lock, i.Seccomp, i.Landlock, i.Masked)
		if i.Detail != "" {
			fmt.Fprintf(w, "    %s\n", i.Detail)
		}
		if e := i.Egress; e != nil {
			fmt.Fprintf(w, "    egress: %d allowed, %d denied, %d asked, %d open; %d bytes out, %d in\n",
				e.Allowed, e.Denied, e.Asked, e.Active, e.BytesUp, e.BytesDown)
		}
	}
	return nil
}

// networkMode says what a jail's network is.
func networkMode(s *sandbox.Settings) string {
	switch {
	case s.Egress:
		return "allowlist (only through warden's egress proxy; warden explain --net HOST says what it admits)"
	case s.Network:
		return "host (the host's network, unchecked)"
	}
	return "none"
}
