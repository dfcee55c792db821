package main

import (
	"fmt"

	"os/user"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/rulefile"
)

func newRulesCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List, show and remove [[rules]] (and the lasting rules \"always\" wrote)",
		Long: `[[rules]] decide calls over the confirmation mode: command word prefixes
(command = ["npm", "run", "test:*"]), paths of file tools, hosts of
http_request, whole tools; each allow, ask or deny, the strictest winning.
Answering "always" to a request writes the narrowest rule that covers it into
your user config, for that workspace only; 'warden rules remove ID' takes it
back. Every creation and removal is audited, and every use is in the
tool call's audit record (rule "rules:ID").`,
	}
	db := dbFlag(cmd)
	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the rules in force in this workspace (--all: every workspace's)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadConfig(g, newLogger(c.ErrOrStderr()))
			if err != nil {
				return err
			}
			rs := rulesIn(cfg, all)
			if g.json {
				if rs == nil {
					rs = []config.Rule{}
				}
				return writeJSON(c.OutOrStdout(), rs)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tRULE\tWORKSPACE\tWHERE")
			for _, r := range rs {
				ws := r.Workspace
				if ws == "" {
					ws = "(every)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s:%d\n", orDash(r.ID), approval.Printable(describe(r), 80), approval.Printable(ws, 60), r.File, r.Line)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&all, "all", false, "also list the rules written for other workspaces")

	show := &cobra.Command{
		Use:   "show ID|FILE:LINE",
		Short: "Show one rule",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadConfig(g, newLogger(c.ErrOrStderr()))
			if err != nil {
				return err
			}
			r, ok := findRule(cfg, args[0])
			if !ok {
				return fmt.Errorf("no rule %q (warden rules list --all lists them)", args[0])
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), r)
			}
			w := c.OutOrStdout()
			p := func(k, v string) {
				if v != "" {
					fmt.Fprintf(w, "%-11s %s\n", k+":", approval.Printable(v, 0))
				}
			}
			p("id", r.ID)
			p("rule", describe(r))
			p("workspace", r.Workspace)
			p("where", fmt.Sprintf("%s:%d", r.File, r.Line))
			p("request_id", r.RequestID)
			p("created", r.Created)
			p("match", strings.Join(r.Match, " | "))
			p("not_match", strings.Join(r.NotMatch, " | "))
			return nil
		},
	}

	remove := &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a rule with an id from your user config (the next such call is asked again)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path, err := config.UserFile(nil)
			if err != nil {
				return err
			}
			st, err := openStore(c, g, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := rulefile.Remove(path, args[0])
			if err != nil {
				return err
			}
			by := "local user"
			if u, err := user.Current(); err == nil {
				by = "local user " + u.Username
			}
			rec := &audit.Record{Event: "rule_removed", Workspace: r.Workspace, Rule: r.ID, RequestID: r.RequestID,
				DecidedBy: by, Success: true, Reason: describe(r) + " (removed from " + path + ")"}
			if _, err := st.AppendAudit(c.Context(), rec); err != nil {
				return fmt.Errorf("rule %s was removed from %s, but the audit record failed: %w", r.ID, path, err)
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), r)
			}
			fmt.Fprintf(c.OutOrStdout(), "rule %s removed from %s: %s\n", r.ID, path, approval.Printable(describe(r), 400))
			return nil
		},
	}
	cmd.AddCommand(list, show, remove)
	return cmd
}

// rulesIn are the rules in force in cfg's workspace, or all of them.
func rulesIn(cfg *config.Config, all bool) []config.Rule {
	var out []config.Rule
	for _, r := range cfg.Rules {
		if all || r.Workspace == "" || r.Workspace == cfg.Workspace.Root {
			out = append(out, r)
		}
	}
	return out
}

func findRule(cfg *config.Config, key string) (config.Rule, bool) {
	for _, r := range cfg.Rules {
		if r.ID != "" && r.ID == key || fmt.Sprintf("%s:%d", r.File, r.Line) == key {
			return r, true
		}
	}
	return config.Rule{}, false
}

func describe(r config.Rule) string {
	ws := r.Workspace
	r.Workspace = ""
	s := approval.DescribeRules([]config.Rule{r})
	r.Workspace = ws
	return strings.TrimSuffix(s, ", in ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
