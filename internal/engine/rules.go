package engine

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"syscall"

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
	set := e.currentRules()
	if set.Len() == 0 {
		return d, false
	}
	res := set.Decide(e.ruleInput(t, args, facts))
	if res.Rule == nil {
		return d, false
	}
	rule := "rules:" + res.Rule.Name()
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

// compileRules compiles the rules that hold in the engine's workspace.
func compileRules(rs []config.Rule, dir string) (*rules.Set, error) {
	s, err := config.RuleSet(&config.Config{Rules: rs}, dir)
	if err != nil {
		return nil, fmt.Errorf("engine: rules: %w", err)
	}
	return s, nil
}

// fileStamp is what a file looked like: a change of any field means it
// was written (rulefile replaces it by rename, so the inode changes).
type fileStamp struct {
	ino   uint64
	size  int64
	mtime int64
	ok    bool
}

func stampOf(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	s := fileStamp{size: st.Size(), mtime: st.ModTime().UnixNano(), ok: true}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.ino = sys.Ino
	}
	return s
}

// Rules returns the [[rules]] in force in the engine's workspace, as the
// next call would see them: the egress proxy's questions about hosts are
// decided by its host rules for NetworkTool before a person is asked.
func (e *Engine) Rules() *rules.Set { return e.currentRules() }

// currentRules returns the rules in force, reading RulesFile's again when
// it changed since: a rule a person wrote by answering "always" (here or
// in another process) holds from the next call on, and one removed with
// `warden rules remove` stops holding. A RulesFile that no longer loads
// keeps the rules read last, and says so.
func (e *Engine) currentRules() *rules.Set {
	e.rulesMu.Lock()
	defer e.rulesMu.Unlock()
	path := e.opts.RulesFile
	if path == "" || e.opts.ReloadRules == nil {
		return e.rules
	}
	now := stampOf(path)
	if now == e.rulesStamp {
		return e.rules
	}
	e.rulesStamp = now
	rs, err := e.opts.ReloadRules()
	if err == nil {
		var set *rules.Set
		if set, err = compileRules(rs, e.workRoot); err == nil {
			e.rules = set
			return e.rules
		}
	}
	e.opts.Log.Warn("the configuration does not load any more; keeping the rules read before", "file", path, "err", err)
	return e.rules
}
