package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/wardenhq/warden/internal/rules"
)

// Rule is one [[rules]] entry: a word-prefix command rule, a path rule for a
// file tool, a host rule or a whole-tool rule (internal/rules), deciding
// allow, ask or deny. Match and NotMatch are examples checked at load.
type Rule struct {
	Command  []string `toml:"command" yaml:"command" json:"command,omitempty"`
	Exact    bool     `toml:"exact" yaml:"exact" json:"exact,omitempty"`
	Tool     string   `toml:"tool" yaml:"tool" json:"tool,omitempty"`
	Path     string   `toml:"path" yaml:"path" json:"path,omitempty"`
	Host     string   `toml:"host" yaml:"host" json:"host,omitempty"`
	Decision string   `toml:"decision" yaml:"decision" json:"decision"`
	Match    []string `toml:"match" yaml:"match" json:"match,omitempty"`
	NotMatch []string `toml:"not_match" yaml:"not_match" json:"not_match,omitempty"`
	// Workspace limits the rule to one workspace (an absolute path): the
	// rules "always" writes into the user config carry it.
	Workspace string `toml:"workspace" yaml:"workspace" json:"workspace,omitempty"`
	// ID names the rule for `warden rules show|remove`; RequestID is the
	// approval request whose "always" wrote it, Created when (RFC 3339).
	ID        string `toml:"id" yaml:"id" json:"id,omitempty"`
	RequestID string `toml:"request_id" yaml:"request_id" json:"request_id,omitempty"`
	Created   string `toml:"created" yaml:"created" json:"created,omitempty"`

	// File and Line are where the rule is written.
	File string `toml:"-" yaml:"-" json:"file,omitempty"`
	Line int    `toml:"-" yaml:"-" json:"line,omitempty"`
}

// Spec turns the rule into the matcher's terms; the loader has checked it.
func (r Rule) Spec() (rules.Spec, error) {
	d, err := rules.ParseDecision(r.Decision)
	if err != nil {
		return rules.Spec{}, err
	}
	src := r.File
	if r.Line > 0 {
		src = fmt.Sprintf("%s:%d", r.File, r.Line)
	}
	return rules.Spec{Command: r.Command, Exact: r.Exact, Tool: r.Tool, Path: r.Path, Host: r.Host,
		Decision: d, Source: src, ID: r.ID}, nil
}

// RuleSet compiles the rules that hold in workspace dir: those without a
// workspace and those written for dir.
func RuleSet(cfg *Config, dir string) (*rules.Set, error) {
	var specs []rules.Spec
	for _, r := range cfg.Rules {
		if r.Workspace != "" && filepath.Clean(r.Workspace) != filepath.Clean(dir) {
			continue
		}
		s, err := r.Spec()
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	return rules.NewSet(specs)
}

var ruleIDPatt = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// validateRules compiles every rule and runs its examples: a rule whose
// example fails is an error at the example's line.
func (l *layer) validateRules() {
	ids := map[string]bool{}
	for i := range l.cfg.Rules {
		r := &l.cfg.Rules[i]
		e := idx("rules", i)
		r.File, r.Line = l.file, l.at(e).line
		if l.has(e+".tool") && r.Tool != rules.NetworkTool {
			if n, ok := NormalizeTool(r.Tool); !ok {
				l.bad(e+".tool", r.Tool, "unknown tool")
				continue
			} else {
				r.Tool = n
			}
		}
		if !l.has(e + ".decision") {
			l.bad(e, nil, "needs decision = \"allow\", \"ask\" or \"deny\"")
			continue
		}
		if !l.oneOf(e+".decision", r.Decision, "allow", "ask", "deny") {
			continue
		}
		if l.has(e+".workspace") && !filepath.IsAbs(r.Workspace) {
			l.bad(e+".workspace", r.Workspace, "must be an absolute path")
		}
		if l.has(e + ".id") {
			if !ruleIDPatt.MatchString(r.ID) {
				l.bad(e+".id", r.ID, "must be 1-64 letters, digits, _ . or -")
			} else if ids[r.ID] {
				l.bad(e+".id", r.ID, "another rule in this file has this id")
			}
			ids[r.ID] = true
		}
		if l.has(e + ".created") {
			if _, err := time.Parse(time.RFC3339, r.Created); err != nil {
				l.bad(e+".created", r.Created, "must be an RFC 3339 time")
			}
		}
		spec, _ := r.Spec()
		spec.Source = ""
		cr, err := rules.Compile(spec)
		if err != nil {
			l.bad(e, nil, "%v", err)
			continue
		}
		k, err := cr.CheckExamples(r.Match, r.NotMatch)
		var ee *rules.ExampleError
		switch {
		case errors.As(err, &ee) && ee.Match:
			l.bad(idx(e+".match", k), ee.Example, "%s", exampleMsg(ee))
		case errors.As(err, &ee):
			l.bad(idx(e+".not_match", k), ee.Example, "%s", exampleMsg(ee))
		case err != nil:
			l.bad(e, nil, "%v", err)
		}
	}
}

func exampleMsg(e *rules.ExampleError) string {
	if e.Match {
		msg := fmt.Sprintf("this example does not get %q from the rule", e.Rule.Decision)
		if e.Why != "" {
			msg += " (" + e.Why + ")"
		}
		return msg
	}
	return fmt.Sprintf("this example gets %q from the rule, but is listed under not_match", e.Rule.Decision)
}

// wsRulesCheck is the tighten-only rule for [[rules]] in the workspace file
// (and in any source under a managed ceiling): a rule may only ask or
// deny, unless the trusted source has the same rule.
func wsRulesCheck(c *wsCheck, lf leaf) string {
	for _, r := range c.ws.Rules {
		if r.Decision != "allow" {
			if r.Workspace != "" || r.ID != "" || r.RequestID != "" {
				return "a workspace file's rule names no workspace, id or request; " + c.only()
			}
			continue
		}
		if !slices.ContainsFunc(c.base.Rules, func(b Rule) bool { return sameRule(b, r) }) {
			return fmt.Sprintf("the rule at line %d allows; only ask and deny rules tighten, %s", r.Line, c.only())
		}
	}
	return ""
}

func sameRule(a, b Rule) bool {
	a.File, a.Line, b.File, b.Line = "", 0, "", 0
	a.Match, a.NotMatch, b.Match, b.NotMatch = nil, nil, nil, nil
	return slices.Equal(a.Command, b.Command) && a.Exact == b.Exact && a.Tool == b.Tool && a.Path == b.Path &&
		a.Host == b.Host && a.Decision == b.Decision && a.Workspace == b.Workspace
}
