package hook

import (
	"encoding/json"
)

// Verdict is what warden answers a host about one event.
type Verdict int

const (
	// Pass: warden does not judge the event; the host goes on as if no hook ran.
	Pass Verdict = iota
	// Allow: the call may run.
	Allow
	// Deny: the call must not run; the reason reaches the model.
	Deny
	// Ask: the host's own prompt decides (Claude Code only).
	Ask
)

func (v Verdict) String() string {
	return [...]string{"pass", "allow", "deny", "ask"}[v]
}

// Answer is what the hook process writes and how it exits.
type Answer struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// answer writes v in the host's dialect. Where a host fails open on an
// answer, that answer is never written: Codex runs a call answered "allow"
// or "ask" without any check, so warden allows there by silence and never
// asks; Gemini CLI ignores Claude Code's format and hangs on "ask" under
// --yolo, so it gets its own format, and never "ask". An event of unknown
// kind whose input did not parse (unknown: it may be a tool call) is
// refused with exit status 2, which every host reads as "block", with the
// reason on stderr.
func answer(h Host, ev *Event, v Verdict, reason string) Answer {
	if ev == nil || ev.Name == "" {
		if v == Deny {
			return Answer{Stderr: reason + "\n", Exit: 2}
		}
		return passAnswer(h)
	}
	if ev.Kind != PreTool {
		return passAnswer(h)
	}
	switch h {
	case ClaudeCode:
		if v == Pass {
			return Answer{}
		}
		decision := map[Verdict]string{Allow: "allow", Deny: "deny", Ask: "ask"}[v]
		return jsonAnswer(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": ev.Name, "permissionDecision": decision, "permissionDecisionReason": reason,
		}})
	case Codex:
		if v != Deny { // allow and ask fail open in Codex: allow by silence
			return Answer{}
		}
		return jsonAnswer(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": ev.Name, "permissionDecision": "deny", "permissionDecisionReason": reason,
		}})
	case GeminiCLI:
		if v != Deny { // ask hangs under --yolo: never asked
			return passAnswer(h)
		}
		return jsonAnswer(map[string]any{"decision": "deny", "reason": reason})
	}
	return Answer{Stderr: "unknown host\n", Exit: 2}
}

func passAnswer(h Host) Answer {
	if h == GeminiCLI {
		return Answer{Stdout: []byte("{}\n")}
	}
	return Answer{}
}

func jsonAnswer(v any) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{Stderr: "warden: cannot encode the answer\n", Exit: 2}
	}
	return Answer{Stdout: append(b, '\n')}
}
