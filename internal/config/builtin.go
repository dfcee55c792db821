package config

import (
	"regexp"
	"slices"
)

// BuiltinTools are the tool names of the engine (seed 000 plus http_request).
var BuiltinTools = []string{
	"read_file", "write_file", "edit_file", "apply_patch", "delete_file",
	"list_files", "search_code", "grep", "find_files", "run_command", "http_request",
}

// ToolAliases are the names of seeds 001/002 accepted in configuration; they
// are normalised to the engine's names at load.
var ToolAliases = map[string]string{
	"shell":      "run_command",
	"terminal":   "run_command",
	"file_write": "write_file",
	"file_edit":  "edit_file",
	"file_read":  "read_file",
}

// ReadOnlyTools are the tools that change nothing.
var ReadOnlyTools = []string{"read_file", "list_files", "search_code", "grep", "find_files"}

// BuiltinGroups are the built-in tool groups. The group "mcp" holds every
// remote MCP tool (names mcp__<server>__<tool>) and is not listed here.
var BuiltinGroups = map[string][]string{
	"fs_read":  ReadOnlyTools,
	"fs_write": {"write_file", "edit_file", "apply_patch", "delete_file"},
	"shell":    {"run_command"},
	"network":  {"http_request"},
	"mcp":      nil,
}

// BuiltinAgents are the built-in agents and their tool sets: build has every
// built-in tool, the others only the read-only ones.
var BuiltinAgents = map[string][]string{
	"build":  BuiltinTools,
	"plan":   ReadOnlyTools,
	"review": ReadOnlyTools,
	"resume": ReadOnlyTools,
}

var mcpToolName = regexp.MustCompile(`^mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_.-]+$`)

// NormalizeTool maps an alias to its tool name and reports whether name is a
// tool warden knows (built-in, alias, or a remote MCP tool name).
func NormalizeTool(name string) (string, bool) {
	if t, ok := ToolAliases[name]; ok {
		return t, true
	}
	if slices.Contains(BuiltinTools, name) || mcpToolName.MatchString(name) {
		return name, true
	}
	return name, false
}

// groupsOf lists the groups, built-in and user-defined, that contain tool.
func groupsOf(tool string, userGroups map[string][]string) []string {
	var out []string
	for g, tools := range BuiltinGroups {
		if slices.Contains(tools, tool) || (g == "mcp" && mcpToolName.MatchString(tool)) {
			out = append(out, g)
		}
	}
	for g, tools := range userGroups {
		if slices.Contains(tools, tool) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

var modeRank = map[string]int{ModeYolo: 0, ModeAuto: 1, ModeConfirmSensitive: 2, ModeConfirmAll: 3}
var policyRank = map[string]int{PolicyAllow: 0, PolicySupervised: 1, PolicyDeny: 2}
var landlockRank = map[string]int{"off": 0, "auto": 1, "on": 2}

// NotifyChannels are the names notify_channel(s) accept; internal/approval
// builds each of them (its KnownChannels is this list).
var NotifyChannels = []string{"api", "cli", "webhook", "remote", "page", "slack", "discord", "telegram", "email", "terminal"}

// Sandbox backends.
var sandboxBackends = []string{"local", "docker", "ssh", "modal"}
