package hostsetup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// CodexRequirements is where Codex reads managed hooks, which need no trust.
const CodexRequirements = "/etc/codex/requirements.toml"

// Codex: warden's MCP server (its environment passed through by name,
// env_vars), its tool timeout, approvals left to warden, and no terminal
// for commands, in CODEX_HOME/config.toml; the hooks in CODEX_HOME/hooks.json
// (they run once trusted), or, with Managed, in /etc/codex/requirements.toml.
func planCodex(o Options) (*Plan, error) {
	home := o.CodexHome
	if home == "" {
		home = filepath.Join(o.Home, ".codex")
	}
	p := &Plan{Host: o.Host}
	cfg, err := codexConfigFile(filepath.Join(home, "config.toml"), o)
	if err != nil {
		return nil, err
	}
	p.Files = append(p.Files, cfg)
	hc := o.hookCommand()
	if o.Managed {
		req, err := codexRequirements(CodexRequirements, hc, o.hookTimeout())
		if err != nil {
			return nil, err
		}
		p.Files = append(p.Files, req)
		return p, nil
	}
	hooks, err := jsonFile(filepath.Join(home, "hooks.json"), "every shell, apply_patch and MCP call of Codex goes to `warden hook codex` first", []want{
		{path: []string{"hooks", "PreToolUse"}, hookGroup: hookGroup(".*", hc, o.hookTimeout()), what: "a PreToolUse hook running " + hc},
		{path: []string{"hooks", "PostToolUse"}, hookGroup: hookGroup(".*", hc, o.hookTimeout()), what: "a PostToolUse hook running " + hc + " (audit of what ran)"},
	})
	if err != nil {
		return nil, err
	}
	p.Files = append(p.Files, hooks)
	p.Notes = append(p.Notes, "Codex runs a hook only once you trust it, and skips an untrusted one silently: start `codex`, open /hooks and trust warden's hook (again after each change to it). "+
		"For automation that vets its hooks, `codex exec --dangerously-bypass-hook-trust` runs them untrusted; as root, `warden setup codex --managed --write` puts the hook in "+CodexRequirements+", where it needs no trust.")
	return p, nil
}

// ownsHeader reports whether a table header line belongs to name: [name],
// [name.sub...] or [[name.sub...]].
func ownsHeader(line, name string) bool {
	h := strings.TrimSpace(line)
	if i := strings.Index(h, "#"); i > 0 {
		h = strings.TrimSpace(h[:i])
	}
	h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "["), "]")
	h = strings.ReplaceAll(h, " ", "")
	return h == name || strings.HasPrefix(h, name+".")
}

func isHeader(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "[")
}

// dropTables removes the blocks of the tables name owns.
func dropTables(lines []string, name string) []string {
	var out []string
	skip := false
	for _, l := range lines {
		if isHeader(l) {
			skip = ownsHeader(l, name)
		}
		if !skip {
			out = append(out, l)
		}
	}
	return out
}

// setKey sets key = value in table [table], adding the table when absent.
func setKey(lines []string, table, key, value string) []string {
	start := -1
	for i, l := range lines {
		if isHeader(l) && strings.ReplaceAll(strings.TrimSpace(strings.SplitN(l, "#", 2)[0]), " ", "") == "["+table+"]" {
			start = i
			break
		}
	}
	if start < 0 {
		return append(lines, "", "["+table+"]", key+" = "+value)
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if isHeader(lines[i]) {
			end = i
			break
		}
	}
	for i := start + 1; i < end; i++ {
		k, _, ok := strings.Cut(lines[i], "=")
		if ok && strings.TrimSpace(k) == key {
			lines[i] = key + " = " + value
			return lines
		}
	}
	out := append([]string{}, lines[:start+1]...)
	out = append(out, key+" = "+value)
	return append(out, lines[start+1:]...)
}

func tomlString(s string) string { return strconv.Quote(s) }

func tomlList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func codexConfigFile(path string, o Options) (*File, error) {
	before, mode, err := readFile(path)
	if err != nil {
		return nil, err
	}
	vars := PassEnv(o.Config, o.Getenv)
	lines := strings.Split(strings.TrimRight(string(before), "\n"), "\n")
	if len(before) == 0 {
		lines = nil
	}
	lines = dropTables(lines, "mcp_servers.warden")
	lines = setKey(lines, "features", "unified_exec_tty", "false")
	block := []string{"", "[mcp_servers.warden]",
		"command = " + tomlString(o.Warden),
		"args = " + tomlList(o.mcpArgs()),
		"env_vars = " + tomlList(vars),
		fmt.Sprintf("tool_timeout_sec = %d", o.mcpTimeout()),
		`default_tools_approval_mode = "approve"`,
	}
	after := []byte(strings.TrimLeft(strings.Join(append(lines, block...), "\n"), "\n") + "\n")
	check := func(content []byte) []string {
		var m map[string]any
		if err := toml.Unmarshal(content, &m); err != nil {
			return []string{"config.toml does not parse: " + err.Error()}
		}
		var miss []string
		feat, _ := m["features"].(map[string]any)
		if v, ok := feat["unified_exec_tty"].(bool); !ok || v {
			miss = append(miss, "[features] unified_exec_tty = false (a command with a terminal takes input, write_stdin, that Codex does not pass to hooks)")
		}
		servers, _ := m["mcp_servers"].(map[string]any)
		w, _ := servers["warden"].(map[string]any)
		switch {
		case w == nil:
			miss = append(miss, "the MCP server [mcp_servers.warden]")
		default:
			if w["command"] != o.Warden {
				miss = append(miss, fmt.Sprintf("[mcp_servers.warden] command = %q", o.Warden))
			}
			if have := anyStrings(w["env_vars"]); !sameSet(have, vars) {
				miss = append(miss, fmt.Sprintf("[mcp_servers.warden] env_vars = %s (the environment warden needs, by name)", tomlList(vars)))
			}
			if t, _ := w["tool_timeout_sec"].(int64); t < int64(o.Config.Security.Approval.MCPWaitSecs) {
				miss = append(miss, fmt.Sprintf("[mcp_servers.warden] tool_timeout_sec = %d (above mcp_wait_secs)", o.mcpTimeout()))
			}
			if w["default_tools_approval_mode"] != "approve" {
				miss = append(miss, `[mcp_servers.warden] default_tools_approval_mode = "approve" (codex exec cannot ask; warden asks a person itself)`)
			}
		}
		return miss
	}
	if miss := check(after); len(miss) > 0 {
		return nil, fmt.Errorf("%s could not be edited safely (%s); add warden's entries by hand:\n%s", path, strings.Join(miss, "; "), strings.Join(block, "\n"))
	}
	if before != nil && len(check(before)) == 0 {
		after = before
	}
	return &File{Path: path, Before: before, After: after, Mode: mode, check: check,
		Why: "warden's MCP server (environment passed through by name, tool timeout above mcp_wait_secs, approvals left to warden) and no terminal for commands"}, nil
}

func codexRequirements(path, hookCmd string, timeout int) (*File, error) {
	before, mode, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if before == nil {
		mode = 0o644
	}
	lines := strings.Split(strings.TrimRight(string(before), "\n"), "\n")
	if len(before) == 0 {
		lines = nil
	}
	// warden's hook groups are replaced whole: drop the [[hooks.*]] blocks
	// that run it, keep everyone else's.
	var kept []string
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && !isHeader(lines[j]) {
			j++
		}
		block := lines[i:j]
		if !(isHeader(lines[i]) && ownsHeader(lines[i], "hooks") && strings.Contains(strings.Join(block, "\n"), " hook codex")) {
			kept = append(kept, block...)
		}
		i = j
	}
	kept = setKey(kept, "features", "unified_exec_tty", "false")
	for _, ev := range []string{"PreToolUse", "PostToolUse"} {
		kept = append(kept, "", "[[hooks."+ev+"]]", `matcher = ".*"`, "", "[[hooks."+ev+".hooks]]", `type = "command"`,
			"command = "+tomlString(hookCmd), fmt.Sprintf("timeout = %d", timeout))
	}
	after := []byte(strings.TrimLeft(strings.Join(kept, "\n"), "\n") + "\n")
	check := func(content []byte) []string {
		var m struct {
			Features map[string]any `toml:"features"`
			Hooks    map[string][]struct {
				Hooks []struct {
					Command string `toml:"command"`
				} `toml:"hooks"`
			} `toml:"hooks"`
		}
		if err := toml.Unmarshal(content, &m); err != nil {
			return []string{"requirements.toml does not parse: " + err.Error()}
		}
		var miss []string
		if v, ok := m.Features["unified_exec_tty"].(bool); !ok || v {
			miss = append(miss, "[features] unified_exec_tty = false")
		}
		for _, ev := range []string{"PreToolUse", "PostToolUse"} {
			found := false
			for _, g := range m.Hooks[ev] {
				for _, h := range g.Hooks {
					found = found || h.Command == hookCmd
				}
			}
			if !found {
				miss = append(miss, "a managed "+ev+" hook running "+hookCmd)
			}
		}
		return miss
	}
	if miss := check(after); len(miss) > 0 {
		return nil, fmt.Errorf("%s could not be edited safely: %s", path, strings.Join(miss, "; "))
	}
	if before != nil && len(check(before)) == 0 {
		after = before
	}
	return &File{Path: path, Before: before, After: after, Mode: mode, check: check,
		Why: "Codex's managed hook (no trust needed, holds under --dangerously-bypass-approvals-and-sandbox) and no terminal for commands"}, nil
}

func anyStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, x := range a {
		m[x] = true
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}
