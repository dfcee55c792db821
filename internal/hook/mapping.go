package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Call is the warden call a host's tool call is decided as.
type Call struct {
	// Tool and Args are the warden tool call with the same effect.
	Tool string
	Args json.RawMessage
	// Pass, when set, says why the host's call is not decided by warden: a
	// host-internal tool with no effect on the machine, or a call to
	// warden's own MCP server, which decides it itself.
	Pass string
}

// MapOptions tune Map.
type MapOptions struct {
	// WardenServer is the name the host gives warden's own MCP server
	// ("warden"): its calls pass, since warden decides them as they arrive.
	WardenServer string
	// Refused reports whether a workspace-relative name is masked (or, for
	// a write, protected) as written; such a name is judged as written even
	// when it is a link elsewhere.
	Refused func(rel string, write bool) bool
	// Home is the user's home directory (Gemini CLI's save_memory writes there).
	Home string
}

// DefaultWardenServer is the name `warden setup` gives warden's MCP server.
const DefaultWardenServer = "warden"

// ErrUnknownTool is what Map's error wraps for a host tool warden does not know.
var ErrUnknownTool = errors.New("warden does not know this host tool")

// hostInternal lists, per host, the tools with no effect on the machine
// (their effects, if any, come through other, decided tool calls).
var hostInternal = map[Host]map[string]string{
	ClaudeCode: set("a host-internal tool",
		"Agent", "Task", "ListAgents", "TodoWrite", "TodoRead", "ExitPlanMode", "EnterPlanMode", "AskUserQuestion",
		"BashOutput", "TaskOutput", "KillShell", "KillBash", "TaskStop", "SlashCommand", "Skill", "ToolSearch",
		"Workflow", "ReportFindings", "ScheduleWakeup", "DeferredToolPlaceholder", "TaskCreate", "TaskUpdate",
		"TaskList", "TaskGet", "NotebookRead"),
	Codex: set("a host-internal tool", "update_plan", "view_image", "request_user_input", "get_goal", "create_goal", "update_goal"),
	GeminiCLI: set("a host-internal tool",
		"write_todos", "update_topic", "enter_plan_mode", "exit_plan_mode", "invoke_agent", "activate_skill", "ask_user",
		"complete_task", "get_internal_docs", "list_background_processes", "read_background_output",
		"tracker_add_dependency", "tracker_create_task", "tracker_get_task", "tracker_list_tasks", "tracker_update_task", "tracker_visualize"),
}

func set(why string, names ...string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = why
	}
	return m
}

// Map returns the warden call that decides ev's tool call, with the host's
// paths made relative to the workspace ws (absolute, links resolved). An
// error is written for the model: the call is refused with it.
func Map(ev *Event, ws string, o MapOptions) (Call, error) {
	m := &mapper{ws: ws, cwd: ev.Cwd, refused: o.Refused}
	if o.WardenServer == "" {
		o.WardenServer = DefaultWardenServer
	}
	name := ev.ToolName
	if why, ok := hostInternal[ev.Host][name]; ok {
		return Call{Pass: name + " is " + why}, nil
	}
	if server, tool, ok := mcpName(ev); ok {
		if server == o.WardenServer {
			return Call{Pass: "a call to warden's own MCP server, which decides it"}, nil
		}
		return call("mcp__"+server+"__"+tool, ev.ToolInput)
	}
	f := mappers[ev.Host][name]
	if f == nil {
		return Call{}, fmt.Errorf("%w: %s (%s). warden refuses what it cannot judge; ask the user to allow it in the host's own settings if it is needed", ErrUnknownTool, name, ev.Host)
	}
	c, err := f(readInput(m, ev.ToolInput), o)
	if err != nil {
		return Call{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// mcpRe is an MCP tool name in Claude Code's and Codex's form: mcp__S__T.
var mcpRe = regexp.MustCompile(`^mcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_.-]+)$`)

// mcpName reads an MCP call's server and tool: mcp__S__T, or Gemini CLI's
// mcp_context (its tool names are mcp_S_T, ambiguous when S holds "_").
func mcpName(ev *Event) (server, tool string, ok bool) {
	if ev.MCPServer != "" && ev.MCPTool != "" {
		return ev.MCPServer, ev.MCPTool, true
	}
	if m := mcpRe.FindStringSubmatch(ev.ToolName); m != nil {
		return m[1], m[2], true
	}
	if ev.Host == GeminiCLI && strings.HasPrefix(ev.ToolName, "mcp_") {
		s, t, found := strings.Cut(strings.TrimPrefix(ev.ToolName, "mcp_"), "_")
		if found && s != "" && t != "" {
			return s, t, true
		}
	}
	return "", "", false
}

// mapFunc maps one host tool's input (read through in) to a warden call.
type mapFunc func(in *input, o MapOptions) (Call, error)

var mappers = map[Host]map[string]mapFunc{
	ClaudeCode: {
		"Bash":                 mapBash,
		"Write":                mapWrite("file_path"),
		"Edit":                 mapEdit("file_path", "old_string", "new_string", "replace_all"),
		"MultiEdit":            mapMultiEdit,
		"NotebookEdit":         mapNotebook,
		"Read":                 mapRead("file_path"),
		"Grep":                 mapSearch("pattern", "path", "glob"),
		"Glob":                 mapGlob("pattern", "path"),
		"LS":                   mapList("path"),
		"WebFetch":             mapFetch,
		"WebSearch":            mapWebSearch,
		"ListMcpResourcesTool": mapMCPResource("list_resources"),
		"ReadMcpResourceTool":  mapMCPResource("read_resource"),
	},
	Codex: {
		"Bash":           mapCodexExec,
		"exec_command":   mapCodexExec,
		"shell":          mapBash,
		"local_shell":    mapBash,
		"apply_patch":    mapCodexPatch,
		"web_search":     mapWebSearch,
		"write_stdin":    mapStdin,
		"shell_command":  mapCodexExec,
		"unified_exec":   mapCodexExec,
		"container.exec": mapBash,
	},
	GeminiCLI: {
		"run_shell_command":   mapBash,
		"write_file":          mapWrite("file_path"),
		"replace":             mapEdit("file_path", "old_string", "new_string", "allow_multiple"),
		"read_file":           mapRead("file_path"),
		"read_many_files":     mapReadMany,
		"glob":                mapGlob("pattern", "dir_path"),
		"grep_search":         mapSearch("pattern", "dir_path", "include_pattern"),
		"search_file_content": mapSearch("pattern", "dir_path", "include"),
		"list_directory":      mapList("dir_path"),
		"web_fetch":           mapGeminiFetch,
		"google_web_search":   mapWebSearch,
		"save_memory":         mapSaveMemory,
		"list_mcp_resources":  mapMCPResource("list_resources"),
		"read_mcp_resource":   mapMCPResource("read_resource"),
	},
}
