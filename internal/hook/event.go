package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Host is an agent host whose hook warden answers.
type Host string

// The hosts.
const (
	ClaudeCode Host = "claude-code"
	Codex      Host = "codex"
	GeminiCLI  Host = "gemini-cli"
)

// Hosts lists the hosts in the order the CLI documents them.
var Hosts = []Host{ClaudeCode, Codex, GeminiCLI}

// ParseHost returns the host called name.
func ParseHost(name string) (Host, error) {
	for _, h := range Hosts {
		if string(h) == name {
			return h, nil
		}
	}
	return "", fmt.Errorf("unknown agent host %q (want claude-code, codex or gemini-cli)", name)
}

// Kind is what an event asks of warden.
type Kind int

const (
	// Other events (session start, prompt submitted, stop, ...) are not
	// judged: they pass.
	Other Kind = iota
	// PreTool asks whether a tool call may run.
	PreTool
	// PostTool reports a tool call that ran.
	PostTool
)

// MaxEventBytes bounds the hook input read: a tool call that writes a
// large file carries its content.
const MaxEventBytes = 16 << 20

// Event is one hook event, in any host's dialect.
type Event struct {
	Host Host
	// Name is hook_event_name as the host sent it.
	Name      string
	Kind      Kind
	Session   string
	Cwd       string
	ToolName  string
	ToolInput json.RawMessage // a JSON object
	ToolUseID string
	// ToolResponse is the host's result of the call (PostTool).
	ToolResponse json.RawMessage
	// MCPServer and MCPTool name an MCP call where the host says them
	// apart (Gemini CLI's mcp_context).
	MCPServer, MCPTool string
}

// ErrMalformed is what a hook input that cannot be judged wraps.
var ErrMalformed = errors.New("malformed hook input")

// eventJSON is the union of the hosts' hook inputs.
type eventJSON struct {
	HookEventName string          `json:"hook_event_name"`
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
	ToolResponse  json.RawMessage `json:"tool_response"`
	MCPContext    *struct {
		ServerName string `json:"server_name"`
		ToolName   string `json:"tool_name"`
	} `json:"mcp_context"`
}

// Parse reads one hook event of host h. An input that is not a JSON object,
// or a tool event without a tool name, a tool input object or a usable
// working directory, is an error wrapping ErrMalformed; the event's Kind is
// still set when it could be read, so that the caller answers a tool call
// with a refusal and lets other events pass.
func Parse(h Host, data []byte) (*Event, error) {
	ev := &Event{Host: h}
	if len(data) > MaxEventBytes {
		return ev, fmt.Errorf("%w: %d bytes, more than the %d warden reads", ErrMalformed, len(data), MaxEventBytes)
	}
	if !utf8.Valid(data) {
		return ev, fmt.Errorf("%w: not UTF-8", ErrMalformed)
	}
	var raw eventJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return ev, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return ev, fmt.Errorf("%w: data after the event", ErrMalformed)
	}
	ev.Name = raw.HookEventName
	ev.Kind = kindOf(h, raw.HookEventName)
	ev.Session, ev.Cwd, ev.ToolName, ev.ToolUseID = raw.SessionID, raw.Cwd, raw.ToolName, raw.ToolUseID
	ev.ToolInput, ev.ToolResponse = raw.ToolInput, raw.ToolResponse
	if raw.MCPContext != nil {
		ev.MCPServer, ev.MCPTool = raw.MCPContext.ServerName, raw.MCPContext.ToolName
	}
	switch {
	case ev.Name == "":
		return ev, fmt.Errorf("%w: no hook_event_name", ErrMalformed)
	case ev.Kind == Other:
		return ev, nil
	case strings.TrimSpace(ev.ToolName) == "":
		return ev, fmt.Errorf("%w: %s without a tool_name", ErrMalformed, ev.Name)
	case !isObject(ev.ToolInput):
		return ev, fmt.Errorf("%w: the tool_input of %s is not a JSON object", ErrMalformed, ev.ToolName)
	case !strings.HasPrefix(ev.Cwd, "/") || strings.IndexByte(ev.Cwd, 0) >= 0:
		return ev, fmt.Errorf("%w: cwd %q is not an absolute path", ErrMalformed, ev.Cwd)
	}
	return ev, nil
}

// kindOf maps each host's event names.
func kindOf(h Host, name string) Kind {
	switch h {
	case GeminiCLI:
		switch name {
		case "BeforeTool":
			return PreTool
		case "AfterTool":
			return PostTool
		}
	default: // Claude Code, and Codex which speaks its format
		switch name {
		case "PreToolUse":
			return PreTool
		case "PostToolUse":
			return PostTool
		}
	}
	return Other
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) >= 2 && t[0] == '{' && json.Valid(t)
}
