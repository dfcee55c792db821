package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
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
	c, err := f(m, ev.ToolInput, o)
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

type mapFunc func(m *mapper, in json.RawMessage, o MapOptions) (Call, error)

var mappers = map[Host]map[string]mapFunc{
	ClaudeCode: {
		"Bash":         mapBash,
		"Write":        mapWrite("file_path"),
		"Edit":         mapEdit("file_path", "old_string", "new_string", "replace_all"),
		"MultiEdit":    mapMultiEdit,
		"NotebookEdit": mapNotebook,
		"Read":         mapRead("file_path"),
		"Grep":         mapSearch("pattern", "path", "glob"),
		"Glob":         mapGlob("pattern", "path"),
		"LS":           mapList("path"),
		"WebFetch":     mapFetch,
		"WebSearch":    mapWebSearch,
		"ListMcpResourcesTool": func(m *mapper, in json.RawMessage, o MapOptions) (Call, error) {
			return mapMCPResource(in, "list_resources", o)
		},
		"ReadMcpResourceTool": func(m *mapper, in json.RawMessage, o MapOptions) (Call, error) {
			return mapMCPResource(in, "read_resource", o)
		},
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
		"list_mcp_resources": func(m *mapper, in json.RawMessage, o MapOptions) (Call, error) {
			return mapMCPResource(in, "list_resources", o)
		},
		"read_mcp_resource": func(m *mapper, in json.RawMessage, o MapOptions) (Call, error) {
			return mapMCPResource(in, "read_resource", o)
		},
	},
}

func call(tool string, args any) (Call, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return Call{}, err
	}
	return Call{Tool: tool, Args: b}, nil
}

// fields reads a tool input object.
type fields map[string]json.RawMessage

func decode(in json.RawMessage) (fields, error) {
	var f fields
	if err := json.Unmarshal(in, &f); err != nil || f == nil {
		return nil, errors.New("the tool input is not a JSON object")
	}
	return f, nil
}

// str returns the string field key ("" when absent); a field of another
// type is an error.
func (f fields) str(key string) (string, error) {
	raw, ok := f[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s is not a string", key)
	}
	return s, nil
}

func (f fields) need(key string) (string, error) {
	s, err := f.str(key)
	if err == nil && s == "" {
		err = fmt.Errorf("%s is missing", key)
	}
	return s, err
}

func (f fields) boolean(key string) (bool, error) {
	raw, ok := f[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("%s is not a boolean", key)
	}
	return b, nil
}

// mapBash judges a shell command (Bash, exec_command, run_shell_command)
// as run_command in the host's working directory. Codex's shell tools may
// give the command as an argv; ["bash", "-lc", LINE] is LINE, any other
// argv is quoted back into one line.
func mapBash(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	line, err := commandLine(f)
	if err != nil {
		return Call{}, err
	}
	dir := m.cwd
	for _, key := range []string{"dir_path", "workdir", "cwd", "directory"} {
		if d, err := f.str(key); err != nil {
			return Call{}, err
		} else if d != "" {
			if !filepath.IsAbs(d) {
				d = filepath.Join(m.cwd, d)
			}
			dir = d
			break
		}
	}
	cwd, err := m.path(dir, false)
	if err != nil {
		return Call{}, err
	}
	args := map[string]any{"command": line}
	if cwd != "." && cwd != "" {
		args["cwd"] = cwd
	}
	return call("run_command", args)
}

func commandLine(f fields) (string, error) {
	for _, key := range []string{"command", "cmd"} {
		raw, ok := f[key]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if strings.TrimSpace(s) == "" {
				return "", fmt.Errorf("%s is empty", key)
			}
			return s, nil
		}
		var argv []string
		if err := json.Unmarshal(raw, &argv); err != nil || len(argv) == 0 {
			return "", fmt.Errorf("%s is neither a command line nor an argument list", key)
		}
		if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "/bin/bash") && (argv[1] == "-lc" || argv[1] == "-c") {
			return argv[2], nil
		}
		quoted := make([]string, len(argv))
		for i, a := range argv {
			q, err := syntax.Quote(a, syntax.LangBash)
			if err != nil {
				return "", fmt.Errorf("argument %d cannot be quoted for the shell", i)
			}
			quoted[i] = q
		}
		return strings.Join(quoted, " "), nil
	}
	return "", errors.New("the command is missing")
}

// mapCodexExec judges Codex's shell. A command started with a terminal
// (tty: true) keeps its stdin open for write_stdin, which Codex does not
// pass to hooks: what is typed into it later would run unjudged (measured
// with Codex 0.169.0: `bash` with a tty, then write_stdin "touch x" ran).
// Codex 0.169.0 does not pass the tty flag to hooks either, so the defence
// is its configuration (`[features] unified_exec_tty = false`, which
// `warden setup codex` writes); a hook input that does say tty is refused.
func mapCodexExec(m *mapper, in json.RawMessage, o MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	if tty, err := f.boolean("tty"); err != nil {
		return Call{}, err
	} else if tty {
		return Call{}, errors.New("a command with a terminal (tty: true) is refused: what is typed into it later (write_stdin) does not reach warden's hook, so it could not be judged. Run the command without a terminal, with its whole input on the command line")
	}
	return mapBash(m, in, o)
}

// mapStdin judges Codex's write_stdin (more input to a running command)
// as a command: what it types is run by whatever reads it.
func mapStdin(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	chars, err := f.str("chars")
	if err != nil {
		return Call{}, err
	}
	if strings.TrimSpace(chars) == "" {
		return Call{Pass: "write_stdin sends no input (it polls a running command)"}, nil
	}
	return call("run_command", map[string]any{"command": chars})
}

func mapWrite(pathKey string) mapFunc {
	return func(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
		f, err := decode(in)
		if err != nil {
			return Call{}, err
		}
		p, err := f.need(pathKey)
		if err != nil {
			return Call{}, err
		}
		content, err := f.str("content")
		if err != nil {
			return Call{}, err
		}
		rel, err := m.path(p, true)
		if err != nil {
			return Call{}, err
		}
		return call("write_file", map[string]any{"path": rel, "content": content})
	}
}

func mapEdit(pathKey, oldKey, newKey, allKey string) mapFunc {
	return func(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
		f, err := decode(in)
		if err != nil {
			return Call{}, err
		}
		p, err := f.need(pathKey)
		if err != nil {
			return Call{}, err
		}
		old, err := f.str(oldKey)
		if err != nil {
			return Call{}, err
		}
		nw, err := f.str(newKey)
		if err != nil {
			return Call{}, err
		}
		all, err := f.boolean(allKey)
		if err != nil {
			return Call{}, err
		}
		rel, err := m.path(p, true)
		if err != nil {
			return Call{}, err
		}
		if old == "" { // an edit of nothing creates the file
			return call("write_file", map[string]any{"path": rel, "content": nw})
		}
		args := map[string]any{"path": rel, "old_str": old, "new_str": nw}
		if all {
			args["replace_all"] = true
		}
		return call("edit_file", args)
	}
}

// mapMultiEdit judges Claude Code's MultiEdit as the write of the file's
// content after every edit, applied here in order as the host applies them.
func mapMultiEdit(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	var a struct {
		FilePath string `json:"file_path"`
		Edits    []struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
			All bool   `json:"replace_all"`
		} `json:"edits"`
	}
	if err := json.Unmarshal(in, &a); err != nil {
		return Call{}, fmt.Errorf("the tool input does not fit: %v", err)
	}
	if a.FilePath == "" || len(a.Edits) == 0 {
		return Call{}, errors.New("file_path and edits are required")
	}
	rel, err := m.path(a.FilePath, true)
	if err != nil {
		return Call{}, err
	}
	var content string
	if filepath.IsLocal(rel) {
		if b, err := os.ReadFile(filepath.Join(m.ws, filepath.FromSlash(rel))); err == nil {
			content = string(b)
		} else if !errors.Is(err, os.ErrNotExist) {
			return Call{}, fmt.Errorf("%s cannot be read to apply the edits: %v", a.FilePath, err)
		}
	}
	for i, e := range a.Edits {
		switch n := strings.Count(content, e.Old); {
		case e.Old == "" && i == 0 && content == "":
			content = e.New
		case e.Old == "" || n == 0:
			return Call{}, fmt.Errorf("edit %d: old_string was not found in %s", i+1, a.FilePath)
		case n > 1 && !e.All:
			return Call{}, fmt.Errorf("edit %d: old_string occurs %d times in %s", i+1, n, a.FilePath)
		case e.All:
			content = strings.ReplaceAll(content, e.Old, e.New)
		default:
			content = strings.Replace(content, e.Old, e.New, 1)
		}
	}
	return call("write_file", map[string]any{"path": rel, "content": content})
}

func mapNotebook(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	p, err := f.need("notebook_path")
	if err != nil {
		return Call{}, err
	}
	rel, err := m.path(p, true)
	if err != nil {
		return Call{}, err
	}
	args := map[string]any{"path": rel}
	for _, k := range []string{"new_source", "cell_id", "cell_type", "edit_mode"} {
		v, err := f.str(k)
		if err != nil {
			return Call{}, err
		}
		if v != "" {
			args[k] = v
		}
	}
	return call(ToolNotebookEdit, args)
}

func mapRead(pathKey string) mapFunc {
	return func(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
		f, err := decode(in)
		if err != nil {
			return Call{}, err
		}
		p, err := f.need(pathKey)
		if err != nil {
			return Call{}, err
		}
		rel, err := m.path(p, false)
		if err != nil {
			return Call{}, err
		}
		return call("read_file", map[string]any{"path": rel})
	}
}

func mapSearch(patternKey, pathKey, globKey string) mapFunc {
	return func(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
		f, err := decode(in)
		if err != nil {
			return Call{}, err
		}
		pattern, err := f.need(patternKey)
		if err != nil {
			return Call{}, err
		}
		p, err := f.str(pathKey)
		if err != nil {
			return Call{}, err
		}
		if p == "" {
			p = m.cwd
		}
		rel, err := m.path(p, false)
		if err != nil {
			return Call{}, err
		}
		args := map[string]any{"pattern": pattern, "path": rel}
		if g, err := f.str(globKey); err != nil {
			return Call{}, err
		} else if g != "" {
			args["glob"] = g
		}
		return call(ToolSearch, args)
	}
}

func mapGlob(patternKey, pathKey string) mapFunc {
	return func(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
		f, err := decode(in)
		if err != nil {
			return Call{}, err
		}
		pattern, err := f.need(patternKey)
		if err != nil {
			return Call{}, err
		}
		p, err := f.str(pathKey)
		if err != nil {
			return Call{}, err
		}
		if p == "" {
			p = m.cwd
		}
		rel, err := m.path(p, false)
		if err != nil {
			return Call{}, err
		}
		return call("find_files", map[string]any{"pattern": pattern, "path": rel})
	}
}

func mapList(pathKey string) mapFunc {
	return func(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
		f, err := decode(in)
		if err != nil {
			return Call{}, err
		}
		p, err := f.str(pathKey)
		if err != nil {
			return Call{}, err
		}
		if p == "" {
			p = m.cwd
		}
		rel, err := m.path(p, false)
		if err != nil {
			return Call{}, err
		}
		return call("list_files", map[string]any{"path": rel})
	}
}

func mapFetch(_ *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	u, err := f.need("url")
	if err != nil {
		return Call{}, err
	}
	return call("http_request", map[string]any{"url": u})
}

// urlRe finds the addresses in Gemini CLI's web_fetch prompt, as it does.
var urlRe = regexp.MustCompile(`https?://[^\s"'<>)\]]+`)

// mapGeminiFetch judges web_fetch, whose addresses are in its prompt, as
// http_request of that address. One address per call: several would be
// judged as one request.
func mapGeminiFetch(_ *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	prompt, err := f.need("prompt")
	if err != nil {
		return Call{}, err
	}
	urls := urlRe.FindAllString(prompt, -1)
	switch len(urls) {
	case 0:
		return Call{}, errors.New("the prompt names no http:// or https:// address")
	case 1:
		return call("http_request", map[string]any{"url": urls[0]})
	}
	return Call{}, fmt.Errorf("the prompt names %d addresses; warden judges one address per web_fetch call: fetch them one at a time", len(urls))
}

func mapWebSearch(_ *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	q, err := f.str("query")
	if err != nil {
		return Call{}, err
	}
	if q == "" {
		q = "(no query)"
	}
	return call(ToolWebSearch, map[string]any{"query": q})
}

func mapReadMany(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	var a struct {
		Include []string `json:"include"`
		Exclude []string `json:"exclude"`
		Paths   []string `json:"paths"`
	}
	if err := json.Unmarshal(in, &a); err != nil {
		return Call{}, fmt.Errorf("the tool input does not fit: %v", err)
	}
	include := append(a.Include, a.Paths...)
	if len(include) == 0 {
		return Call{}, errors.New("include is missing")
	}
	out := make([]string, 0, len(include))
	for _, p := range include {
		if strings.ContainsAny(p, "*?[{") {
			if filepath.IsAbs(p) {
				return Call{}, fmt.Errorf("the glob %q is absolute; warden judges globs inside the workspace only", p)
			}
			out = append(out, p)
			continue
		}
		rel, err := m.path(p, false)
		if err != nil {
			return Call{}, err
		}
		out = append(out, rel)
	}
	args := map[string]any{"include": out}
	if len(a.Exclude) > 0 {
		args["exclude"] = a.Exclude
	}
	return call(ToolReadMany, args)
}

// mapSaveMemory judges Gemini CLI's save_memory as what it is: a write to
// the user's ~/.gemini/GEMINI.md, outside the workspace, read back into
// every later session's prompt.
func mapSaveMemory(_ *mapper, in json.RawMessage, o MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	fact, err := f.str("fact")
	if err != nil {
		return Call{}, err
	}
	home := o.Home
	if home == "" {
		home = "/root"
	}
	return call("write_file", map[string]any{"path": filepath.Join(home, ".gemini", "GEMINI.md"), "content": fact})
}

func mapMCPResource(in json.RawMessage, what string, o MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	server, err := f.str("server")
	if err != nil {
		return Call{}, err
	}
	if server == "" {
		server = "any"
	}
	if server == o.WardenServer {
		return Call{Pass: "a call to warden's own MCP server"}, nil
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(server) {
		return Call{}, fmt.Errorf("server %q is not an MCP server name", server)
	}
	return call("mcp__"+server+"__"+what, json.RawMessage(in))
}

func mapCodexPatch(m *mapper, in json.RawMessage, _ MapOptions) (Call, error) {
	f, err := decode(in)
	if err != nil {
		return Call{}, err
	}
	text, err := f.str("command")
	if err != nil {
		return Call{}, err
	}
	if text == "" {
		if text, err = f.need("input"); err != nil {
			return Call{}, errors.New("the patch is missing")
		}
	}
	ops, err := parseCodexPatch(text)
	if err != nil {
		return Call{}, fmt.Errorf("the patch does not parse: %v", err)
	}
	for i := range ops {
		op := &ops[i]
		if op.path, err = m.path(op.path, true); err != nil {
			return Call{}, err
		}
		if op.to != "" {
			if op.to, err = m.path(op.to, true); err != nil {
				return Call{}, err
			}
		}
		for _, p := range []string{op.path, op.to} {
			if filepath.IsAbs(p) {
				return Call{}, fmt.Errorf("the patch changes %s, which escapes the workspace", p)
			}
		}
	}
	diff, err := unifiedDiff(ops)
	if err != nil {
		return Call{}, err
	}
	return call("apply_patch", map[string]any{"patch": diff})
}
