package policy

import (
	"fmt"
	"slices"

	"github.com/wardenhq/warden/internal/config"
)

// Action is a policy outcome.
type Action int

// The actions, from loosest to strictest.
const (
	Allow Action = iota
	Supervised
	Deny
)

func (a Action) String() string {
	switch a {
	case Allow:
		return config.PolicyAllow
	case Supervised:
		return config.PolicySupervised
	default:
		return config.PolicyDeny
	}
}

// Parse turns a policy word from configuration into an Action.
func Parse(s string) (Action, bool) {
	switch s {
	case config.PolicyAllow:
		return Allow, true
	case config.PolicySupervised:
		return Supervised, true
	case config.PolicyDeny:
		return Deny, true
	}
	return Deny, false
}

// Decision is the outcome with the rule that produced it.
type Decision struct {
	Action Action
	// Rule names what decided, e.g. "tool_policy.tools.run_command",
	// "tool_policy.groups.fs_write", "tool_policy.default",
	// "confirm_mode=confirm-sensitive".
	Rule   string
	Reason string
}

// Call describes the tool call being judged.
type Call struct {
	Agent     string
	Tool      string // canonical name
	Group     string // the tool's built-in group
	Sensitive bool
	// CommandClass is "safe", "dev" or "dangerous" for run_command, else "".
	CommandClass string
}

// Canonical returns the canonical tool name for name or an alias of it
// (config.ToolAliases: the names seeds 001/002 use).
func Canonical(name string) string {
	if c, ok := config.ToolAliases[name]; ok {
		return c
	}
	return name
}

// ReadOnlyTools are the tools the plan, review and resume agents may use;
// the config loader checks agents against the same list.
var ReadOnlyTools = config.ReadOnlyTools

// BuiltinAgents are the agents that exist without configuration; a nil tool
// list means every tool. They carry no confirmation mode of their own: the
// configured mode applies (seed 000 gives plan/review/resume yolo, which is
// moot since their tools are read-only and allowed in every mode but
// confirm-all, where the user asked to confirm everything).
var BuiltinAgents = map[string]config.Agent{
	"build":  {MaxSteps: 50},
	"plan":   {AllowedTools: ReadOnlyTools, MaxSteps: 20},
	"review": {AllowedTools: ReadOnlyTools, MaxSteps: 20},
	"resume": {AllowedTools: ReadOnlyTools, MaxSteps: 15},
}

// LookupAgent returns the agent called name: configured agents first, then
// the built-in ones. The empty name is "build".
func LookupAgent(cfg *config.Config, name string) (config.Agent, error) {
	if name == "" {
		name = "build"
	}
	a, configured := cfg.Agents[name]
	b, builtin := BuiltinAgents[name]
	switch {
	case configured && builtin:
		// Configuration may narrow a built-in agent, never widen it.
		if a.AllowedTools == nil {
			a.AllowedTools = b.AllowedTools
		} else if b.AllowedTools != nil {
			a.AllowedTools = intersect(a.AllowedTools, b.AllowedTools)
		}
		if a.ConfirmMode == "" {
			a.ConfirmMode = b.ConfirmMode
		}
		if a.MaxSteps == 0 {
			a.MaxSteps = b.MaxSteps
		}
		return a, nil
	case configured:
		if a.AllowedTools == nil {
			a.AllowedTools = ReadOnlyTools
		}
		return a, nil
	case builtin:
		return b, nil
	}
	return config.Agent{}, fmt.Errorf("unknown agent %q (built-in agents: build, plan, review, resume)", name)
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, Canonical(x)) {
			out = append(out, Canonical(x))
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// AgentHas reports whether agent may use tool (canonical name, built-in
// group group). Allowed tool lists may name tools, aliases or groups.
func AgentHas(cfg *config.Config, agent config.Agent, tool, group string) bool {
	if agent.AllowedTools == nil {
		return true
	}
	for _, t := range agent.AllowedTools {
		if Canonical(t) == tool || t == group || slices.Contains(cfg.Security.ToolGroups[t], tool) {
			return true
		}
	}
	return false
}

// Groups returns every group tool belongs to: its built-in group, then the
// user-defined groups listing it, in name order.
func Groups(cfg *config.Config, tool, builtin string) []string {
	var out []string
	if builtin != "" {
		out = append(out, builtin)
	}
	names := make([]string, 0, len(cfg.Security.ToolGroups))
	for g := range cfg.Security.ToolGroups {
		names = append(names, g)
	}
	slices.Sort(names)
	for _, g := range names {
		for _, t := range cfg.Security.ToolGroups[g] {
			if Canonical(t) == tool && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

var modeRank = map[string]int{config.ModeYolo: 0, config.ModeAuto: 1, config.ModeConfirmSensitive: 2, config.ModeConfirmAll: 3}

// EffectiveMode is the stricter of the configured mode and the agent's own:
// an agent's confirm_mode can tighten the mode, never loosen it.
func EffectiveMode(cfg *config.Config, agent config.Agent) string {
	mode := cfg.Security.ConfirmMode
	if mode == "" {
		mode = config.ModeConfirmSensitive
	}
	if r, ok := modeRank[agent.ConfirmMode]; ok && r > modeRank[mode] {
		mode = agent.ConfirmMode
	}
	return mode
}

// Decide resolves the policy for call: an explicit tool policy, else the
// strictest policy of the groups the tool is in, else the default policy,
// else the confirmation mode. Aliases in configuration count as their tool.
func Decide(cfg *config.Config, agent config.Agent, call Call) Decision {
	tp := cfg.Security.ToolPolicy
	for name, word := range tp.Tools {
		if Canonical(name) == call.Tool {
			a, _ := Parse(word)
			return Decision{Action: a, Rule: "tool_policy.tools." + name,
				Reason: fmt.Sprintf("security.tool_policy.tools.%s = %q", name, word)}
		}
	}
	var (
		found bool
		best  Decision
	)
	for _, g := range Groups(cfg, call.Tool, call.Group) {
		word, ok := tp.Groups[g]
		if !ok {
			continue
		}
		a, _ := Parse(word)
		if !found || a > best.Action {
			best = Decision{Action: a, Rule: "tool_policy.groups." + g,
				Reason: fmt.Sprintf("security.tool_policy.groups.%s = %q", g, word)}
			found = true
		}
	}
	if found {
		return best
	}
	if tp.Default != "" {
		a, _ := Parse(tp.Default)
		return Decision{Action: a, Rule: "tool_policy.default",
			Reason: fmt.Sprintf("security.tool_policy.default = %q", tp.Default)}
	}
	return byMode(EffectiveMode(cfg, agent), call)
}

func byMode(mode string, call Call) Decision {
	rule := "confirm_mode=" + mode
	switch mode {
	case config.ModeYolo:
		return Decision{Action: Allow, Rule: rule, Reason: "yolo mode asks for nothing"}
	case config.ModeConfirmAll:
		return Decision{Action: Supervised, Rule: rule, Reason: "confirm-all asks for every call"}
	}
	if call.Tool == "run_command" && call.CommandClass != "" {
		if call.CommandClass == "safe" {
			return Decision{Action: Allow, Rule: rule, Reason: "the command is classified safe"}
		}
		return Decision{Action: Supervised, Rule: rule,
			Reason: fmt.Sprintf("the command is classified %s", call.CommandClass)}
	}
	if call.Sensitive {
		return Decision{Action: Supervised, Rule: rule, Reason: call.Tool + " is a sensitive tool"}
	}
	return Decision{Action: Allow, Rule: rule, Reason: call.Tool + " is read-only"}
}
