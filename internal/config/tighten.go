package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The workspace file lives where the agent can write, so it may only tighten
// what the user config (and the defaults) allow. wsRules lists every setting
// a workspace file may write, each with the check that refuses loosening;
// a setting without a rule is refused outright. A refusal is an error: the
// load fails closed and says which line did what.
var wsRules = map[string]func(c *wsCheck, lf leaf) string{
	"workspace.allow_delete":        boolNotTo(true, func(b *Config) bool { return b.Workspace.AllowDelete }),
	"commands.enabled":              boolNotTo(true, func(b *Config) bool { return b.Commands.Enabled }),
	"commands.allowed_only":         boolNotTo(false, func(b *Config) bool { return b.Commands.AllowedOnly }),
	"commands.default_timeout":      notAbove(func(b *Config) int64 { return int64(b.Commands.DefaultTimeout) }),
	"commands.max_timeout":          notAbove(func(b *Config) int64 { return int64(b.Commands.MaxTimeout) }),
	"commands.max_output_lines":     notAbove(func(b *Config) int64 { return int64(b.Commands.MaxOutputLines) }),
	"commands.blocked_patterns":     additive,
	"commands.safe_commands":        subsetOf(func(b *Config) []string { return b.Commands.SafeCommands }),
	"commands.dev_commands":         subsetOf(func(b *Config) []string { return b.Commands.DevCommands }),
	"commands.env_allowlist":        subsetOf(func(b *Config) []string { return b.Commands.EnvAllowlist }),
	"security.confirm_mode":         modeNotLooser,
	"security.mask":                 additive,
	"security.protected":            additive,
	"security.tool_policy.default":  policyNotLooser,
	"security.tool_policy.tools.*":  policyNotLooser,
	"security.tool_policy.groups.*": policyNotLooser,
	"security.approval.on_timeout": func(c *wsCheck, lf leaf) string {
		if lf.n.s == PolicyAllow && c.base.Security.Approval.OnTimeout != PolicyAllow {
			return c.looser(show(c.base.Security.Approval.OnTimeout))
		}
		return ""
	},
	"security.approval.timeout_secs": func(c *wsCheck, lf leaf) string {
		if c.effOnTimeout() == PolicyAllow && int64(c.base.Security.Approval.TimeoutSecs) != lf.n.i {
			return "with on_timeout = \"allow\" a changed timeout decides when requests run; " + c.only()
		}
		return ""
	},
	"security.approval.auto_approve": func(c *wsCheck, lf leaf) string {
		for _, r := range c.ws.Security.Approval.AutoApprove {
			r.File, r.Line = "", 0
			if !slices.ContainsFunc(c.base.Security.Approval.AutoApprove, func(b AutoApprove) bool { b.File, b.Line = "", 0; return b == r }) {
				return fmt.Sprintf("adds an auto-approve rule for %s; %s", r.Tool, c.only())
			}
		}
		return ""
	},
	"security.http.timeout_secs":   notAbove(func(b *Config) int64 { return int64(b.Security.HTTP.TimeoutSecs) }),
	"security.http.max_body_bytes": notAbove(func(b *Config) int64 { return b.Security.HTTP.MaxBodyBytes }),
	"security.http.allow_hosts":    subsetOf(func(b *Config) []string { return b.Security.HTTP.AllowHosts }),
	"sandbox.enabled":              sandboxBool("enabled", false, func(s *Sandbox) bool { return s.Enabled }),
	"sandbox.lockdown":             sandboxBool("lockdown", false, func(s *Sandbox) bool { return s.Lockdown }),
	"sandbox.no_gpu":               sandboxBool("no_gpu", false, func(s *Sandbox) bool { return s.NoGPU }),
	"sandbox.network":              networkNotLooser,
	"sandbox.egress.allow":         egressAllowNarrows,
	"sandbox.egress.deny":          additive,
	"sandbox.egress.unknown":       egressUnknownNotLooser,
	"sandbox.mask":                 additive,
	"sandbox.idle_timeout":         additive,
	"sandbox.backend": func(c *wsCheck, lf leaf) string {
		if b := c.base.Sandbox; b != nil && b.Backend != lf.n.s {
			return fmt.Sprintf("%s chose backend %q; %s", c.against(), b.Backend, c.only())
		}
		return ""
	},
	"sandbox.landlock": func(c *wsCheck, lf leaf) string {
		if b := c.base.Sandbox; b != nil && landlockRank[lf.n.s] < landlockRank[b.Landlock] {
			return c.looser(show(b.Landlock))
		}
		return ""
	},
	"sandbox.rw_paths": func(c *wsCheck, lf leaf) string {
		if b := c.base.Sandbox; b != nil && b.Lockdown && len(c.ws.Sandbox.RWPaths) > 0 {
			return "writable paths loosen " + c.whose() + " lockdown; " + c.only()
		}
		return c.inside(c.ws.Sandbox.RWPaths)
	},
	"sandbox.ro_paths": func(c *wsCheck, lf leaf) string { return c.inside(c.ws.Sandbox.ROPaths) },
	"agents.*":         additive, // each key of the agent has its own rule
	"llm.model":        additive,
	"llm.timeout":      additive,
	"llm.retries":      additive,
	"agents.*.allowed_tools": func(c *wsCheck, lf leaf) string {
		name := agentName(lf.path)
		tools := c.ws.Agents[name].AllowedTools
		limit, why := BuiltinTools, "tools beyond the built-in ones"
		if b, ok := c.base.Agents[name]; ok && len(b.AllowedTools) > 0 {
			limit, why = b.AllowedTools, "tools the user config does not give this agent"
		} else if b, ok := BuiltinAgents[name]; ok {
			limit, why = b, "tools the built-in agent does not have"
		}
		var extra []string
		for _, t := range tools {
			if !slices.Contains(limit, t) {
				extra = append(extra, t)
			}
		}
		if len(extra) > 0 {
			return fmt.Sprintf("gives the agent %s (%s); %s", why, strings.Join(extra, ", "), c.only())
		}
		return ""
	},
	"agents.*.confirm_mode": func(c *wsCheck, lf leaf) string {
		floor := c.base.Security.ConfirmMode
		if b, ok := c.base.Agents[agentName(lf.path)]; ok && modeRank[b.ConfirmMode] > modeRank[floor] {
			floor = b.ConfirmMode
		}
		if modeRank[lf.n.s] < modeRank[floor] {
			return c.looser(show(floor))
		}
		return ""
	},
	"agents.*.max_steps": func(c *wsCheck, lf leaf) string {
		if b, ok := c.base.Agents[agentName(lf.path)]; ok && b.MaxSteps > 0 && lf.n.i > int64(b.MaxSteps) {
			return fmt.Sprintf("raises %s %d; %s", c.whose(), b.MaxSteps, c.only())
		}
		return ""
	},
}

const onlyUser = "only the user config may loosen it"

// looser says that a value is looser than than, from the source the check
// compares with (the user config, or the administrator's managed policy).
func (c *wsCheck) looser(than string) string {
	return fmt.Sprintf("looser than %s from %s; %s", than, c.against(), c.only())
}

// against names what the check compares with.
func (c *wsCheck) against() string {
	if c.ceiling != "" {
		return "the managed policy " + c.ceiling
	}
	return "the user config"
}

// whose is the possessive of what the check compares with.
func (c *wsCheck) whose() string {
	if c.ceiling != "" {
		return "the managed policy's"
	}
	return "the user's"
}

// only says who may loosen a setting.
func (c *wsCheck) only() string {
	if c.ceiling != "" {
		return onlyAdmin
	}
	return onlyUser
}

const onlyAdmin = "only the administrator may loosen it"

// wsCheck holds what the workspace rules compare against.
type wsCheck struct {
	// ceiling is the managed policy file when the check holds a source to
	// it (managed.go); "" for the workspace file's check.
	ceiling string
	base    *Config // defaults + user config + --config file
	ws      *Config // what the workspace file sets
	layer   *layer
	dir     string // the workspace directory
}

func (c *wsCheck) effOnTimeout() string {
	if c.layer.has("security.approval.on_timeout") {
		return c.ws.Security.Approval.OnTimeout
	}
	return c.base.Security.Approval.OnTimeout
}

// inside refuses paths that name anything outside the workspace, lexically
// or through a symlink that exists now.
func (c *wsCheck) inside(paths []string) string {
	for _, p := range paths {
		if filepath.IsAbs(p) || !filepath.IsLocal(filepath.Clean(p)) {
			return fmt.Sprintf("path %q is outside the workspace; %s", p, c.only())
		}
		if real, err := filepath.EvalSymlinks(filepath.Join(c.dir, p)); err == nil {
			root, err := filepath.EvalSymlinks(c.dir)
			rel, err2 := filepath.Rel(root, real)
			if err != nil || err2 != nil || !filepath.IsLocal(rel) {
				return fmt.Sprintf("path %q resolves outside the workspace (%s); %s", p, real, c.only())
			}
		}
	}
	return ""
}

// checkWorkspace applies the tighten-only rules to a workspace layer.
func checkWorkspace(l *layer, base *Config, dir string) []*Error {
	c := &wsCheck{base: base, ws: l.cfg, layer: l, dir: dir}
	var errs errList
	errs.file = l.file
	var refused []string
	invalid := map[string]bool{}
	for _, e := range l.errs.list {
		invalid[e.Key] = true
	}
	for _, lf := range l.leaves {
		if strings.HasPrefix(lf.pattern, "sandbox.") && len(l.sandboxErrs.list) > 0 {
			continue // an unusable [sandbox] already means lockdown
		}
		if invalid[lf.written] || !l.has(lf.path) {
			continue // already reported as invalid
		}
		if slices.ContainsFunc(refused, func(r string) bool { return strings.HasPrefix(lf.path, r+".") }) {
			continue // inside an entry already refused as a whole
		}
		rule, ok := wsRules[lf.pattern]
		if !ok {
			errs.add(lf.p, lf.written, lf.n.display(), "only the user config may set this")
			refused = append(refused, lf.path)
			continue
		}
		if msg := rule(c, lf); msg != "" {
			errs.add(lf.p, lf.written, lf.n.display(), "%s", msg)
		}
	}
	for _, name := range sortedKeys(l.cfg.Agents) {
		_, user := base.Agents[name]
		_, builtin := BuiltinAgents[name]
		path := joinKey("agents", name)
		if !user && !builtin && !l.has(path+".allowed_tools") {
			errs.add(l.at(path), path, "", "an agent defined in the workspace file must list its allowed_tools")
		}
	}
	return errs.list
}

func additive(*wsCheck, leaf) string { return "" }

func boolNotTo(loose bool, get func(*Config) bool) func(*wsCheck, leaf) string {
	return func(c *wsCheck, lf leaf) string {
		if lf.n.b == loose && get(c.base) != loose {
			return c.looser(show(!loose))
		}
		return ""
	}
}

func notAbove(get func(*Config) int64) func(*wsCheck, leaf) string {
	return func(c *wsCheck, lf leaf) string {
		if b := get(c.base); lf.n.i > b {
			return fmt.Sprintf("raises %s %d; %s", c.whose(), b, c.only())
		}
		return ""
	}
}

func subsetOf(get func(*Config) []string) func(*wsCheck, leaf) string {
	return func(c *wsCheck, lf leaf) string {
		base := get(c.base)
		var extra []string
		for _, it := range lf.n.items {
			if !slices.Contains(base, it.s) {
				extra = append(extra, show(it.s))
			}
		}
		if len(extra) > 0 {
			return fmt.Sprintf("adds %s, which %s does not allow; %s", strings.Join(extra, ", "), c.against(), c.only())
		}
		return ""
	}
}

func sandboxBool(key string, loose bool, get func(*Sandbox) bool) func(*wsCheck, leaf) string {
	return func(c *wsCheck, lf leaf) string {
		if b := c.base.Sandbox; b != nil && lf.n.b == loose && get(b) != loose {
			return c.looser("sandbox." + key + " = " + show(!loose))
		}
		return ""
	}
}

func modeNotLooser(c *wsCheck, lf leaf) string {
	if modeRank[lf.n.s] < modeRank[c.base.Security.ConfirmMode] {
		return c.looser(show(c.base.Security.ConfirmMode))
	}
	return ""
}

// policyNotLooser compares a workspace policy with what the user's
// configuration decides for the same tool, group or default. Where the user
// set nothing, the confirmation mode decides, and that may be "allow": so
// from the workspace only supervised or deny are accepted.
func policyNotLooser(c *wsCheck, lf leaf) string {
	tp := c.base.Security.ToolPolicy
	floor, from := "", ""
	switch {
	case lf.pattern == "security.tool_policy.default":
		floor, from = tp.Default, c.whose()+" default"
	case strings.HasPrefix(lf.pattern, "security.tool_policy.groups."):
		g := mapKey(lf.path, "security.tool_policy.groups")
		if p, ok := tp.Groups[g]; ok {
			floor, from = p, c.whose()+" policy for group "+g
		} else {
			floor, from = tp.Default, c.whose()+" default"
		}
	default:
		t := mapKey(lf.path, "security.tool_policy.tools")
		if p, ok := tp.Tools[t]; ok {
			floor, from = p, c.whose()+" policy for "+t
		} else {
			for _, g := range groupsOf(t, c.base.Security.ToolGroups) {
				if p, ok := tp.Groups[g]; ok && (floor == "" || policyRank[p] > policyRank[floor]) {
					floor, from = p, c.whose()+" policy for group "+g
				}
			}
			if floor == "" {
				floor, from = tp.Default, c.whose()+" default"
			}
		}
	}
	if floor == "" {
		floor, from = PolicySupervised, "what the confirmation mode may decide"
	}
	if policyRank[lf.n.s] < policyRank[floor] {
		return fmt.Sprintf("looser than %s (%q); %s", from, floor, c.only())
	}
	return ""
}

// mapKey extracts the map key from path = prefix + "." + key (maybe quoted).
func mapKey(path, prefix string) string {
	k := strings.TrimPrefix(path, prefix+".")
	if u, err := unquote(k); err == nil {
		return u
	}
	return k
}

func agentName(path string) string {
	rest := strings.TrimPrefix(path, "agents.")
	if strings.HasPrefix(rest, `"`) {
		if i := strings.Index(rest[1:], `".`); i >= 0 {
			if u, err := unquote(rest[:i+2]); err == nil {
				return u
			}
		}
	}
	name, _, _ := strings.Cut(rest, ".")
	return name
}
