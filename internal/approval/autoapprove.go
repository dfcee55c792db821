package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/wardenhq/warden/internal/config"
)

// CommandVerdict is what auto-approval needs to know about a shell command:
// whether a hard rule blocks it, and the text of every simple command it
// would run (after unwrapping sh -c, env, xargs, …).
type CommandVerdict struct {
	Blocked  bool
	Commands []string
}

// CommandJudge judges a shell command for auto-approval. An error means the
// command cannot be judged, and it is never auto-approved.
type CommandJudge func(cmd string) (*CommandVerdict, error)

// AutoRule is one compiled auto-approve rule.
type AutoRule struct {
	Name    string // auto_approve[i], with the file line when known
	Tool    string // canonical tool name
	command *regexp.Regexp
	path    *regexp.Regexp
	url     *regexp.Regexp
	args    *regexp.Regexp
}

// AutoApprover matches supervised calls against auto-approve rules.
type AutoApprover struct {
	rules []*AutoRule
	judge CommandJudge
}

// CompileAutoApprove compiles rules. judge splits commands for
// command_pattern; nil means ShellJudge(nil).
func CompileAutoApprove(rules []config.AutoApprove, judge CommandJudge) (*AutoApprover, error) {
	if judge == nil {
		judge = ShellJudge(nil)
	}
	aa := &AutoApprover{judge: judge}
	var errs []error
	for i, r := range rules {
		name := fmt.Sprintf("auto_approve[%d]", i)
		switch {
		case r.File != "" && r.Line > 0:
			name += fmt.Sprintf(" (%s:%d)", r.File, r.Line)
		case r.Line > 0:
			name += fmt.Sprintf(" (line %d)", r.Line)
		}
		tool, _ := config.NormalizeTool(r.Tool)
		rule := &AutoRule{Name: name, Tool: tool}
		compile := func(key, pat string) *regexp.Regexp {
			if pat == "" {
				return nil
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", name, key, err))
			}
			return re
		}
		rule.command = compile("command_pattern", r.CommandPattern)
		rule.path = compile("path_pattern", r.PathPattern)
		rule.url = compile("url_pattern", r.URLPattern)
		rule.args = compile("args_pattern", r.ArgsPattern)
		switch {
		case r.Tool == "":
			errs = append(errs, fmt.Errorf("%s: tool is required", name))
		case rule.command == nil && rule.path == nil && rule.url == nil && rule.args == nil &&
			r.CommandPattern == "" && r.PathPattern == "" && r.URLPattern == "" && r.ArgsPattern == "":
			errs = append(errs, fmt.Errorf("%s: a rule needs command_pattern, path_pattern, url_pattern or args_pattern (a rule without one would approve every %s call)", name, r.Tool))
		}
		aa.rules = append(aa.rules, rule)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return aa, nil
}

// Match returns the first rule that approves tool with canonical args.
// Every pattern a rule sets must match; a field the rule needs that the
// arguments lack, or cannot be judged, means no match. A path_pattern must
// match the "path" argument and also where the change really lands (every
// target's Real): a rule for ^docs/ does not approve docs/x.yml when docs
// is a link to .github/workflows.
func (aa *AutoApprover) Match(tool string, args json.RawMessage, targets ...Target) (*AutoRule, bool) {
	if aa == nil || len(aa.rules) == 0 {
		return nil, false
	}
	tool, _ = config.NormalizeTool(tool)
	var fields map[string]any
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, false
	}
	for _, r := range aa.rules {
		if r.Tool == tool && aa.matches(r, args, fields, targets) {
			return r, true
		}
	}
	return nil, false
}

func (aa *AutoApprover) matches(r *AutoRule, args json.RawMessage, fields map[string]any, targets []Target) bool {
	if r.command != nil && !aa.commandMatches(r.command, fields) {
		return false
	}
	if r.path != nil {
		p, ok := workspacePath(fields)
		if !ok || !r.path.MatchString(p) {
			return false
		}
		for _, t := range targets {
			if !r.path.MatchString(t.Real) {
				return false
			}
		}
	}
	if r.url != nil {
		u, ok := canonicalURL(fields)
		if !ok || !r.url.MatchString(u) {
			return false
		}
	}
	if r.args != nil && !r.args.Match(args) {
		return false
	}
	return true
}

// commandMatches reports whether the command is not blocked and every
// simple command it runs matches re: "^ls " cannot approve "ls; rm -rf x".
func (aa *AutoApprover) commandMatches(re *regexp.Regexp, fields map[string]any) bool {
	cmd, ok := fields["command"].(string)
	if !ok || strings.TrimSpace(cmd) == "" {
		return false
	}
	v, err := aa.judge(cmd)
	if err != nil || v == nil || v.Blocked || len(v.Commands) == 0 {
		return false
	}
	for _, c := range v.Commands {
		if !re.MatchString(c) {
			return false
		}
	}
	return true
}

// workspacePath returns the call's "path" argument cleaned and relative to
// the workspace, or false when it is absolute, escapes the workspace or
// holds a NUL: such a path is never auto-approved.
func workspacePath(fields map[string]any) (string, bool) {
	p, ok := fields["path"].(string)
	if !ok || p == "" || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return "", false
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// canonicalURL returns the call's "url" argument re-serialised from its
// parse: http or https, a lower-case host, no user info, no fragment.
func canonicalURL(fields map[string]any) (string, bool) {
	s, ok := fields["url"].(string)
	if !ok {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}
