package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/sandbox"
)

// newDoctorCmd is `warden doctor`: what this host supports for the sandbox
// and what a sandboxed workspace would run without. It exits 1 when no jail
// can be built here.
func newDoctorCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Report what this host supports for the sandbox",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := sandbox.Probe(cmd.Context(), "")
			out := cmd.OutOrStdout()
			if g.json {
				if err := writeJSON(out, r); err != nil {
					return err
				}
			} else {
				bw := r.BwrapVersion
				if r.Bwrap == "" {
					bw = "missing (apt-get install bubblewrap)"
				}
				fmt.Fprintf(out, "bubblewrap:       %s\n", bw)
				jail := "yes"
				if !r.JailWorks {
					jail = "no: " + r.JailError
				}
				fmt.Fprintf(out, "jail works:       %s\n", jail)
				fmt.Fprintf(out, "user namespaces:  %s\n", r.UserNamespaces)
				fmt.Fprintf(out, "seccomp:          %s\n", r.Seccomp)
				fmt.Fprintf(out, "landlock:         %s\n", r.Landlock)
				fmt.Fprintf(out, "pids cgroup:      %s\n", r.PidsCgroup)
				if len(r.Degraded) == 0 {
					fmt.Fprintln(out, "degraded:         nothing")
				}
				for _, d := range r.Degraded {
					fmt.Fprintf(out, "degraded:         %s\n", d)
				}
				for _, name := range slices.Sorted(maps.Keys(r.Backends)) {
					fmt.Fprintf(out, "backend %-9s %s\n", name+":", r.Backends[name])
				}
			}
			if !r.JailWorks {
				return silentExit(exitFailed)
			}
			return nil
		},
	}
}
