package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/engine"
)

// Decider decides and records host calls; *engine.Engine is one.
type Decider interface {
	Admit(ctx context.Context, name string, args json.RawMessage, o engine.AdmitOptions) engine.Admission
	HostResult(ctx context.Context, name string, args json.RawMessage, o engine.AdmitOptions, success bool, result string)
}

// Session is what one hook event is decided with: the workspace and an
// engine for the host's session, made by the caller (configuration, store,
// approval flow) once the event says which session and directory it is.
type Session interface {
	// Workspace is the workspace's absolute path, symbolic links resolved.
	Workspace() string
	// Refused reports whether a workspace-relative name is masked (or, for
	// a write, protected) as written.
	Refused(rel string, write bool) bool
	// Decider returns the engine that decides call; its registry holds
	// HostTools(the call's MCP tool name, if any).
	Decider(call Call) (Decider, error)
	Close() error
}

// Options configure Run.
type Options struct {
	Host Host
	// Open makes the session for an event.
	Open func(ctx context.Context, ev *Event) (Session, error)
	// HostAsks leaves a supervised call to the host's own prompt ([hooks]
	// approval = "host"); only Claude Code has one that holds.
	HostAsks bool
	// Wait is how long a supervised call waits for a person ([hooks]
	// wait_secs); past it the call is denied with the request id and the
	// request stays pending. 0 asks and answers at once.
	Wait time.Duration
	// Map tunes the mapping of host calls.
	Map MapOptions
}

// Run answers one hook event read from in, writing the answer to out (and
// a refusal's reason to errOut where the host reads it there), and returns
// the exit status the process must end with.
func Run(ctx context.Context, in io.Reader, out, errOut io.Writer, o Options) int {
	a := Decide(ctx, in, o)
	if len(a.Stdout) > 0 {
		out.Write(a.Stdout)
	}
	if a.Stderr != "" {
		io.WriteString(errOut, a.Stderr)
	}
	return a.Exit
}

// Decide reads one hook event from in and returns the answer.
func Decide(ctx context.Context, in io.Reader, o Options) Answer {
	data, err := io.ReadAll(io.LimitReader(in, MaxEventBytes+1))
	if err != nil {
		return answer(o.Host, nil, Deny, "warden: cannot read the hook input: "+err.Error())
	}
	ev, err := Parse(o.Host, data)
	switch {
	case err != nil && ev.Kind == PreTool:
		return answer(o.Host, ev, Deny, "warden: "+err.Error()+"; warden refuses a tool call it cannot read.")
	case err != nil && ev.Name == "":
		return answer(o.Host, nil, Deny, "warden: "+err.Error()+"; warden refuses a hook event it cannot read.")
	case err != nil || ev.Kind == Other:
		return answer(o.Host, ev, Pass, "")
	}
	s, err := o.Open(ctx, ev)
	if err != nil {
		if ev.Kind == PostTool {
			return answer(o.Host, ev, Pass, "")
		}
		return answer(o.Host, ev, Deny, "warden: cannot decide this call: "+oneLine(err.Error()))
	}
	defer s.Close()
	if st, ok := s.(Settings); ok {
		o.HostAsks, o.Wait = st.HookSettings()
	}
	mo := o.Map
	mo.Refused = s.Refused
	c, mapErr := Map(ev, s.Workspace(), mo)
	ao := engine.AdmitOptions{Host: string(o.Host), HostTool: ev.ToolName, ToolUseID: ev.ToolUseID, HostAsks: o.HostAsks && o.Host == ClaudeCode, MaxWait: o.Wait}
	if ao.MaxWait <= 0 {
		ao.MaxWait = time.Millisecond // ask, and answer with the request id at once
	}
	if ev.Kind == PostTool {
		if mapErr == nil && c.Pass == "" {
			if d, err := s.Decider(c); err == nil {
				d.HostResult(ctx, c.Tool, c.Args, ao, succeeded(ev.ToolResponse), string(ev.ToolResponse))
			}
		}
		return answer(o.Host, ev, Pass, "")
	}
	switch {
	case mapErr != nil:
		return answer(o.Host, ev, Deny, "warden: "+oneLine(mapErr.Error()))
	case c.Pass != "":
		return answer(o.Host, ev, Pass, "")
	}
	d, err := s.Decider(c)
	if err != nil {
		return answer(o.Host, ev, Deny, "warden: cannot decide this call: "+oneLine(err.Error()))
	}
	adm := d.Admit(ctx, c.Tool, c.Args, ao)
	switch adm.Verdict {
	case engine.Allow:
		return answer(o.Host, ev, Allow, "warden: "+adm.Message)
	case engine.Ask:
		return answer(o.Host, ev, Ask, "warden: "+adm.Message)
	}
	return answer(o.Host, ev, Deny, "warden: "+adm.Message)
}

// succeeded reads a host's tool response for an error: an "error" field,
// "is_error": true or "success": false. Anything else, a plain string
// included, counts as success.
func succeeded(resp json.RawMessage) bool {
	var m map[string]any
	if json.Unmarshal(resp, &m) != nil {
		return true
	}
	if e, ok := m["error"]; ok && e != nil && e != "" {
		return false
	}
	if b, ok := m["is_error"].(bool); ok && b {
		return false
	}
	if b, ok := m["success"].(bool); ok && !b {
		return false
	}
	return true
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ErrNoSession is what Open returns when the event gives nothing to open
// a session on.
var ErrNoSession = errors.New("no session")

// WorkspaceFor is the workspace of an event: dir when set (--workspace or
// the config's workspace.root), else the host's project directory when it
// says one (CLAUDE_PROJECT_DIR, GEMINI_PROJECT_DIR) , else the event's
// working directory.
func WorkspaceFor(ev *Event, dir string, getenv func(string) string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	for _, k := range []string{"CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"} {
		if v := getenv(k); strings.HasPrefix(v, "/") {
			return v, nil
		}
	}
	if ev.Cwd == "" {
		return "", fmt.Errorf("%w: the event has no cwd and no workspace was given", ErrNoSession)
	}
	return ev.Cwd, nil
}
