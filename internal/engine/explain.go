package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/tools"
)

// Explanation is what the engine would decide about a call, without
// running it or asking anyone.
type Explanation struct {
	Tool string `json:"tool"`
	// Decision is allow, ask (supervised) or deny.
	Decision string `json:"decision"`
	// Stage is where the decision was made: lookup, arguments, guard or policy.
	Stage  string `json:"stage"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason"`
	// Class is run_command's command class, when the guard judged one.
	Class string `json:"class,omitempty"`
	Risk  string `json:"risk,omitempty"`
}

// Explain runs the pipeline up to the policy decision: the same lookup,
// schema validation, hard guards and policy as Call, and nothing after.
// Auto-approve rules are not consulted: a call they would approve is "ask".
func (e *Engine) Explain(name string, args json.RawMessage) Explanation {
	cfg := e.opts.Env.Config
	x := Explanation{Tool: name}
	deny := func(stage, rule, reason string) Explanation {
		x.Decision, x.Stage, x.Rule, x.Reason = "deny", stage, rule, reason
		return x
	}
	t, ok := e.opts.Registry.Get(policy.Canonical(name))
	if !ok || !policy.AgentHas(cfg, e.agent, t.Name, t.Group) {
		return deny("lookup", "not-found", fmt.Sprintf("tool '%s' not found for this agent", name))
	}
	x.Tool = t.Name
	canonArgs, err := canonical(args)
	if err != nil {
		return deny("arguments", "invalid-arguments", err.Error())
	}
	var inst any
	_ = json.Unmarshal(canonArgs, &inst)
	if err := e.schemas[t.Name].Validate(inst); err != nil {
		return deny("arguments", "invalid-arguments", err.Error())
	}
	var facts tools.Facts
	if t.Guard != nil {
		facts, err = t.Guard(e.opts.Env, canonArgs)
		x.Class, x.Risk = facts.CommandClass, strings.TrimSpace(tools.MovedNote(facts.Locations)+facts.Risk)
		if err != nil {
			return deny("guard", ruleOf(err), err.Error())
		}
	}
	d := policy.Decide(cfg, e.agent, policy.Call{Tool: t.Name, Group: t.Group, Sensitive: t.Sensitive, CommandClass: x.Class})
	d = e.applyRules(t, canonArgs, facts, d)
	x.Stage, x.Rule, x.Reason = "policy", d.Rule, d.Reason
	switch d.Action {
	case policy.Allow:
		x.Decision = "allow"
	case policy.Supervised:
		x.Decision = "ask"
	default:
		x.Decision = "deny"
	}
	return x
}
