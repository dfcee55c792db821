package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/config"
)

// modes are the values --mode takes: every confirmation mode.
var modes = config.Modes

// noWorkspace lists the commands on which the global --workspace and
// --mode have no effect: they act on the user's database or print
// something of the binary, across workspaces. Such a flag is refused
// rather than silently ignored. (approvals list filters by --workspace.)
var noWorkspace = []string{
	"warden approvals show", "warden approvals approve", "warden approvals deny",
	"warden approvals grants", "warden approvals revoke",
	"warden audit", "warden store", "warden version",
}

// checkGlobalFlags is the root's PersistentPreRunE: the checks of the
// global flags every command shares, as usage errors (exit 2).
func checkGlobalFlags(c *cobra.Command, g *globalFlags) error {
	if g.mode != "" && !slices.Contains(modes, g.mode) {
		return usageErr("--mode %q: want one of %s", g.mode, strings.Join(modes, ", "))
	}
	path := c.CommandPath()
	for _, p := range noWorkspace {
		if path != p && !strings.HasPrefix(path, p+" ") {
			continue
		}
		for _, name := range []string{"workspace", "mode"} {
			if f := c.Flag(name); f != nil && f.Changed {
				return usageErr("--%s has no effect on `%s`: it acts on every workspace's requests and audit rows; leave it out", name, path)
			}
		}
	}
	return nil
}

// flagHint adds to a flag error of a command that takes a command line
// (explain, exec) the hint to put that line after --: `warden explain ls
// -la` reads -la as warden's own flag.
func flagHint(c *cobra.Command, err error) error {
	switch c.CommandPath() {
	case "warden explain", "warden exec":
		if strings.Contains(err.Error(), "unknown shorthand flag") || strings.Contains(err.Error(), "unknown flag") {
			return withHint(err, "put the command after --, as in: "+c.CommandPath()+" -- ls -la")
		}
	}
	return err
}

// userConfigName is the user config's path for a hint, or its usual name
// when no variable gives one.
func userConfigName() string {
	if p := config.UserConfigPath(); p != "" {
		return p
	}
	return "$XDG_CONFIG_HOME/warden/config.toml"
}
