package audit

import (
	"context"
	"encoding/json"
	"time"
)

// Record is one audited event: a tool call and how it was decided, an
// approval decision, an authentication failure, an agent stop. Arguments are
// sanitised before they reach a Record (see Sanitize).
type Record struct {
	Time      time.Time       `json:"time"`
	Event     string          `json:"event"` // tool_call | approval | auth_failure | stop | ...
	Session   string          `json:"session,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	Workspace string          `json:"workspace,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	// Decision is how the call or the request was decided (see Decision);
	// empty for events that decide nothing. Rule names the rule that
	// decided.
	Decision  Decision `json:"decision,omitempty"`
	Rule      string   `json:"rule,omitempty"`
	RequestID string   `json:"request_id,omitempty"`
	DecidedBy string   `json:"decided_by,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Duration  float64  `json:"duration_ms,omitempty"`
	Success   bool     `json:"success"`
	Error     string   `json:"error,omitempty"`
	// Result is a short, sanitised excerpt of what the call returned.
	Result string `json:"execution_result,omitempty"`
	// Checkpoint is the id of the checkpoint taken before the call ran
	// (warden undo --to ID takes the call back); CheckpointNote says what
	// it did not record.
	Checkpoint     string `json:"checkpoint,omitempty"`
	CheckpointNote string `json:"checkpoint_note,omitempty"`
}

// Decision is the outcome a Record reports. The values are a contract:
// the audit chain, the JSON-lines file, `warden audit` and the supervisor
// page's history filter all show them as written here.
type Decision string

// The decisions warden writes. Event "tool_call" rows carry any of them
// but none (and host-ask only on "host_tool_call" rows, which an agent
// host's hook writes like tool_call rows); "approval" rows (a request's outcome) carry approved,
// auto-approved, granted, denied, timed_out or cancelled; "auth_failure"
// rows carry deny. Rows of other events (approval_request,
// approval_collapsed, approval_executed, grant_created, grant_used,
// grant_revoked, grant_expired, llm_call, stop, undo, undo_resume,
// undo_rollback, sandbox_mask) carry none.
const (
	// DecisionAllow: the policy let the call run without asking.
	DecisionAllow Decision = "allow"
	// DecisionDeny: refused before anyone was asked — an unknown tool,
	// invalid arguments, a hard guard, a policy of deny — or, on an
	// auth_failure row, a refused credential or Telegram update.
	DecisionDeny Decision = "deny"
	// DecisionDryRun: --dry-run; the call was judged, nothing ran.
	DecisionDryRun Decision = "dry-run"
	// DecisionApproved: a supervisor approved (at the terminal, from the
	// CLI, the API, the page or Telegram), or on_timeout = "allow" did.
	DecisionApproved Decision = "approved"
	// DecisionAutoApproved: an auto_approve rule approved; nobody was asked.
	DecisionAutoApproved Decision = "auto-approved"
	// DecisionGranted: an active grant covered the exact call; nobody was
	// asked.
	DecisionGranted Decision = "granted"
	// DecisionDenied: a supervisor denied the request, or no channel could
	// reach one (decided_by "no-channel").
	DecisionDenied Decision = "denied"
	// DecisionTimedOut: nobody decided before the request expired.
	DecisionTimedOut Decision = "timed_out"
	// DecisionCancelled: the caller stopped waiting, or the process that
	// asked died and the request was swept at the next start.
	DecisionCancelled Decision = "cancelled"
	// DecisionAborted: the person at the prompt stopped the whole run.
	DecisionAborted Decision = "aborted"
	// DecisionError: the approval could not be obtained or did not match
	// the call, or the tool panicked; nothing ran, or its result is void.
	DecisionError Decision = "error"
	// DecisionPending: a person was asked and the caller stopped waiting
	// (an MCP call past mcp_wait_secs, a hook past wait_secs); nothing ran,
	// and the request stays pending for the same call made again.
	DecisionPending Decision = "pending"
	// DecisionHostAsk: a supervised call of an agent host was left to the
	// host's own prompt ([hooks] approval = "host").
	DecisionHostAsk Decision = "host-ask"
)

// Decisions lists every Decision warden writes.
var Decisions = []Decision{DecisionAllow, DecisionDeny, DecisionDryRun, DecisionApproved, DecisionAutoApproved,
	DecisionGranted, DecisionDenied, DecisionTimedOut, DecisionCancelled, DecisionAborted, DecisionError,
	DecisionPending, DecisionHostAsk}

// Sink receives audit records. Write must not keep rec after returning.
type Sink interface {
	Write(ctx context.Context, rec *Record) error
}

// Multi writes every record to each sink, returning the first error.
type Multi []Sink

// Write implements Sink.
func (m Multi) Write(ctx context.Context, rec *Record) error {
	var first error
	for _, s := range m {
		if err := s.Write(ctx, rec); err != nil && first == nil {
			first = err
		}
	}
	return first
}
