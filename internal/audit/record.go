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
	// Decision is allow, deny, approved, auto-approved, denied, timed_out,
	// cancelled or dry-run; Rule names the rule that decided.
	Decision  string  `json:"decision,omitempty"`
	Rule      string  `json:"rule,omitempty"`
	RequestID string  `json:"request_id,omitempty"`
	DecidedBy string  `json:"decided_by,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	Duration  float64 `json:"duration_ms,omitempty"`
	Success   bool    `json:"success"`
	Error     string  `json:"error,omitempty"`
	// Result is a short, sanitised excerpt of what the call returned.
	Result string `json:"execution_result,omitempty"`
	// Checkpoint is the id of the checkpoint taken before the call ran
	// (warden undo --to ID takes the call back); CheckpointNote says what
	// it did not record.
	Checkpoint     string `json:"checkpoint,omitempty"`
	CheckpointNote string `json:"checkpoint_note,omitempty"`
}

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
