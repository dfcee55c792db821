package hostsetup

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// envRefs maps each variable to the host's reference to it (never its value).
func envRefs(vars []string, ref func(v string) string) map[string]any {
	m := map[string]any{}
	for _, v := range vars {
		m[v] = ref(v)
	}
	return m
}

func hookGroup(matcher, command string, timeout int) map[string]any {
	return map[string]any{"matcher": matcher, "hooks": []any{map[string]any{"type": "command", "command": command, "timeout": timeout}}}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// Claude Code: hooks, permissions and the MCP tool timeout in
// ~/.claude/settings.json; the MCP server in ~/.claude.json (user scope,
// every project). It expands ${VAR} in a server's env.
func planClaude(o Options) (*Plan, error) {
	p := &Plan{Host: o.Host}
	hc := o.hookCommand()
	wants := []want{
		{path: []string{"hooks", "PreToolUse"}, hookGroup: hookGroup("*", hc, o.hookTimeout()), what: "a PreToolUse hook running " + hc},
		{path: []string{"hooks", "PostToolUse"}, hookGroup: hookGroup("*", hc, o.hookTimeout()), what: "a PostToolUse hook running " + hc + " (audit of what ran)"},
		{path: []string{"permissions", "allow"}, item: "mcp__warden__*", what: `permissions.allow "mcp__warden__*" (warden asks a person itself; the host should not ask again)`},
		{path: []string{"env", "MCP_TOOL_TIMEOUT"}, value: strconv.Itoa(o.mcpTimeout() * 1000), what: fmt.Sprintf("env.MCP_TOOL_TIMEOUT = %d (ms; above mcp_wait_secs)", o.mcpTimeout()*1000)},
	}
	if o.Exclusive {
		for _, t := range []string{"Bash", "Write", "Edit", "MultiEdit", "NotebookEdit", "WebFetch"} {
			wants = append(wants, want{path: []string{"permissions", "deny"}, item: t, what: `permissions.deny "` + t + `" (warden's tools are the only path)`})
		}
	}
	settings, err := jsonFile(filepath.Join(o.Home, ".claude", "settings.json"),
		"every tool call of Claude Code goes to `warden hook claude-code` first; warden's MCP tools run without a second prompt", wants)
	if err != nil {
		return nil, err
	}
	server := map[string]any{"type": "stdio", "command": o.Warden, "args": toAny(o.mcpArgs()),
		"env": envRefs(PassEnv(o.Config, o.Getenv), func(v string) string { return "${" + v + "}" })}
	mcp, err := jsonFile(filepath.Join(o.Home, ".claude.json"), "warden's MCP server, with the environment it needs passed through by reference",
		[]want{{path: []string{"mcpServers", "warden"}, value: server, what: "the MCP server entry mcpServers.warden (" + o.Warden + " " + fmt.Sprint(o.mcpArgs()) + ")"}})
	if err != nil {
		return nil, err
	}
	p.Files = []*File{settings, mcp}
	return p, nil
}

// Gemini CLI: hooks, the MCP server (trusted: warden asks a person itself)
// and, when exclusive, its own tools excluded, in ~/.gemini/settings.json.
// It expands $VAR in a server's env; timeouts are in milliseconds.
func planGemini(o Options) (*Plan, error) {
	p := &Plan{Host: o.Host}
	hc := o.hookCommand()
	server := map[string]any{"command": o.Warden, "args": toAny(o.mcpArgs()), "trust": true, "timeout": o.mcpTimeout() * 1000,
		"env": envRefs(PassEnv(o.Config, o.Getenv), func(v string) string { return "$" + v })}
	wants := []want{
		{path: []string{"hooks", "BeforeTool"}, hookGroup: hookGroup(".*", hc, o.hookTimeout()*1000), what: "a BeforeTool hook running " + hc},
		{path: []string{"hooks", "AfterTool"}, hookGroup: hookGroup(".*", hc, o.hookTimeout()*1000), what: "an AfterTool hook running " + hc + " (audit of what ran)"},
		{path: []string{"mcpServers", "warden"}, value: server, what: "the MCP server entry mcpServers.warden, trusted, with timeout above mcp_wait_secs"},
	}
	if o.Exclusive {
		for _, t := range []string{"run_shell_command", "write_file", "replace", "web_fetch"} {
			wants = append(wants, want{path: []string{"tools", "exclude"}, item: t, what: `tools.exclude "` + t + `" (warden's tools are the only path)`})
		}
	}
	f, err := jsonFile(filepath.Join(o.Home, ".gemini", "settings.json"),
		"every tool call of Gemini CLI goes to `warden hook gemini-cli` first; warden's MCP server is trusted (warden asks a person itself)", wants)
	if err != nil {
		return nil, err
	}
	p.Files = []*File{f}
	return p, nil
}

// Cursor: the MCP server in ~/.cursor/mcp.json (${env:VAR} references).
// Cursor's own tools have no hook warden answers.
func planCursor(o Options) (*Plan, error) {
	server := map[string]any{"command": o.Warden, "args": toAny(o.mcpArgs()),
		"env": envRefs(PassEnv(o.Config, o.Getenv), func(v string) string { return "${env:" + v + "}" })}
	f, err := jsonFile(filepath.Join(o.Home, ".cursor", "mcp.json"), "warden's MCP server, with the environment it needs passed through by reference",
		[]want{{path: []string{"mcpServers", "warden"}, value: server, what: "the MCP server entry mcpServers.warden"}})
	if err != nil {
		return nil, err
	}
	return &Plan{Host: o.Host, Files: []*File{f}, Notes: []string{
		"Cursor's own terminal and edit tools do not go through warden: in Cursor's settings, turn off auto-run for them (or ask the agent to use warden's tools), so that warden is the path that runs commands and writes files.",
		"Cursor asks before an MCP tool runs unless its auto-run is on; warden asks a person itself for what its policy supervises.",
	}}, nil
}
