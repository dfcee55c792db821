package engine

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/rules"
	"github.com/wardenhq/warden/internal/shellpolicy"
	"github.com/wardenhq/warden/internal/tools"
)

// ruleInput is what the rules see of a call, read from its canonical
// arguments and what its guard found.
func (e *Engine) ruleInput(t *tools.Tool, args json.RawMessage, facts tools.Facts) rules.Call {
	c := rules.Call{Tool: t.Name}
	var a struct {
		Command string `json:"command"`
		Path    string `json:"path"`
		URL     string `json:"url"`
	}
	_ = json.Unmarshal(args, &a)
	switch {
	case t.Name == rules.CommandTool:
		c.Command = a.Command
		c.Covered = e.coveredByMode
	case t.Name == "http_request":
		if u, err := url.Parse(a.URL); err == nil {
			c.Host = u.Hostname()
		}
	}
	// A path rule must match the path as named and where the change
	// really lands.
	for _, l := range facts.Locations {
		c.Paths = append(c.Paths, l.Path, l.Real)
	}
	if len(facts.Locations) == 0 && a.Path != "" {
		c.Paths = []string{a.Path}
	}
	return c
}

// coveredByMode reports whether a simple command of a plain line would be
// allowed without a rule: judged alone (with the configured options), not
// blocked, and allowed by the policy for its class.
func (e *Engine) coveredByMode(argv []string) bool {
	e.judgeOnce.Do(func() {
		if o, err := tools.JudgeOptions(e.opts.Env.Config); err == nil {
			e.judgeOpts = o
		}
	})
	if e.judgeOpts == nil {
		return false // run_command refuses every call with this error
	}
	v := shellpolicy.Judge(rules.JoinArgv(argv), e.judgeOpts)
	if v.Blocked {
		return false
	}
	d := policy.Decide(e.opts.Env.Config, e.agent, policy.Call{Tool: rules.CommandTool, Group: "shell", Sensitive: true, CommandClass: v.Class.String()})
	return d.Action == policy.Allow
}

// applyRules lets the [[rules]] decide over the policy: a deny rule refuses,
// an ask rule makes an allowed call supervised, an allow rule runs a
// supervised call unasked. A policy deny (an explicit tool policy) stays:
// an allow rule never lifts it. The hard guards ran before; no rule
// reaches them.
// It reports whether a rule changed the decision.
func (e *Engine) applyRules(t *tools.Tool, args json.RawMessage, facts tools.Facts, d policy.Decision) (policy.Decision, bool) {
	if e.rules.Len() == 0 {
		return d, false
	}
	res := e.rules.Decide(e.ruleInput(t, args, facts))
	if res.Rule == nil {
		return d, false
	}
	rule := "rules:" + ruleName(res.Rule)
	switch res.Decision {
	case rules.Deny:
		return policy.Decision{Action: policy.Deny, Rule: rule, Reason: res.Why}, true
	case rules.Ask:
		if d.Action == policy.Allow {
			return policy.Decision{Action: policy.Supervised, Rule: rule, Reason: res.Why}, true
		}
	case rules.Allow:
		if d.Action == policy.Supervised {
			return policy.Decision{Action: policy.Allow, Rule: rule, Reason: res.Why}, true
		}
	}
	return d, false
}

// ruleName names a rule in audit records and refusals: its id, else where
// it is written.
func ruleName(r *rules.Rule) string {
	if r.ID != "" {
		return r.ID
	}
	if r.Source != "" {
		return r.Source
	}
	return r.String()
}

// compileRules compiles the rules that hold in the engine's workspace.
func compileRules(cfg *config.Config, dir string) (*rules.Set, error) {
	s, err := config.RuleSet(cfg, dir)
	if err != nil {
		return nil, fmt.Errorf("engine: rules: %w", err)
	}
	return s, nil
}
