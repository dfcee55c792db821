package rules

import (
	"fmt"

	"github.com/wardenhq/warden/internal/shellpolicy"
)

// Set is the rules in force for one workspace.
type Set struct {
	rules []*Rule
	// askDenyCommands is whether any ask or deny command rule exists: only
	// then must a line's every simple command be listed by the judge.
	askDenyCommands bool
}

// NewSet compiles specs into a Set; the error names the first bad rule.
func NewSet(specs []Spec) (*Set, error) {
	s := &Set{}
	for _, sp := range specs {
		r, err := Compile(sp)
		if err != nil {
			if sp.Source != "" {
				return nil, fmt.Errorf("rule at %s: %w", sp.Source, err)
			}
			return nil, err
		}
		s.add(r)
	}
	return s, nil
}

func (s *Set) add(r *Rule) {
	s.rules = append(s.rules, r)
	if r.Command != nil && r.Decision > Allow {
		s.askDenyCommands = true
	}
}

// Len is the number of rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Rules returns the rules, in the order they were given.
func (s *Set) Rules() []*Rule {
	if s == nil {
		return nil
	}
	return s.rules
}

// Call is what the rules see of a tool call.
type Call struct {
	Tool string // canonical name
	// Command is run_command's line.
	Command string
	// Judged is the shell judge's verdict on Command (its Runs: every
	// command the line runs, wrappers unwrapped, at every depth); nil makes
	// Decide judge the line itself with the built-in policy. Ask and deny
	// rules match its commands.
	Judged *shellpolicy.Verdict
	// Covered reports a simple command of a plain line that needs no allow
	// rule (a safe command the mode allows anyway); nil: none.
	Covered func(argv []string) bool
	// Paths are the workspace-relative paths the call names and the paths
	// its changes really land on: a path rule must match each.
	Paths []string
	// Host is http_request's host.
	Host string
}

// Result is what the rules decided about a call.
type Result struct {
	Decision Decision // None when no rule decides
	// Rule is the strictest rule that matched (for allow: the first of the
	// rules that together allow the line).
	Rule *Rule
	// Why explains the decision, or why allow rules did not apply.
	Why string
}

// Decide applies the rules to c: the strictest decision of the rules that
// match. For a command line, ask and deny rules match any simple command
// the judge lists; allow needs a plain line whose every simple command an
// allow rule (or Covered) accepts.
func (s *Set) Decide(c Call) Result {
	if s.Len() == 0 {
		return Result{}
	}
	if c.Tool == CommandTool {
		return s.decideCommand(c)
	}
	var best Result
	for _, r := range s.rules {
		if r.Tool != c.Tool || r.Command != nil {
			continue
		}
		switch {
		case r.Path != "" && !r.matchPaths(c.Paths):
			continue
		case r.Host != "" && !r.matchHost(c.Host):
			continue
		}
		if r.Decision > best.Decision {
			best = Result{Decision: r.Decision, Rule: r, Why: "rule " + r.String()}
		}
	}
	return best
}

func (s *Set) decideCommand(c Call) Result {
	var best Result
	consider := func(r *Rule, argv []string) {
		if r.Decision > best.Decision && r.Decision > Allow {
			best = Result{Decision: r.Decision, Rule: r, Why: fmt.Sprintf("rule %s matches %s", r, JoinArgv(argv))}
		}
	}
	plain, perr := Plain(c.Command)
	// Tool rules (no command words) apply to every line.
	for _, r := range s.rules {
		if r.Tool == CommandTool && r.Command == nil {
			consider(r, []string{c.Command})
		}
	}
	if s.askDenyCommands {
		v := c.Judged
		if v == nil {
			v = shellpolicy.Judge(c.Command, nil)
		}
		judged, unseen := v.Runs()
		if unseen && s.hasDeny() {
			// A denied command could run where the judge cannot see: a
			// person decides, whatever the mode.
			best = Result{Decision: Ask, Rule: s.firstDeny(), Why: "the line runs code the judge cannot see, which could run a denied command"}
		}
		for _, argvs := range [][][]string{plain, judged} {
			for _, argv := range argvs {
				for _, r := range s.rules {
					if r.Command != nil && r.Decision > Allow && r.matchAnywhere(argv) {
						consider(r, argv)
					}
				}
			}
		}
	}
	if best.Decision > None {
		return best
	}
	if perr != nil {
		if s.hasAllowCommands() {
			best.Why = "allow rules apply only to plain lines: " + perr.Error()
		}
		return best
	}
	var first *Rule
	for _, argv := range plain {
		r := s.allowFor(argv)
		if r == nil {
			if c.Covered != nil && c.Covered(argv) {
				continue
			}
			best.Why = fmt.Sprintf("no allow rule covers %s", JoinArgv(argv))
			return best
		}
		if first == nil {
			first = r
		}
	}
	if first == nil {
		return best // every command was covered without a rule
	}
	return Result{Decision: Allow, Rule: first, Why: "rule " + first.String()}
}

func (s *Set) allowFor(argv []string) *Rule {
	for _, r := range s.rules {
		if r.Command != nil && r.Decision == Allow && r.matchArgv(argv) {
			return r
		}
	}
	return nil
}

func (s *Set) hasDeny() bool { return s.firstDeny() != nil }

func (s *Set) firstDeny() *Rule {
	for _, r := range s.rules {
		if r.Command != nil && r.Decision == Deny {
			return r
		}
	}
	return nil
}

func (s *Set) hasAllowCommands() bool {
	for _, r := range s.rules {
		if r.Command != nil && r.Decision == Allow {
			return true
		}
	}
	return false
}
