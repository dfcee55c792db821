package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/shellpolicy"
	"github.com/wardenhq/warden/internal/tools"
)

type explainOutput struct {
	Command  string `json:"command"`
	Mode     string `json:"mode"`
	Decision string `json:"decision"`
	// DecidedBy is the rule that made the decision (a blocklist rule, a
	// tool policy, the confirmation mode, allowed-only, ...).
	DecidedBy string `json:"decided_by"`
	Why       string `json:"why"`
	// Stage is where the engine decided; AutoApprove and Grant name the
	// rule (file:line) or grant that approves a supervised call.
	Stage       string                `json:"stage"`
	AutoApprove string                `json:"auto_approve,omitempty"`
	Grant       *engine.GrantRef      `json:"grant,omitempty"`
	Class       shellpolicy.Class     `json:"class"`
	Blocked     bool                  `json:"blocked"`
	Rule        string                `json:"rule,omitempty"`
	Reason      string                `json:"reason,omitempty"`
	Pos         *shellpolicy.Position `json:"pos,omitempty"`
	ParseError  string                `json:"parse_error,omitempty"`
	Commands    []shellpolicy.Simple  `json:"commands"`
	// Ceiling names the managed policy line behind the deciding rule.
	Ceiling string `json:"ceiling,omitempty"`
}

func newExplainCmd(g *globalFlags) *cobra.Command {
	var (
		tool, toolArgs string
		agent, session string
		netTarget      string
	)
	c := &cobra.Command{
		Use:   "explain [--json] [--mode M] -- 'CMD' | explain --tool NAME --args JSON | explain --net HOST[:PORT]",
		Short: "Say what warden would decide about a command or a tool call, and why",
		Long: "explain parses CMD as bash, judges every simple command in it and prints\n" +
			"the class of each, the blocklist rule that fired (with the position of the\n" +
			"offending word) and the decision allow|ask|deny for the configuration and\n" +
			"mode. With --tool it says the same of any tool call. It runs nothing and\n" +
			"asks nobody: it takes the engine's own decision stage, the one every call\n" +
			"takes (lookup, schema, hard guards, policy, auto-approve rules, grants), and\n" +
			"names the auto-approve rule (file:line) or the grant (--session) that would\n" +
			"let a supervised call run without asking.\n" +
			"With --net it says what a jail's egress policy ([sandbox.egress]) does with\n" +
			"a connection to HOST:PORT (443 if absent), resolving the name only when\n" +
			"the policy admits it.\n" +
			"Exit status 0 whenever it printed a verdict.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if netTarget != "" {
				if tool != "" || len(args) > 0 {
					return usageErr("--net explains a destination alone, without a command or --tool")
				}
				return explainNet(cmd, g, netTarget)
			}
			if (tool == "") == (len(args) == 0) {
				return usageErr("explain needs a command (warden explain -- 'CMD') or a tool call (warden explain --tool NAME --args JSON), not both")
			}
			raw := json.RawMessage(toolArgs)
			if tool != "" && !json.Valid(raw) {
				return usageErr("--args is not valid JSON: %s", toolArgs)
			}
			log := newLogger(cmd.ErrOrStderr())
			ld, err := config.Load(configOptions(g))
			if err != nil {
				return configErrors(cmd.ErrOrStderr(), err)
			}
			for _, w := range ld.Warnings {
				log.Warn(w)
			}
			a, err := app.New(cmd.Context(), app.Options{Flags: g.app(false, false), Config: ld.Config, Agent: agent, Session: session, Logger: log})
			if err != nil {
				return configErrors(cmd.ErrOrStderr(), err)
			}
			defer a.Close()
			w := cmd.OutOrStdout()
			if tool != "" {
				x := a.Engine().Explain(tool, raw)
				ceiling := ceilingOf(ld, x.Stage, x.Rule)
				if g.json {
					return writeJSON(w, struct {
						engine.Explanation
						Ceiling string `json:"ceiling,omitempty"`
					}{x, ceiling})
				}
				fmt.Fprintf(w, "tool:     %s\ndecision: %s (mode %s)\nstage:    %s\nrule:     %s\nwhy:      %s\n",
					x.Tool, x.Decision, x.Mode, x.Stage, x.Rule, x.Reason)
				if ceiling != "" {
					fmt.Fprintf(w, "ceiling:  %s\n", ceiling)
				}
				printApprovedBy(w, x.AutoApprove, x.Grant)
				if x.Risk != "" {
					fmt.Fprintf(w, "risk:\n%s\n", x.Risk)
				}
				return nil
			}
			line := strings.Join(args, " ")
			opts, err := tools.JudgeOptions(a.Config())
			if err != nil {
				return err
			}
			v := shellpolicy.Judge(line, opts)
			cmdArgs, _ := json.Marshal(map[string]string{"command": line})
			x := a.Engine().Explain("run_command", cmdArgs)
			out := explainOutput{
				Command: line, Mode: a.Config().Security.ConfirmMode, Decision: x.Decision,
				DecidedBy: x.Rule, Why: x.Reason, Stage: x.Stage, AutoApprove: x.AutoApprove, Grant: x.Grant,
				Class: v.Class, Blocked: v.Blocked, Rule: v.Rule, Reason: v.Reason,
				ParseError: v.ParseError, Commands: v.Commands, Ceiling: ceilingOf(ld, x.Stage, x.Rule),
			}
			if v.Blocked {
				out.Pos = &v.Pos
			}
			if g.json {
				return writeJSON(w, out)
			}
			printExplain(w, &out)
			return nil
		},
	}
	c.Flags().StringVar(&tool, "tool", "", "explain a call of this tool instead of a command")
	c.Flags().StringVar(&toolArgs, "args", "{}", "the tool call's arguments as a JSON object (with --tool)")
	c.Flags().StringVar(&agent, "agent", "", "the agent whose tool set and mode apply")
	c.Flags().StringVar(&session, "session", "", "the session whose grants apply (a grant covers one call in one session)")
	c.Flags().StringVar(&netTarget, "net", "", "explain what the jail's egress policy does with a connection to HOST[:PORT]")
	return c
}

// printApprovedBy names the auto-approve rule or the grant that lets a
// supervised call run without asking.
func printApprovedBy(w io.Writer, rule string, g *engine.GrantRef) {
	if rule != "" {
		fmt.Fprintf(w, "auto-approve: %s\n", rule)
	}
	if g != nil {
		fmt.Fprintf(w, "grant:    %s by %s until %s (%d uses)\n", g.ID, g.CreatedBy, g.ExpiresAt.Local().Format(time.DateTime), g.Uses)
	}
}

func printExplain(w io.Writer, o *explainOutput) {
	fmt.Fprintf(w, "command:  %s\n", o.Command)
	fmt.Fprintf(w, "decision: %s (mode %s; %s: %s)\n", o.Decision, o.Mode, o.DecidedBy, o.Why)
	if o.Ceiling != "" {
		fmt.Fprintf(w, "ceiling:  %s\n", o.Ceiling)
	}
	printApprovedBy(w, o.AutoApprove, o.Grant)
	fmt.Fprintf(w, "class:    %s\n", o.Class)
	if o.Blocked {
		fmt.Fprintf(w, "blocked:  rule %s at %s: %s\n", o.Rule, o.Pos, o.Reason)
		if o.Pos != nil && o.Pos.Line > 0 {
			lines := strings.Split(o.Command, "\n")
			if o.Pos.Line <= len(lines) {
				fmt.Fprintf(w, "          %s\n          %s^\n", lines[o.Pos.Line-1], strings.Repeat(" ", max(o.Pos.Col-1, 0)))
			}
		}
	}
	if len(o.Commands) > 0 {
		fmt.Fprintln(w, "commands:")
	}
	for _, s := range o.Commands {
		indent := strings.Repeat("  ", s.Depth)
		rule := ""
		if s.Rule != "" {
			rule = " [" + s.Rule + "]"
		}
		fmt.Fprintf(w, "  %s%-9s %s%s\n  %s          %s\n", indent, s.Class, s.Text, rule, indent, s.Why)
	}
}

// ceilingOf names the managed policy behind a policy decision's rule: the
// line that set the deciding value, or the one whose ceiling holds it.
func ceilingOf(ld *config.Loaded, stage, rule string) string {
	if stage != "policy" {
		return ""
	}
	key := ""
	switch {
	case strings.HasPrefix(rule, "tool_policy."):
		key = "security." + rule
	case strings.HasPrefix(rule, "confirm_mode="):
		key = "security.confirm_mode"
	}
	c := ld.CeilingOf(key)
	if key == "" || c == "" {
		return ""
	}
	if strings.HasPrefix(ld.Origin[key], "managed:") {
		return "set by the managed policy " + c + " (no other source may loosen it)"
	}
	return "within the ceiling of the managed policy " + c
}
