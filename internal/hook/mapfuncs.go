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

// input reads a host tool's input object. Its first problem (not an object,
// a field of the wrong type, a required one missing, a path that cannot be
// resolved) is kept in err, and every read after it is a no-op: a mapping
// reads what it needs, then checks err once.
type input struct {
	m   *mapper
	raw json.RawMessage
	f   map[string]json.RawMessage
	err error
}

func readInput(m *mapper, raw json.RawMessage) *input {
	in := &input{m: m, raw: raw}
	if err := json.Unmarshal(raw, &in.f); err != nil || in.f == nil {
		in.err = errors.New("the tool input is not a JSON object")
	}
	return in
}

func (in *input) fail(format string, a ...any) {
	if in.err == nil {
		in.err = fmt.Errorf(format, a...)
	}
}

// present returns the field key unless it is absent or null.
func (in *input) present(key string) (json.RawMessage, bool) {
	if in.err != nil {
		return nil, false
	}
	raw, ok := in.f[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, false
	}
	return raw, true
}

// str returns the string field key ("" when absent).
func (in *input) str(key string) string {
	raw, ok := in.present(key)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		in.fail("%s is not a string", key)
	}
	return s
}

// need is str for a field that must be there and not empty.
func (in *input) need(key string) string {
	s := in.str(key)
	if in.err == nil && s == "" {
		in.fail("%s is missing", key)
	}
	return s
}

func (in *input) boolean(key string) bool {
	raw, ok := in.present(key)
	if !ok {
		return false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		in.fail("%s is not a boolean", key)
	}
	return b
}

// path maps the path p names for the guards (mapper.path).
func (in *input) path(p string, write bool) string {
	if in.err != nil {
		return ""
	}
	rel, err := in.m.path(p, write)
	if err != nil {
		in.err = err
	}
	return rel
}

// dir maps the directory field key, the host's working directory when
// absent (a search, a listing, a glob starts there).
func (in *input) dir(key string) string {
	d := in.str(key)
	if d == "" {
		d = in.m.cwd
	}
	return in.path(d, false)
}

func (in *input) done(tool string, args map[string]any) (Call, error) {
	if in.err != nil {
		return Call{}, in.err
	}
	return call(tool, args)
}

func call(tool string, args any) (Call, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return Call{}, err
	}
	return Call{Tool: tool, Args: b}, nil
}

// mapBash judges a shell command (Bash, exec_command, run_shell_command)
// as run_command in the host's working directory (or the directory the
// call names). Codex's shell tools may give the command as an argv;
// ["bash", "-lc", LINE] is LINE, any other argv is quoted back into one
// line.
func mapBash(in *input, _ MapOptions) (Call, error) {
	line := in.commandLine()
	dir := in.m.cwd
	for _, key := range []string{"dir_path", "workdir", "cwd", "directory"} {
		if d := in.str(key); d != "" {
			if !filepath.IsAbs(d) {
				d = filepath.Join(in.m.cwd, d)
			}
			dir = d
			break
		}
	}
	args := map[string]any{"command": line}
	if cwd := in.path(dir, false); cwd != "." && cwd != "" {
		args["cwd"] = cwd
	}
	return in.done("run_command", args)
}

func (in *input) commandLine() string {
	for _, key := range []string{"command", "cmd"} {
		raw, ok := in.present(key)
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if strings.TrimSpace(s) == "" {
				in.fail("%s is empty", key)
			}
			return s
		}
		var argv []string
		if err := json.Unmarshal(raw, &argv); err != nil || len(argv) == 0 {
			in.fail("%s is neither a command line nor an argument list", key)
			return ""
		}
		if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "/bin/bash") && (argv[1] == "-lc" || argv[1] == "-c") {
			return argv[2]
		}
		quoted := make([]string, len(argv))
		for i, a := range argv {
			q, err := syntax.Quote(a, syntax.LangBash)
			if err != nil {
				in.fail("argument %d cannot be quoted for the shell", i)
				return ""
			}
			quoted[i] = q
		}
		return strings.Join(quoted, " ")
	}
	in.fail("the command is missing")
	return ""
}

// mapCodexExec judges Codex's shell. A command started with a terminal
// (tty: true) keeps its stdin open for write_stdin, which Codex does not
// pass to hooks: what is typed into it later would run unjudged (measured
// with Codex 0.169.0: `bash` with a tty, then write_stdin "touch x" ran).
// Codex 0.169.0 does not pass the tty flag to hooks either, so the defence
// is its configuration (`[features] unified_exec_tty = false`, which
// `warden setup codex` writes); a hook input that does say tty is refused.
func mapCodexExec(in *input, o MapOptions) (Call, error) {
	if in.boolean("tty") {
		in.fail("a command with a terminal (tty: true) is refused: what is typed into it later (write_stdin) does not reach warden's hook, so it could not be judged. Run the command without a terminal, with its whole input on the command line")
	}
	if in.err != nil {
		return Call{}, in.err
	}
	return mapBash(in, o)
}

// mapStdin judges Codex's write_stdin (more input to a running command)
// as a command: what it types is run by whatever reads it.
func mapStdin(in *input, _ MapOptions) (Call, error) {
	chars := in.str("chars")
	if in.err == nil && strings.TrimSpace(chars) == "" {
		return Call{Pass: "write_stdin sends no input (it polls a running command)"}, nil
	}
	return in.done("run_command", map[string]any{"command": chars})
}

func mapWrite(pathKey string) mapFunc {
	return func(in *input, _ MapOptions) (Call, error) {
		rel := in.path(in.need(pathKey), true)
		return in.done("write_file", map[string]any{"path": rel, "content": in.str("content")})
	}
}

func mapEdit(pathKey, oldKey, newKey, allKey string) mapFunc {
	return func(in *input, _ MapOptions) (Call, error) {
		rel := in.path(in.need(pathKey), true)
		old, nw, all := in.str(oldKey), in.str(newKey), in.boolean(allKey)
		if old == "" { // an edit of nothing creates the file
			return in.done("write_file", map[string]any{"path": rel, "content": nw})
		}
		args := map[string]any{"path": rel, "old_str": old, "new_str": nw}
		if all {
			args["replace_all"] = true
		}
		return in.done("edit_file", args)
	}
}

// mapMultiEdit judges Claude Code's MultiEdit as the write of the file's
// content after every edit, applied here in order as the host applies them.
func mapMultiEdit(in *input, _ MapOptions) (Call, error) {
	var a struct {
		FilePath string `json:"file_path"`
		Edits    []struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
			All bool   `json:"replace_all"`
		} `json:"edits"`
	}
	if err := json.Unmarshal(in.raw, &a); err != nil {
		return Call{}, fmt.Errorf("the tool input does not fit: %v", err)
	}
	if a.FilePath == "" || len(a.Edits) == 0 {
		return Call{}, errors.New("file_path and edits are required")
	}
	rel := in.path(a.FilePath, true)
	if in.err != nil {
		return Call{}, in.err
	}
	var content string
	if filepath.IsLocal(rel) {
		if b, err := os.ReadFile(filepath.Join(in.m.ws, filepath.FromSlash(rel))); err == nil {
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

func mapNotebook(in *input, _ MapOptions) (Call, error) {
	args := map[string]any{"path": in.path(in.need("notebook_path"), true)}
	for _, k := range []string{"new_source", "cell_id", "cell_type", "edit_mode"} {
		if v := in.str(k); v != "" {
			args[k] = v
		}
	}
	return in.done(ToolNotebookEdit, args)
}

func mapRead(pathKey string) mapFunc {
	return func(in *input, _ MapOptions) (Call, error) {
		return in.done("read_file", map[string]any{"path": in.path(in.need(pathKey), false)})
	}
}

func mapSearch(patternKey, pathKey, globKey string) mapFunc {
	return func(in *input, _ MapOptions) (Call, error) {
		args := map[string]any{"pattern": in.need(patternKey), "path": in.dir(pathKey)}
		if g := in.str(globKey); g != "" {
			args["glob"] = g
		}
		return in.done(ToolSearch, args)
	}
}

func mapGlob(patternKey, pathKey string) mapFunc {
	return func(in *input, _ MapOptions) (Call, error) {
		return in.done("find_files", map[string]any{"pattern": in.need(patternKey), "path": in.dir(pathKey)})
	}
}

func mapList(pathKey string) mapFunc {
	return func(in *input, _ MapOptions) (Call, error) {
		return in.done("list_files", map[string]any{"path": in.dir(pathKey)})
	}
}

func mapFetch(in *input, _ MapOptions) (Call, error) {
	return in.done("http_request", map[string]any{"url": in.need("url")})
}

// urlRe finds the addresses in Gemini CLI's web_fetch prompt, as it does.
var urlRe = regexp.MustCompile(`https?://[^\s"'<>)\]]+`)

// mapGeminiFetch judges web_fetch, whose addresses are in its prompt, as
// http_request of that address. One address per call: several would be
// judged as one request.
func mapGeminiFetch(in *input, _ MapOptions) (Call, error) {
	prompt := in.need("prompt")
	if in.err != nil {
		return Call{}, in.err
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

func mapWebSearch(in *input, _ MapOptions) (Call, error) {
	q := in.str("query")
	if q == "" {
		q = "(no query)"
	}
	return in.done(ToolWebSearch, map[string]any{"query": q})
}

func mapReadMany(in *input, _ MapOptions) (Call, error) {
	var a struct {
		Include []string `json:"include"`
		Exclude []string `json:"exclude"`
		Paths   []string `json:"paths"`
	}
	if err := json.Unmarshal(in.raw, &a); err != nil {
		return Call{}, fmt.Errorf("the tool input does not fit: %v", err)
	}
	include := append(a.Include, a.Paths...)
	if len(include) == 0 {
		return Call{}, errors.New("include is missing")
	}
	out := make([]string, 0, len(include))
	for _, p := range include {
		if !strings.ContainsAny(p, "*?[{") {
			out = append(out, in.path(p, false))
			continue
		}
		if filepath.IsAbs(p) {
			return Call{}, fmt.Errorf("the glob %q is absolute; warden judges globs inside the workspace only", p)
		}
		out = append(out, p)
	}
	args := map[string]any{"include": out}
	if len(a.Exclude) > 0 {
		args["exclude"] = a.Exclude
	}
	return in.done(ToolReadMany, args)
}

// mapSaveMemory judges Gemini CLI's save_memory as what it is: a write to
// the user's ~/.gemini/GEMINI.md, outside the workspace, read back into
// every later session's prompt.
func mapSaveMemory(in *input, o MapOptions) (Call, error) {
	home := o.Home
	if home == "" {
		home = "/root"
	}
	return in.done("write_file", map[string]any{"path": filepath.Join(home, ".gemini", "GEMINI.md"), "content": in.str("fact")})
}

var serverNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// mapMCPResource judges a host's read or listing of an MCP server's
// resources as that server's tool `what`, under the mcp group's policy.
func mapMCPResource(what string) mapFunc {
	return func(in *input, o MapOptions) (Call, error) {
		server := in.str("server")
		if in.err != nil {
			return Call{}, in.err
		}
		if server == "" {
			server = "any"
		}
		if server == o.WardenServer {
			return Call{Pass: "a call to warden's own MCP server"}, nil
		}
		if !serverNameRe.MatchString(server) {
			return Call{}, fmt.Errorf("server %q is not an MCP server name", server)
		}
		return call("mcp__"+server+"__"+what, in.raw)
	}
}

func mapCodexPatch(in *input, _ MapOptions) (Call, error) {
	text := in.str("command")
	if text == "" {
		text = in.str("input")
	}
	if in.err != nil {
		return Call{}, in.err
	}
	if text == "" {
		return Call{}, errors.New("the patch is missing")
	}
	ops, err := parseCodexPatch(text)
	if err != nil {
		return Call{}, fmt.Errorf("the patch does not parse: %v", err)
	}
	for i := range ops {
		op := &ops[i]
		op.path = in.path(op.path, true)
		if op.to != "" {
			op.to = in.path(op.to, true)
		}
		if in.err != nil {
			return Call{}, in.err
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
