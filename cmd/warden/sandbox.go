package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/sandbox"
)

func init() { commands = append(commands, newSandboxCmd) }

func newSandboxCmd(g *globalFlags) *cobra.Command {
	c := &cobra.Command{Use: "sandbox", Short: "Inspect the workspace sandbox"}
	c.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show the sandbox a command of this workspace would run in",
		Long: `Show the sandbox a command of this workspace would run in: backend,
lockdown, network, seccomp and Landlock state. This process holds no workers
(warden serve does); the row describes what a worker would be started with.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := sandboxOptions(g, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			st := sandboxStatus{Workers: []sandbox.Info{}}
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
	// Workers are the running workers (none outside warden serve).
	Workers []sandbox.Info `json:"workers"`
}

func printStatus(w io.Writer, asJSON bool, st sandboxStatus) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	if !st.Sandboxed {
		fmt.Fprintln(w, "sandbox: off (the workspace has no [sandbox] section)")
		return nil
	}
	s, h := st.Settings, st.Host
	fmt.Fprintf(w, "sandbox:  on, backend %s\n", s.Backend)
	if s.Forced != "" {
		fmt.Fprintf(w, "lockdown: yes, forced: %s\n", s.Forced)
	} else {
		fmt.Fprintf(w, "lockdown: %v\n", s.Lockdown)
	}
	fmt.Fprintf(w, "network:  %v\n", s.Network)
	fmt.Fprintf(w, "seccomp:  %s\n", h.Seccomp)
	fmt.Fprintf(w, "landlock: %s (mode %s)\n", h.Landlock, s.Landlock)
	fmt.Fprintf(w, "idle:     %v\n", s.Idle.Round(time.Second))
	fmt.Fprintln(w, "workers:  none in this process (warden serve holds them)")
	for _, i := range st.Workers {
		fmt.Fprintf(w, "  %s  pid %d  up %v  seccomp %s  landlock %s\n", i.Workspace, i.PID, i.Uptime, i.Seccomp, i.Landlock)
	}
	return nil
}
