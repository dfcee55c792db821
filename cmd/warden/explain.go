package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/shellpolicy"
)

func init() { commands = append(commands, newExplainCmd) }

// explainSettings is what explain needs from the configuration.
type explainSettings struct {
	Mode        string
	AllowedOnly bool
	Options     *shellpolicy.Options
}

// explainConfig loads the settings explain judges with: the layered
// configuration (user file, --config, workspace file, environment, flags).
var explainConfig = func(g *globalFlags) (*explainSettings, error) {
	ld, err := config.Load(configOptions(g))
	if err != nil {
		return nil, err
	}
	cfg := ld.Config
	pats, err := shellpolicy.CompilePatterns(cfg.Commands.BlockedPatterns)
	if err != nil {
		return nil, err
	}
	return &explainSettings{
		Mode:        cfg.Security.ConfirmMode,
		AllowedOnly: cfg.Commands.AllowedOnly,
		Options: &shellpolicy.Options{
			SafeCommands:    cfg.Commands.SafeCommands,
			DevCommands:     cfg.Commands.DevCommands,
			BlockedPatterns: pats,
		},
	}, nil
}

// explainDecision is the decision for a verdict in a mode. The policy
// package owns the full rule; this one covers run_command under seed 000.
var explainDecision = func(v *shellpolicy.Verdict, s *explainSettings) string {
	switch {
	case v.Blocked:
		return "deny"
	case s.AllowedOnly && v.Class == shellpolicy.Dangerous:
		return "deny"
	case s.Mode == "yolo":
		return "allow"
	case s.Mode == "confirm-all":
		return "ask"
	case v.Class == shellpolicy.Safe:
		return "allow"
	}
	return "ask"
}

type explainOutput struct {
	Command    string                `json:"command"`
	Mode       string                `json:"mode"`
	Decision   string                `json:"decision"`
	Class      shellpolicy.Class     `json:"class"`
	Blocked    bool                  `json:"blocked"`
	Rule       string                `json:"rule,omitempty"`
	Reason     string                `json:"reason,omitempty"`
	Pos        *shellpolicy.Position `json:"pos,omitempty"`
	ParseError string                `json:"parse_error,omitempty"`
	Commands   []shellpolicy.Simple  `json:"commands"`
}

func newExplainCmd(g *globalFlags) *cobra.Command {
	c := &cobra.Command{
		Use:   "explain [--json] [--mode M] -- 'CMD'",
		Short: "Say what warden would decide about a command, and why",
		Long: "explain parses CMD as bash, judges every simple command in it and prints\n" +
			"the class of each, the blocklist rule that fired (with the position of the\n" +
			"offending word) and the decision allow|ask|deny for the confirmation mode.\n" +
			"It runs nothing. Exit status 0 whenever it printed a verdict.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("explain needs a command: warden explain -- 'CMD'")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch g.mode {
			case "", "yolo", "confirm-sensitive", "confirm-all":
			default:
				return usageErr("unknown --mode %q (want yolo, confirm-sensitive or confirm-all)", g.mode)
			}
			s, err := explainConfig(g)
			if err != nil {
				return configErrors(cmd.ErrOrStderr(), err)
			}
			if g.mode != "" {
				s.Mode = g.mode
			}
			if s.Mode == "" {
				s.Mode = "confirm-sensitive"
			}
			line := strings.Join(args, " ")
			v := shellpolicy.Judge(line, s.Options)
			out := explainOutput{
				Command: line, Mode: s.Mode, Decision: explainDecision(v, s),
				Class: v.Class, Blocked: v.Blocked, Rule: v.Rule, Reason: v.Reason,
				ParseError: v.ParseError, Commands: v.Commands,
			}
			if v.Blocked {
				out.Pos = &v.Pos
			}
			w := cmd.OutOrStdout()
			if g.json {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			printExplain(w, &out)
			return nil
		},
	}
	return c
}

func printExplain(w io.Writer, o *explainOutput) {
	fmt.Fprintf(w, "command:  %s\n", o.Command)
	fmt.Fprintf(w, "decision: %s (mode %s)\n", o.Decision, o.Mode)
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
