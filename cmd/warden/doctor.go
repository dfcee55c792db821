package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
)

// doctorConfig is what doctor says of the configuration: the files it read
// and the notification channels that cannot start.
func doctorConfig(g *globalFlags) (files, notifyProblems []string, err error) {
	f := g.app(false, false)
	ld, err := config.Load(config.LoadOptions{WorkspaceDir: f.Workspace, ExtraFile: f.ConfigFile, Flags: config.Overrides{Mode: f.Mode}})
	if err != nil {
		return nil, nil, err
	}
	notifyProblems = []string{}
	for _, p := range app.ChannelProblems(ld.Config) {
		notifyProblems = append(notifyProblems, p.Error())
	}
	files = ld.Files
	if files == nil {
		files = []string{}
	}
	return files, notifyProblems, nil
}

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
			cfgFiles, notifyProblems, cfgErr := doctorConfig(g)
			if g.json {
				type report struct {
					sandbox.HostReport
					ConfigFiles    []string `json:"config_files"`
					ConfigError    string   `json:"config_error,omitempty"`
					NotifyProblems []string `json:"notify_problems"`
				}
				rep := report{HostReport: r, ConfigFiles: cfgFiles, NotifyProblems: notifyProblems}
				if cfgErr != nil {
					rep.ConfigError = cfgErr.Error()
				}
				if err := writeJSON(out, rep); err != nil {
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
					// Never an empty reason.
					jail = "no: " + cmpOr(r.JailError, "bwrap cannot build a jail here, and said nothing about why (run: bwrap --unshare-all --die-with-parent --ro-bind / / true)")
					if r.Bwrap == "" {
						jail = "no: bubblewrap is missing (apt-get install bubblewrap)"
					}
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
				switch {
				case cfgErr != nil:
					fmt.Fprintf(out, "config:           invalid: %s\n", strings.ReplaceAll(cfgErr.Error(), "\n", "; "))
				case len(cfgFiles) == 0:
					fmt.Fprintf(out, "config:           no file found, built-in defaults only (user config: %s)\n", config.UserConfigPath())
				default:
					fmt.Fprintf(out, "config:           %s\n", strings.Join(cfgFiles, ", "))
				}
				if cfgErr == nil {
					if note := app.ConfigNote(cfgFiles, os.Environ()); note != "" {
						fmt.Fprintf(out, "config note:      %s\n", note)
					}
				}
				if len(notifyProblems) == 0 {
					fmt.Fprintln(out, "notify:           every configured channel starts")
				}
				for _, p := range notifyProblems {
					fmt.Fprintf(out, "notify:           not started: %s\n", p)
				}
			}
			if !r.JailWorks {
				return silentExit(exitFailed)
			}
			return nil
		},
	}
}
