package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/config"
)

func newConfigCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or check warden's configuration",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and where each value comes from",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ld, err := config.Load(configOptions(g))
			if err != nil {
				return configErrors(c.ErrOrStderr(), err)
			}
			for _, w := range ld.Warnings {
				fmt.Fprintf(c.ErrOrStderr(), "warden: %s\n", w)
			}
			if g.json {
				ceiling := map[string]string{}
				for _, s := range ld.Settings() {
					if s.Ceiling != "" {
						ceiling[s.Key] = s.Ceiling
					}
				}
				return writeJSON(c.OutOrStdout(), struct {
					Config   *config.Config    `json:"config"`
					Origin   map[string]string `json:"origin"`
					Managed  string            `json:"managed,omitempty"`
					Ceiling  map[string]string `json:"ceiling,omitempty"`
					Warnings []string          `json:"warnings"`
					Files    []string          `json:"files"`
				}{ld.Config, ld.Origin, ld.Managed, ceiling, nonNilStrings(ld.Warnings), nonNilStrings(ld.Files)})
			}
			if ld.Managed != "" {
				fmt.Fprintf(c.OutOrStdout(), "managed policy: %s (settings marked [ceiling] may only be tightened)\n", ld.Managed)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
			for _, s := range ld.Settings() {
				src := s.Origin
				if s.Ceiling != "" {
					src += "  [ceiling: " + s.Ceiling + "]"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, config.FormatValue(s.Value), src)
			}
			return tw.Flush()
		},
	})
	var managed bool
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate the user config and the workspace file (or FILE); exit 1 listing every error",
		Long: `Validate configuration. Without FILE: the managed policy, the user config,
the --config file and the workspace file of --workspace, including the rules
that the workspace file may only tighten the user's settings and that no source
may loosen the managed policy. With FILE: that file alone (a file named
warden.toml or warden.yaml is checked as a workspace file). With --managed: the
managed policy alone (/etc/warden/managed.toml): its owner and mode (root, not
group- or world-writable), its syntax and its values.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var err error
			if managed {
				if len(args) > 0 {
					return usageErr("--managed checks the managed policy; it takes no FILE")
				}
				path, found, err := config.CheckManaged(nil)
				if err == nil && !found {
					fmt.Fprintf(c.ErrOrStderr(), "warden: no managed policy at %s\n", path)
					return silentExit(exitFailed)
				}
				var errs *config.Errors
				if err != nil && !errors.As(err, &errs) {
					err = &config.Errors{List: []*config.Error{{File: path, Msg: err.Error()}}}
				}
				return reportCheck(c.OutOrStdout(), c.ErrOrStderr(), g.json, err)
			}
			if len(args) == 1 {
				base := filepath.Base(args[0])
				err = config.CheckFile(args[0], base == "warden.toml" || base == "warden.yaml")
			} else {
				err = config.Check(configOptions(g))
			}
			return reportCheck(c.OutOrStdout(), c.ErrOrStderr(), g.json, err)
		},
	}
	check.Flags().BoolVar(&managed, "managed", false, "check the managed policy ("+config.DefaultManagedFile+") alone")
	cmd.AddCommand(check)
	return cmd
}

func configOptions(g *globalFlags) config.LoadOptions {
	return config.LoadOptions{
		WorkspaceDir: g.workspace,
		ExtraFile:    g.config,
		Flags:        config.Overrides{Mode: g.mode},
	}
}

// configErrors prints every configuration error, one per line, and fails.
func configErrors(stderr io.Writer, err error) error {
	var errs *config.Errors
	if !errors.As(err, &errs) {
		return err
	}
	for _, e := range errs.List {
		fmt.Fprintf(stderr, "warden: error: %s\n", e)
	}
	return silentExit(exitFailed)
}

func reportCheck(stdout, stderr io.Writer, asJSON bool, err error) error {
	var errs *config.Errors
	if err != nil && !errors.As(err, &errs) {
		return err
	}
	if asJSON {
		type item struct {
			File  string `json:"file"`
			Line  int    `json:"line,omitempty"`
			Col   int    `json:"col,omitempty"`
			Key   string `json:"key,omitempty"`
			Value string `json:"value,omitempty"`
			Msg   string `json:"msg"`
			Text  string `json:"text"`
		}
		out := struct {
			OK     bool   `json:"ok"`
			Errors []item `json:"errors"`
		}{OK: err == nil, Errors: []item{}}
		if errs != nil {
			for _, e := range errs.List {
				out.Errors = append(out.Errors, item{e.File, e.Line, e.Col, e.Key, e.Value, e.Msg, e.Error()})
			}
		}
		if werr := writeJSON(stdout, out); werr != nil {
			return werr
		}
	} else if errs == nil {
		fmt.Fprintln(stdout, "ok")
	} else {
		for _, e := range errs.List {
			fmt.Fprintln(stdout, e)
		}
	}
	if errs != nil {
		fmt.Fprintf(stderr, "warden: error: %d configuration problem(s)\n", len(errs.List))
		return silentExit(exitFailed)
	}
	return nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
