package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/hostsetup"
)

func newSetupCmd(g *globalFlags) *cobra.Command {
	var (
		write, check, exclusive, managed bool
		db                               *string
	)
	cmd := &cobra.Command{
		Use:       "setup claude-code|codex|gemini-cli|cursor [--workspace DIR] [--write] [--check]",
		Short:     "Print, write or check what an agent host needs to be guarded by warden",
		ValidArgs: hostsetup.Hosts,
		Long: `setup plans the changes to the host's own configuration files that put warden
in front of it, and prints them as a diff:

  - warden's MCP server, started with the environment warden needs passed
    through (where its configuration and database are, the secrets its
    configuration names) by reference to each variable, never its value;
  - the hooks that send every one of the host's own tool calls to
    'warden hook HOST' (Claude Code, Codex, Gemini CLI), with a timeout above
    [hooks] wait_secs;
  - permissions that let the host run warden's MCP tools without asking again
    (warden asks a person itself), and with --exclusive deny the host's own
    shell, file and web tools so that warden is the only path;
  - the host's MCP tool timeout, above security.approval.mcp_wait_secs;
  - Codex: no terminal for commands (what is typed into one later is not
    passed to hooks), and its hook trust (see the note), or with --managed
    (root) the hook in /etc/codex/requirements.toml, where it needs no trust.

--write writes the changes, keeping a copy of each file it changes
(FILE.warden-backup-TIME). --check reads the host's configuration and says
what is missing; its exit status is 1 when something is.

--workspace DIR makes the host start warden on DIR; by default warden works
in the directory the host starts it in (the project).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if write && check {
				return usageErr("--write and --check: choose one")
			}
			exe, err := os.Executable()
			if err == nil {
				exe, err = filepath.EvalSymlinks(exe)
			}
			if err != nil {
				return fmt.Errorf("cannot find the warden program: %w", err)
			}
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			log := newLogger(c.ErrOrStderr())
			cfg, err := loadConfig(g, log)
			if err != nil {
				return configErrors(c.ErrOrStderr(), err)
			}
			o := hostsetup.Options{Host: args[0], Warden: exe, Home: home, CodexHome: os.Getenv("CODEX_HOME"),
				Config: cfg, Getenv: os.Getenv, Exclusive: exclusive, Managed: managed, DB: *db}
			if g.workspace != "" {
				if o.Workspace, err = filepath.Abs(g.workspace); err != nil {
					return err
				}
			}
			if g.config != "" {
				if o.ConfigFile, err = filepath.Abs(g.config); err != nil {
					return err
				}
			}
			if o.DB != "" {
				if o.DB, err = filepath.Abs(o.DB); err != nil {
					return err
				}
			}
			w := c.OutOrStdout()
			if check {
				miss, p, err := hostsetup.Check(o)
				if err != nil {
					return usageOrErr(err)
				}
				if len(miss) == 0 {
					fmt.Fprintf(w, "%s is set up for warden.\n", o.Host)
				}
				for _, m := range miss {
					fmt.Fprintf(w, "missing: %s\n", m)
				}
				printNotes(w, p.Notes)
				if len(miss) > 0 {
					fmt.Fprintf(w, "run 'warden setup %s --write' to add what is missing\n", o.Host)
					return silentExit(exitFailed)
				}
				return nil
			}
			p, err := hostsetup.PlanFor(o)
			if err != nil {
				return usageOrErr(err)
			}
			changed := false
			for _, f := range p.Files {
				if !f.Changed() {
					fmt.Fprintf(w, "# %s: already set up\n", f.Path)
					continue
				}
				changed = true
				fmt.Fprintf(w, "# %s: %s\n%s", f.Path, f.Why, f.Diff())
			}
			if write && changed {
				backups, err := p.Apply(time.Now())
				for _, b := range backups {
					fmt.Fprintf(w, "kept the previous file as %s\n", b)
				}
				if err != nil {
					return err
				}
				fmt.Fprintln(w, "written.")
			} else if changed {
				fmt.Fprintf(w, "nothing written: run 'warden setup %s --write' to write this\n", o.Host)
			}
			printNotes(w, p.Notes)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&write, "write", false, "write the changes (a backup of each file is kept)")
	f.BoolVar(&check, "check", false, "say what the host's configuration lacks; exit status 1 when something is missing")
	f.BoolVar(&exclusive, "exclusive", false, "deny the host's own shell, file and web tools: warden's MCP tools are the only path")
	f.BoolVar(&managed, "managed", false, "codex: write the hook into /etc/codex/requirements.toml (root), where it needs no trust")
	db = dbFlag(cmd)
	return cmd
}

func printNotes(w interface{ Write([]byte) (int, error) }, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// usageOrErr makes an unknown host a usage error.
func usageOrErr(err error) error {
	if strings.Contains(err.Error(), "unknown agent host") {
		return usageErr("%v", err)
	}
	return err
}
