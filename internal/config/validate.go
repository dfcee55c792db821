package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

var (
	namePattern     = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	envNamePatt     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envAllowPatt    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)
	hostnamePatt    = regexp.MustCompile(`^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$`)
	dockerImagePatt = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:@-]*$`)
	remoteUserPatt  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
	emailPatt       = regexp.MustCompile(`^[^@\s<>]+@[^@\s<>]+$`)
	supervisorIDs   = regexp.MustCompile(`^[A-Za-z0-9_.@-]+$`)
)

// Defaults applied to entries of lists of tables when a key is absent.
const (
	defaultHookTimeout = 15
	defaultMCPTimeout  = 30
	defaultIdleTimeout = 600
)

// validate checks the values one file sets, normalises tool aliases and
// fills per-entry defaults. priorGroups are the tool groups defined by the
// sources below this one.
func (l *layer) validate(priorGroups map[string][]string) {
	c := l.cfg
	l.intRange("commands.default_timeout", c.Commands.DefaultTimeout, 1, 600)
	l.intRange("commands.max_timeout", c.Commands.MaxTimeout, 1, 600)
	l.intRange("commands.max_output_lines", c.Commands.MaxOutputLines, 10, 5000)
	if l.has("commands.default_timeout") && l.has("commands.max_timeout") && c.Commands.DefaultTimeout > c.Commands.MaxTimeout &&
		c.Commands.MaxTimeout >= 1 && c.Commands.DefaultTimeout <= 600 {
		l.bad("commands.default_timeout", c.Commands.DefaultTimeout, "exceeds commands.max_timeout (%d)", c.Commands.MaxTimeout)
	}
	l.regexps("commands.blocked_patterns", c.Commands.BlockedPatterns)
	l.nonEmpty("commands.safe_commands", c.Commands.SafeCommands)
	l.nonEmpty("commands.dev_commands", c.Commands.DevCommands)
	for i, v := range c.Commands.EnvAllowlist {
		if !envAllowPatt.MatchString(v) {
			l.bad(idx("commands.env_allowlist", i), v, "not an environment variable name (a trailing * is allowed)")
		}
	}

	s := &c.Security
	l.oneOf("security.confirm_mode", s.ConfirmMode, ModeYolo, ModeConfirmSensitive, ModeConfirmAll)
	l.globs("security.mask", s.Mask)
	l.globs("security.protected", s.Protected)
	l.validateToolGroups()
	l.validateToolPolicy(priorGroups)
	l.validateApproval()
	l.validateHTTP()
	l.validateHooks()
	l.validateSandbox()
	l.validateLLM()
	l.validateMCP()
	l.validateAgents()
	l.validateStore()
	l.validateTelemetry()
	l.validateCheckpoints()
}

func idx(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func show(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func (l *layer) bad(path string, v any, format string, a ...any) {
	if !l.has(path) {
		v = nil // absent: there is no value to show
	}
	l.errsFor(path).add(l.at(path), path, show(v), format, a...)
}

func (l *layer) intRange(path string, v, lo, hi int) {
	if l.has(path) && (v < lo || v > hi) {
		l.bad(path, v, "must be between %d and %d", lo, hi)
	}
}

func (l *layer) oneOf(path, v string, allowed ...string) bool {
	if l.has(path) && !slices.Contains(allowed, v) {
		l.bad(path, v, "must be one of %s", strings.Join(allowed, ", "))
		return false
	}
	return true
}

func (l *layer) regexps(path string, list []string) {
	for i, p := range list {
		if _, err := regexp.Compile(p); err != nil {
			l.bad(idx(path, i), p, "invalid regular expression: %v", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
}

func (l *layer) globs(path string, list []string) {
	for i, p := range list {
		if p == "" {
			l.bad(idx(path, i), p, "must not be empty")
		} else if !doublestar.ValidatePattern(p) {
			l.bad(idx(path, i), p, "invalid glob pattern")
		}
	}
}

func (l *layer) nonEmpty(path string, list []string) {
	for i, v := range list {
		if strings.TrimSpace(v) == "" {
			l.bad(idx(path, i), v, "must not be empty")
		}
	}
}

func (l *layer) envName(path, v string) {
	if l.has(path) && !envNamePatt.MatchString(v) {
		l.bad(path, v, "not an environment variable name")
	}
}

func (l *layer) httpURL(path, v string) {
	if !l.has(path) {
		return
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.bad(path, v, "must be an http:// or https:// URL")
	}
}

// tools validates and normalises a list of tool names in place.
func (l *layer) tools(path string, list []string) {
	for i, t := range list {
		n, ok := NormalizeTool(t)
		if !ok {
			l.bad(idx(path, i), t, "unknown tool (built-in tools: %s; remote tools: mcp__<server>__<tool>)", strings.Join(BuiltinTools, ", "))
		}
		list[i] = n
	}
}

func (l *layer) validateToolGroups() {
	for _, g := range sortedKeys(l.cfg.Security.ToolGroups) {
		path := joinKey("security.tool_groups", g)
		if !namePattern.MatchString(g) {
			l.bad(path, nil, "group names are made of letters, digits, _ and -")
		}
		if _, ok := BuiltinGroups[g]; ok {
			l.bad(path, nil, "%q is a built-in group and cannot be redefined", g)
		}
		l.tools(path, l.cfg.Security.ToolGroups[g])
	}
}

func (l *layer) validateToolPolicy(priorGroups map[string][]string) {
	tp := &l.cfg.Security.ToolPolicy
	l.oneOf("security.tool_policy.default", tp.Default, PolicyAllow, PolicyDeny, PolicySupervised)
	if tp.Tools != nil {
		norm := make(map[string]string, len(tp.Tools))
		from := map[string]string{}
		for _, t := range sortedKeys(tp.Tools) {
			path := joinKey("security.tool_policy.tools", t)
			p := tp.Tools[t]
			l.oneOf(path, p, PolicyAllow, PolicyDeny, PolicySupervised)
			n, ok := NormalizeTool(t)
			if !ok {
				l.bad(path, nil, "unknown tool (built-in tools: %s; remote tools: mcp__<server>__<tool>)", strings.Join(BuiltinTools, ", "))
				continue
			}
			if prev, dup := norm[n]; dup && prev != p {
				l.bad(path, p, "conflicts with %s = %q (both name %s)", from[n], prev, n)
				continue
			}
			norm[n], from[n] = p, t
			l.rename(path, joinKey("security.tool_policy.tools", n))
		}
		tp.Tools = norm
	}
	for _, g := range sortedKeys(tp.Groups) {
		path := joinKey("security.tool_policy.groups", g)
		l.oneOf(path, tp.Groups[g], PolicyAllow, PolicyDeny, PolicySupervised)
		_, builtin := BuiltinGroups[g]
		_, mine := l.cfg.Security.ToolGroups[g]
		_, prior := priorGroups[g]
		if !builtin && !mine && !prior {
			l.bad(path, nil, "unknown group (define it in [security.tool_groups])")
		}
	}
}

// rename moves the record of a key (after alias normalisation).
func (l *layer) rename(from, to string) {
	if from == to {
		return
	}
	l.set[to] = l.set[from]
	delete(l.set, from)
	for i := range l.leaves {
		if l.leaves[i].path == from {
			l.leaves[i].path = to
		}
	}
}

func (l *layer) validateApproval() {
	a := &l.cfg.Security.Approval
	const p = "security.approval"
	l.intRange(p+".timeout_secs", a.TimeoutSecs, 1, 86400)
	if l.oneOf(p+".on_timeout", a.OnTimeout, PolicyDeny, PolicyAllow) && a.OnTimeout == PolicyAllow {
		l.warn(p+".on_timeout", a.OnTimeout, "a request nobody answers in time will RUN; deny is the safe choice")
	}
	if l.has(p+".notify_channel") && strings.TrimSpace(a.NotifyChannel) == "" {
		l.bad(p+".notify_channel", a.NotifyChannel, "must not be empty")
	} else {
		l.oneOf(p+".notify_channel", a.NotifyChannel, NotifyChannels...)
	}
	l.nonEmpty(p+".notify_channels", a.NotifyChannels)
	for i, c := range a.NotifyChannels {
		if strings.TrimSpace(c) != "" && !slices.Contains(NotifyChannels, c) {
			l.bad(idx(p+".notify_channels", i), c, "must be one of %s", strings.Join(NotifyChannels, ", "))
		}
	}
	if l.has(p+".supervisor_id") && !supervisorIDs.MatchString(a.SupervisorID) {
		l.bad(p+".supervisor_id", a.SupervisorID, "supervisor ids are made of letters, digits and _ . @ -")
	}
	seen := map[string]bool{}
	for i, s := range a.Supervisors {
		e := idx(p+".supervisors", i)
		if !supervisorIDs.MatchString(s.ID) {
			l.bad(e+".id", s.ID, "supervisor ids are made of letters, digits and _ . @ -")
		} else if seen[s.ID] {
			l.bad(e+".id", s.ID, "duplicate supervisor id")
		}
		seen[s.ID] = true
		switch {
		case s.TokenFile != "" && !filepath.IsAbs(s.TokenFile):
			l.bad(e+".token_file", s.TokenFile, "must be an absolute path to a file only you can read (chmod 600)")
		case s.TokenEnv == "" && s.TokenFile != "":
		case !envNamePatt.MatchString(s.TokenEnv):
			l.bad(e+".token_env", s.TokenEnv, "must name the environment variable holding the supervisor's token (or set token_file)")
		}
	}
	l.httpURL(p+".webhook.url", a.Webhook.URL)
	l.envName(p+".webhook.secret_env", a.Webhook.SecretEnv)
	l.httpURL(p+".page_url", a.PageURL)
	l.intRange(p+".grant_max_minutes", a.GrantMaxMinutes, 1, 1440)
	l.intRange(p+".mcp_wait_secs", a.MCPWaitSecs, 1, 86400)
	l.envName(p+".slack.url_env", a.Slack.URLEnv)
	l.envName(p+".discord.url_env", a.Discord.URLEnv)
	l.httpURL(p+".telegram.api_url", a.Telegram.APIURL)
	l.envName(p+".telegram.bot_token_env", a.Telegram.BotTokenEnv)
	for i, id := range a.Telegram.ChatIDs {
		if id == 0 {
			l.bad(idx(p+".telegram.chat_ids", i), id, "must be a Telegram chat id (not 0)")
		}
	}
	if l.has(p + ".email.smtp_addr") {
		if h, port, err := net.SplitHostPort(a.Email.SMTPAddr); err != nil || h == "" || port == "" {
			l.bad(p+".email.smtp_addr", a.Email.SMTPAddr, "must be host:port")
		}
	}
	if l.has(p+".email.from") && !emailPatt.MatchString(a.Email.From) {
		l.bad(p+".email.from", a.Email.From, "must be an email address")
	}
	for i, to := range a.Email.To {
		if !emailPatt.MatchString(to) {
			l.bad(idx(p+".email.to", i), to, "must be an email address")
		}
	}
	l.envName(p+".email.username_env", a.Email.UsernameEnv)
	l.envName(p+".email.password_env", a.Email.PasswordEnv)
	if l.has(p+".email.ca_file") && strings.TrimSpace(a.Email.CAFile) == "" {
		l.bad(p+".email.ca_file", a.Email.CAFile, "must be a path")
	}
	for i := range a.AutoApprove {
		r := &a.AutoApprove[i]
		e := idx(p+".auto_approve", i)
		r.File, r.Line = l.file, l.at(e).line
		if n, ok := NormalizeTool(r.Tool); !ok {
			l.bad(e+".tool", r.Tool, "unknown tool")
		} else {
			r.Tool = n
		}
		pats := 0
		for _, f := range []struct{ key, re string }{{"command_pattern", r.CommandPattern}, {"path_pattern", r.PathPattern},
			{"url_pattern", r.URLPattern}, {"args_pattern", r.ArgsPattern}} {
			if !l.has(e + "." + f.key) {
				continue
			}
			pats++
			if f.re == "" {
				l.bad(e+"."+f.key, f.re, "must not be empty (it would match everything)")
			} else if _, err := regexp.Compile(f.re); err != nil {
				l.bad(e+"."+f.key, f.re, "invalid regular expression: %v", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			}
		}
		if pats == 0 {
			l.bad(e, nil, "needs command_pattern, path_pattern, url_pattern or args_pattern")
		}
	}
}

func (l *layer) validateHTTP() {
	h := &l.cfg.Security.HTTP
	l.intRange("security.http.timeout_secs", h.TimeoutSecs, 1, 300)
	if l.has("security.http.max_body_bytes") && (h.MaxBodyBytes < 1 || h.MaxBodyBytes > 1<<30) {
		l.bad("security.http.max_body_bytes", h.MaxBodyBytes, "must be between 1 and %d", 1<<30)
	}
	for i, host := range h.AllowHosts {
		if net.ParseIP(host) != nil {
			continue
		}
		if _, _, err := net.ParseCIDR(host); err == nil {
			continue
		}
		if !hostnamePatt.MatchString(host) {
			l.bad(idx("security.http.allow_hosts", i), host, "must be a host name, an IP address or a CIDR")
		}
	}
}

func (l *layer) validateHooks() {
	l.oneOf("hooks.approval", l.cfg.Hooks.Approval, HookApprovalWarden, HookApprovalHost)
	l.intRange("hooks.wait_secs", l.cfg.Hooks.WaitSecs, 0, 3600)
	for i := range l.cfg.Hooks.PostEdit {
		h := &l.cfg.Hooks.PostEdit[i]
		e := idx("hooks.post_edit", i)
		if strings.TrimSpace(h.Command) == "" {
			l.bad(e+".command", h.Command, "a hook needs a command")
		}
		l.globs(e+".file_patterns", h.FilePatterns)
		if l.has(e + ".timeout") {
			l.intRange(e+".timeout", h.Timeout, 1, 300)
		} else {
			h.Timeout = defaultHookTimeout
		}
	}
}

func (l *layer) validateSandbox() {
	s := l.cfg.Sandbox
	if s == nil {
		return
	}
	l.oneOf("sandbox.backend", s.Backend, sandboxBackends...)
	l.oneOf("sandbox.landlock", s.Landlock, "auto", "on", "off")
	if l.has("sandbox.idle_timeout") && s.IdleTimeout < 1 {
		l.bad("sandbox.idle_timeout", s.IdleTimeout, "must be at least 1 (seconds)")
	}
	l.nonEmpty("sandbox.rw_paths", s.RWPaths)
	l.nonEmpty("sandbox.ro_paths", s.ROPaths)
	l.globs("sandbox.mask", s.Mask)
	if l.has("sandbox.docker_image") && !dockerImagePatt.MatchString(s.DockerImage) {
		l.bad("sandbox.docker_image", s.DockerImage, "must be an image reference such as debian:12 or registry/name@sha256:…")
	}
	l.intRange("sandbox.memory_mb", s.MemoryMB, 64, 1<<20)
	if l.has("sandbox.remote_host") && !hostnamePatt.MatchString(s.RemoteHost) && net.ParseIP(s.RemoteHost) == nil {
		l.bad("sandbox.remote_host", s.RemoteHost, "must be a host name or an IP address")
	}
	l.intRange("sandbox.remote_port", s.RemotePort, 1, 65535)
	if l.has("sandbox.remote_user") && !remoteUserPatt.MatchString(s.RemoteUser) {
		l.bad("sandbox.remote_user", s.RemoteUser, "must be a user name (letters, digits, _ . -)")
	}
	for _, k := range []struct{ key, v string }{{"identity_file", s.IdentityFile}, {"known_hosts", s.KnownHosts},
		{"remote_path", s.RemotePath}, {"remote_warden", s.RemoteWarden}} {
		if l.has("sandbox."+k.key) && (strings.TrimSpace(k.v) == "" || strings.ContainsAny(k.v, "\x00\n")) {
			l.bad("sandbox."+k.key, k.v, "must be a path")
		}
	}
	if l.has("sandbox.remote_path") && !strings.HasPrefix(s.RemotePath, "/") {
		l.bad("sandbox.remote_path", s.RemotePath, "must be an absolute path on the remote host")
	}
	l.validateEgress()
}

func (l *layer) validateLLM() {
	m := &l.cfg.LLM
	l.httpURL("llm.base_url", m.BaseURL)
	l.envName("llm.api_key_env", m.APIKeyEnv)
	l.intRange("llm.timeout", m.Timeout, 1, 3600)
	l.intRange("llm.retries", m.Retries, 0, 10)
	for _, k := range sortedKeys(m.Prices) {
		e := joinKey("llm.prices", k)
		pr := m.Prices[k]
		for _, f := range []struct {
			key string
			v   float64
		}{{"input", pr.Input}, {"output", pr.Output}} {
			if pr := f.v; math.IsNaN(pr) || math.IsInf(pr, 0) || pr < 0 {
				l.bad(e+"."+f.key, pr, "must be a price of 0 or more (USD per million tokens)")
			}
		}
	}
}

func (l *layer) validateMCP() {
	seen := map[string]int{}
	for i := range l.cfg.MCP.Servers {
		s := &l.cfg.MCP.Servers[i]
		e := idx("mcp.servers", i)
		if !namePattern.MatchString(s.Name) {
			l.bad(e+".name", s.Name, "server names are made of letters, digits, _ and -")
		} else if j, dup := seen[s.Name]; dup {
			l.bad(e+".name", s.Name, "duplicate server name (also mcp.servers[%d])", j)
		} else {
			seen[s.Name] = i
		}
		switch {
		case s.URL != "" && s.Command != "":
			l.bad(e, nil, "set either url (HTTP) or command (stdio), not both")
		case s.URL == "" && s.Command == "":
			l.bad(e, nil, "needs url (HTTP) or command (stdio)")
		case s.URL != "":
			l.httpURL(e+".url", s.URL)
		}
		if s.Token != "" {
			l.warn(e+".token", nil, "a literal token in a config file; prefer token_env naming an environment variable")
			if s.TokenEnv != "" {
				l.bad(e+".token", nil, "set token or token_env, not both")
			}
		}
		l.envName(e+".token_env", s.TokenEnv)
		if l.has(e + ".timeout") {
			l.intRange(e+".timeout", s.Timeout, 1, 600)
		} else {
			s.Timeout = defaultMCPTimeout
		}
	}
}

func (l *layer) validateAgents() {
	for _, name := range sortedKeys(l.cfg.Agents) {
		a := l.cfg.Agents[name]
		e := joinKey("agents", name)
		if !namePattern.MatchString(name) {
			l.bad(e, nil, "agent names are made of letters, digits, _ and -")
		}
		l.tools(e+".allowed_tools", a.AllowedTools)
		l.oneOf(e+".confirm_mode", a.ConfirmMode, ModeYolo, ModeConfirmSensitive, ModeConfirmAll)
		l.intRange(e+".max_steps", a.MaxSteps, 1, 10000)
	}
}

func (l *layer) warn(path string, v any, msg string) {
	e := &Error{File: l.file, Line: l.at(path).line, Col: l.at(path).col, Key: path, Value: show(v), Msg: msg}
	l.warnings = append(l.warnings, "warning: "+e.Error())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
