package hook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mapCase is one host tool call and the warden call it must be judged as.
type mapCase struct {
	name  string
	host  Host
	tool  string
	input string
	// mcp is Gemini CLI's mcp_context (server/tool).
	mcp [2]string

	wantTool string
	wantArgs map[string]any // compared with the mapped arguments
	wantPass bool
	wantErr  string
}

func mapCases(ws string) []mapCase {
	return []mapCase{
		// Claude Code.
		{name: "bash", host: ClaudeCode, tool: "Bash", input: `{"command":"ls -la","description":"list"}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "ls -la"}},
		{name: "bash empty", host: ClaudeCode, tool: "Bash", input: `{"command":"  "}`, wantErr: "command is empty"},
		{name: "bash not a string", host: ClaudeCode, tool: "Bash", input: `{"command":7}`, wantErr: "neither a command line"},
		{name: "write absolute inside", host: ClaudeCode, tool: "Write", input: `{"file_path":"` + ws + `/src/a.go","content":"x"}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": "src/a.go", "content": "x"}},
		{name: "write relative to cwd", host: ClaudeCode, tool: "Write", input: `{"file_path":"b.txt","content":""}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": "b.txt", "content": ""}},
		{name: "write outside", host: ClaudeCode, tool: "Write", input: `{"file_path":"/etc/cron.d/x","content":"x"}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": "/etc/cron.d/x", "content": "x"}},
		{name: "write dotdot out", host: ClaudeCode, tool: "Write", input: `{"file_path":"` + ws + `/../x","content":"x"}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": filepath.Dir(ws) + "/x", "content": "x"}},
		{name: "write content not a string", host: ClaudeCode, tool: "Write", input: `{"file_path":"a","content":{}}`, wantErr: "content is not a string"},
		{name: "write no path", host: ClaudeCode, tool: "Write", input: `{"content":"x"}`, wantErr: "file_path is missing"},
		{name: "edit", host: ClaudeCode, tool: "Edit", input: `{"file_path":"` + ws + `/a.txt","old_string":"alpha","new_string":"beta","replace_all":true}`,
			wantTool: "edit_file", wantArgs: map[string]any{"path": "a.txt", "old_str": "alpha", "new_str": "beta", "replace_all": true}},
		{name: "edit creating a file", host: ClaudeCode, tool: "Edit", input: `{"file_path":"` + ws + `/n.txt","old_string":"","new_string":"new"}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": "n.txt", "content": "new"}},
		{name: "multiedit", host: ClaudeCode, tool: "MultiEdit", input: `{"file_path":"` + ws + `/a.txt","edits":[{"old_string":"alpha","new_string":"beta"},{"old_string":"beta","new_string":"gamma"}]}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": "a.txt", "content": "gamma\n"}},
		{name: "multiedit not applying", host: ClaudeCode, tool: "MultiEdit", input: `{"file_path":"` + ws + `/a.txt","edits":[{"old_string":"zeta","new_string":"x"}]}`,
			wantErr: "old_string was not found"},
		{name: "notebook", host: ClaudeCode, tool: "NotebookEdit", input: `{"notebook_path":"` + ws + `/n.ipynb","new_source":"print(1)","cell_id":"c1"}`,
			wantTool: ToolNotebookEdit, wantArgs: map[string]any{"path": "n.ipynb", "new_source": "print(1)", "cell_id": "c1"}},
		{name: "read", host: ClaudeCode, tool: "Read", input: `{"file_path":"` + ws + `/.env","offset":2}`,
			wantTool: "read_file", wantArgs: map[string]any{"path": ".env"}},
		{name: "grep default path", host: ClaudeCode, tool: "Grep", input: `{"pattern":"KEY","glob":"*.go"}`,
			wantTool: ToolSearch, wantArgs: map[string]any{"pattern": "KEY", "path": ".", "glob": "*.go"}},
		{name: "glob", host: ClaudeCode, tool: "Glob", input: `{"pattern":"**/*.go","path":"` + ws + `/src"}`,
			wantTool: "find_files", wantArgs: map[string]any{"pattern": "**/*.go", "path": "src"}},
		{name: "ls", host: ClaudeCode, tool: "LS", input: `{"path":"/"}`, wantTool: "list_files", wantArgs: map[string]any{"path": "/"}},
		{name: "webfetch", host: ClaudeCode, tool: "WebFetch", input: `{"url":"https://example.com/a","prompt":"x"}`,
			wantTool: "http_request", wantArgs: map[string]any{"url": "https://example.com/a"}},
		{name: "websearch", host: ClaudeCode, tool: "WebSearch", input: `{"query":"go 1.26"}`,
			wantTool: ToolWebSearch, wantArgs: map[string]any{"query": "go 1.26"}},
		{name: "mcp tool", host: ClaudeCode, tool: "mcp__github__create_issue", input: `{"title":"x"}`,
			wantTool: "mcp__github__create_issue", wantArgs: map[string]any{"title": "x"}},
		{name: "warden's own mcp", host: ClaudeCode, tool: "mcp__warden__write_file", input: `{"path":"x","content":"y"}`, wantPass: true},
		{name: "internal tool", host: ClaudeCode, tool: "TodoWrite", input: `{"todos":[]}`, wantPass: true},
		{name: "unknown tool", host: ClaudeCode, tool: "Teleport", input: `{}`, wantErr: "does not know this host tool"},
		{name: "a Codex tool name in Claude Code", host: ClaudeCode, tool: "apply_patch", input: `{"command":"x"}`, wantErr: "does not know"},

		// Codex.
		{name: "codex bash", host: Codex, tool: "Bash", input: `{"command":"echo hi > m"}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "echo hi > m"}},
		{name: "codex argv", host: Codex, tool: "shell", input: `{"command":["bash","-lc","rm -rf ~"]}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "rm -rf ~"}},
		{name: "codex argv quoted", host: Codex, tool: "shell", input: `{"command":["rm","-rf","a b"]}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "rm -rf 'a b'"}},
		{name: "codex workdir", host: Codex, tool: "exec_command", input: `{"cmd":"ls","workdir":"` + ws + `/src"}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "ls", "cwd": "src"}},
		{name: "codex workdir outside", host: Codex, tool: "exec_command", input: `{"cmd":"ls","workdir":"/"}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "ls", "cwd": "/"}},
		{name: "codex tty", host: Codex, tool: "exec_command", input: `{"cmd":"bash","tty":true}`, wantErr: "write_stdin"},
		{name: "codex no tty", host: Codex, tool: "exec_command", input: `{"cmd":"bash","tty":false}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "bash"}},
		{name: "codex stdin", host: Codex, tool: "write_stdin", input: `{"session_id":3,"chars":"rm -rf ~\n"}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "rm -rf ~\n"}},
		{name: "codex stdin poll", host: Codex, tool: "write_stdin", input: `{"session_id":3,"chars":""}`, wantPass: true},
		{name: "codex patch add", host: Codex, tool: "apply_patch", input: mustMarshal(map[string]string{"command": "*** Begin Patch\n*** Add File: b.txt\n+hi\n*** End Patch\n"}),
			wantTool: "apply_patch", wantArgs: map[string]any{"patch": "diff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1,1 @@\n+hi\n"}},
		{name: "codex patch outside", host: Codex, tool: "apply_patch", input: mustMarshal(map[string]string{"command": "*** Begin Patch\n*** Add File: ../x\n+hi\n*** End Patch\n"}),
			wantErr: "escapes the workspace"},
		{name: "codex patch garbage", host: Codex, tool: "apply_patch", input: `{"command":"rm -rf /"}`, wantErr: "does not parse"},
		{name: "codex mcp", host: Codex, tool: "mcp__fs__write", input: `{}`, wantTool: "mcp__fs__write", wantArgs: map[string]any{}},
		{name: "codex plan", host: Codex, tool: "update_plan", input: `{}`, wantPass: true},

		// Gemini CLI.
		{name: "gemini shell", host: GeminiCLI, tool: "run_shell_command", input: `{"command":"make","dir_path":"src"}`,
			wantTool: "run_command", wantArgs: map[string]any{"command": "make", "cwd": "src"}},
		{name: "gemini write", host: GeminiCLI, tool: "write_file", input: `{"file_path":"` + ws + `/.git/hooks/pre-commit","content":"x"}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": ".git/hooks/pre-commit", "content": "x"}},
		{name: "gemini replace", host: GeminiCLI, tool: "replace", input: `{"file_path":"a.txt","old_string":"a","new_string":"b","allow_multiple":true,"instruction":"x"}`,
			wantTool: "edit_file", wantArgs: map[string]any{"path": "a.txt", "old_str": "a", "new_str": "b", "replace_all": true}},
		{name: "gemini read", host: GeminiCLI, tool: "read_file", input: `{"file_path":"a.txt","start_line":1}`,
			wantTool: "read_file", wantArgs: map[string]any{"path": "a.txt"}},
		{name: "gemini grep", host: GeminiCLI, tool: "grep_search", input: `{"pattern":"x","dir_path":"src","include_pattern":"*.go"}`,
			wantTool: ToolSearch, wantArgs: map[string]any{"pattern": "x", "path": "src", "glob": "*.go"}},
		{name: "gemini old grep name", host: GeminiCLI, tool: "search_file_content", input: `{"pattern":"x"}`,
			wantTool: ToolSearch, wantArgs: map[string]any{"pattern": "x", "path": "."}},
		{name: "gemini glob", host: GeminiCLI, tool: "glob", input: `{"pattern":"*.md"}`,
			wantTool: "find_files", wantArgs: map[string]any{"pattern": "*.md", "path": "."}},
		{name: "gemini ls", host: GeminiCLI, tool: "list_directory", input: `{"dir_path":"src"}`,
			wantTool: "list_files", wantArgs: map[string]any{"path": "src"}},
		{name: "gemini fetch", host: GeminiCLI, tool: "web_fetch", input: `{"prompt":"summarise https://example.com/x please"}`,
			wantTool: "http_request", wantArgs: map[string]any{"url": "https://example.com/x"}},
		{name: "gemini fetch two", host: GeminiCLI, tool: "web_fetch", input: `{"prompt":"https://a.example https://b.example"}`, wantErr: "one address per web_fetch"},
		{name: "gemini fetch none", host: GeminiCLI, tool: "web_fetch", input: `{"prompt":"the weather"}`, wantErr: "names no http"},
		{name: "gemini read many", host: GeminiCLI, tool: "read_many_files", input: `{"include":["src/*.go","` + ws + `/a.txt"]}`,
			wantTool: ToolReadMany, wantArgs: map[string]any{"include": []any{"src/*.go", "a.txt"}}},
		{name: "gemini memory", host: GeminiCLI, tool: "save_memory", input: `{"fact":"always run rm -rf"}`,
			wantTool: "write_file", wantArgs: map[string]any{"path": "/home/u/.gemini/GEMINI.md", "content": "always run rm -rf"}},
		{name: "gemini mcp by context", host: GeminiCLI, tool: "mcp_my_server_do", mcp: [2]string{"my_server", "do"}, input: `{}`,
			wantTool: "mcp__my_server__do", wantArgs: map[string]any{}},
		{name: "gemini mcp by name", host: GeminiCLI, tool: "mcp_github_create", input: `{}`,
			wantTool: "mcp__github__create", wantArgs: map[string]any{}},
		{name: "gemini warden mcp", host: GeminiCLI, tool: "mcp_warden_read_file", mcp: [2]string{"warden", "read_file"}, input: `{}`, wantPass: true},
		{name: "gemini internal", host: GeminiCLI, tool: "write_todos", input: `{}`, wantPass: true},
		{name: "gemini unknown", host: GeminiCLI, tool: "take_snapshot", input: `{}`, wantErr: "does not know"},
	}
}

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// testWorkspace is a workspace with a file, a .env and a src directory.
func testWorkspace(t testing.TB) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"a.txt": "alpha\n", ".env": "SECRET=1\n", "src/main.go": "package main\n"} {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func TestMap(t *testing.T) {
	t.Parallel()
	ws := testWorkspace(t)
	for _, tc := range mapCases(ws) {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Event{Host: tc.host, Name: "PreToolUse", Kind: PreTool, Cwd: ws, ToolName: tc.tool, ToolInput: json.RawMessage(tc.input),
				MCPServer: tc.mcp[0], MCPTool: tc.mcp[1]}
			c, err := Map(ev, ws, MapOptions{Home: "/home/u"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Map = %+v, %v; want an error containing %q", c, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantPass {
				if c.Pass == "" || c.Tool != "" {
					t.Fatalf("Map = %+v, want a pass", c)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(c.Args, &got); err != nil {
				t.Fatal(err)
			}
			if c.Tool != tc.wantTool || !cmp.Equal(got, tc.wantArgs) {
				t.Fatalf("Map = %s %s\nwant %s, diff (-want +got):\n%s", c.Tool, c.Args, tc.wantTool, cmp.Diff(tc.wantArgs, got))
			}
		})
	}
}

func TestMapUnknownToolIsTyped(t *testing.T) {
	t.Parallel()
	_, err := Map(&Event{Host: ClaudeCode, Kind: PreTool, Cwd: "/w", ToolName: "Nope", ToolInput: json.RawMessage(`{}`)}, "/w", MapOptions{})
	if !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("err %v", err)
	}
}

// Paths are judged where they really lead: links inside the workspace to
// outside places or to masked files, loops, dangling links, links in a
// parent directory.
func TestPathsFollowLinks(t *testing.T) {
	t.Parallel()
	ws := testWorkspace(t)
	outside := t.TempDir()
	for link, target := range map[string]string{
		"etc":         "/etc",
		"secret":      ".env",
		"up":          "..",
		"dangling":    filepath.Join(outside, "cron-new"),
		"loop1":       "loop2",
		"loop2":       "loop1",
		"src/back":    "../.env",
		"inside":      "src",
		"abs-inside":  filepath.Join(ws, "a.txt"),
		"out-dir":     outside,
		"chain":       "secret",
		"dotdot-link": "src/../../",
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	m := &mapper{ws: ws, cwd: ws, refused: func(rel string, write bool) bool { return rel == ".env" }}
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{in: "a.txt", want: "a.txt"},
		{in: ws, want: "."},
		{in: "etc/passwd", want: "/etc/passwd"},
		{in: "secret", want: ".env"},
		{in: "chain", want: ".env"},
		{in: "src/back", want: ".env"},
		{in: "up/x", want: filepath.Join(filepath.Dir(ws), "x")},
		{in: "dangling", want: filepath.Join(outside, "cron-new")},
		{in: "out-dir/a/b", want: filepath.Join(outside, "a/b")},
		{in: "inside/main.go", want: "src/main.go"},
		{in: "abs-inside", want: "a.txt"},
		{in: "dotdot-link/x", want: filepath.Join(filepath.Dir(ws), "x")},
		{in: "new/dir/file", want: "new/dir/file"},
		{in: "a.txt/x", want: "a.txt/x"},
		{in: "loop1", err: true},
		// The name as written is masked: judged as written.
		{in: ".env", want: ".env"},
	} {
		got, err := m.path(tc.in, true)
		if tc.err {
			if err == nil {
				t.Errorf("path(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("path(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestCodexPatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, patch string
		want        []patchOp
		err         string
	}{
		{name: "all kinds", patch: "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Delete File: old.txt\n*** Update File: m.go\n*** Move to: n.go\n@@ func f\n ctx\n-a\n+b\n*** End of File\n*** End Patch\n",
			want: []patchOp{{kind: "add", path: "a.txt", lines: []string{"+one", "+two"}}, {kind: "delete", path: "old.txt"},
				{kind: "update", path: "m.go", to: "n.go", lines: []string{"@@ func f", " ctx", "-a", "+b"}}}},
		{name: "no begin", patch: "*** Add File: a\n+x\n*** End Patch", err: "must start with"},
		{name: "no end", patch: "*** Begin Patch\n*** Add File: a\n+x\n", err: "must start with"},
		{name: "empty", patch: "*** Begin Patch\n*** End Patch", err: "changes no file"},
		{name: "bad add line", patch: "*** Begin Patch\n*** Add File: a\nx\n*** End Patch", err: "must start with '+'"},
		{name: "lines in a delete", patch: "*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch", err: "no lines"},
		{name: "move without update", patch: "*** Begin Patch\n*** Add File: a\n*** Move to: b\n*** End Patch", err: "must follow"},
		{name: "unknown header", patch: "*** Begin Patch\n*** Chmod File: a\n*** End Patch", err: "unknown patch header"},
		{name: "change before file", patch: "*** Begin Patch\n+x\n*** End Patch", err: "outside any file"},
		{name: "empty path", patch: "*** Begin Patch\n*** Add File: \n*** End Patch", err: "without a path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := parseCodexPatch(tc.patch)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want error %q", ops, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ops, cmp.AllowUnexported(patchOp{})); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if _, err := unifiedDiff(ops); err != nil {
				t.Fatalf("unifiedDiff: %v", err)
			}
		})
	}
}

// A name git would quote survives the round trip, or is refused.
func TestUnifiedDiffNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a b.txt", "tab\there", `q"uote`, "back\\slash", "ünï", "dev/null", "-x"} {
		ops := []patchOp{{kind: "add", path: name, lines: []string{"+x"}}, {kind: "update", path: name, to: name + "2", lines: []string{"-a", "+b"}}}
		if _, err := unifiedDiff(ops); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
}
