package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/wardenhq/warden/internal/engine"
)

// permissive allows every call it is asked about: under it, only the hook's
// own reading of the input can refuse.
type permissive struct{ ws string }

func (p permissive) Workspace() string             { return p.ws }
func (permissive) Refused(string, bool) bool       { return false }
func (p permissive) Decider(Call) (Decider, error) { return p, nil }
func (permissive) Close() error                    { return nil }
func (permissive) HostResult(context.Context, string, json.RawMessage, engine.AdmitOptions, bool, string) {
}
func (permissive) Admit(context.Context, string, json.RawMessage, engine.AdmitOptions) engine.Admission {
	return engine.Admission{Verdict: engine.Allow, Message: "allowed"}
}

// FuzzDecide feeds arbitrary hook input to every host's reader: it never
// panics, answers in the host's format, and never lets through a tool call
// it could not read.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{
		`{"hook_event_name":"PreToolUse","session_id":"s","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		`{"hook_event_name":"BeforeTool","session_id":"s","cwd":"/w","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`,
		`{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"}}`,
		`{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Write","tool_input":{"file_path":"/w/../etc/x","content":"x"}}`,
		`{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"MultiEdit","tool_input":{"file_path":"a","edits":[{"old_string":"","new_string":"x"}]}}`,
		`{"hook_event_name":"PostToolUse","cwd":"/w","tool_name":"Bash","tool_input":{},"tool_response":{"error":"x"}}`,
		`{"hook_event_name":"BeforeTool","cwd":"/w","tool_name":"mcp_a_b","tool_input":{},"mcp_context":{"server_name":"a","tool_name":"b"}}`,
		`{"hook_event_name":"Stop"}`,
		`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"x"}`,
		`{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash","tool_input":{"command":["bash","-lc","x"]}} trailing`,
		"\xff\xfe",
		``,
	} {
		f.Add(s)
	}
	ws := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("deciding %q took %s", in, d)
			}
		}()
		for _, h := range Hosts {
			o := Options{Host: h, Open: func(context.Context, *Event) (Session, error) { return permissive{ws}, nil }}
			a := Decide(context.Background(), strings.NewReader(in), o)
			ev, perr := Parse(h, []byte(in))
			if perr != nil && ev.Kind == PreTool || perr != nil && ev.Name == "" {
				if a.Exit != 2 && !bytes.Contains(a.Stdout, []byte(`deny`)) {
					t.Fatalf("%s: unreadable input %q answered %q exit %d", h, in, a.Stdout, a.Exit)
				}
			}
			if a.Exit == 2 && a.Stderr == "" {
				t.Fatalf("%s: exit 2 without a reason", h)
			}
			if len(a.Stdout) > 0 && !json.Valid(a.Stdout) {
				t.Fatalf("%s: answer is not JSON: %q", h, a.Stdout)
			}
			if h != ClaudeCode && (bytes.Contains(a.Stdout, []byte(`"allow"`)) || bytes.Contains(a.Stdout, []byte(`"ask"`))) {
				t.Fatalf("%s fails open on this answer: %q", h, a.Stdout)
			}
		}
	})
}

// FuzzCodexPatch: the patch reader never panics, and a diff it writes
// reads back, through the same parser as apply_patch's guard, with the
// names of the files the patch changes.
func FuzzCodexPatch(f *testing.F) {
	for _, s := range []string{
		"*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: a b\n*** Move to: c\n@@\n-a\n+b\n*** End of File\n*** End Patch",
		"*** Begin Patch\n*** Delete File: \"q\"\n*** End Patch",
		"*** Begin Patch\n*** Add File: a\n+--- b/x\n+@@ -1 +1 @@\n*** End Patch",
		"*** Begin Patch\n*** Update File: x\n diff --git a/y b/y\n*** End Patch",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ops, err := parseCodexPatch(in)
		if err != nil {
			return
		}
		diff, err := unifiedDiff(ops)
		if err != nil {
			return
		}
		files, _, err := gitdiff.Parse(strings.NewReader(diff))
		if err != nil || len(files) != len(ops) {
			t.Fatalf("diff does not read back: %v\n%s", err, diff)
		}
		for i, op := range ops {
			name := files[i].NewName
			if op.kind == "delete" {
				name = files[i].OldName
			}
			want := op.path
			if op.to != "" {
				want = op.to
			}
			if name != want {
				t.Fatalf("file %d: judged as %q, the patch changes %q\n%s", i, name, want, diff)
			}
		}
	})
}
