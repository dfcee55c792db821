package approval

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wardenhq/warden/internal/store"
)

// Request is a supervised tool call waiting for a person's decision. What
// runs after approval is exactly Tool with Args: the decision is bound to them.
type Request struct {
	Tool      string
	Args      json.RawMessage // canonical JSON
	Workspace string
	Session   string
	Agent     string
	// Rule is the policy rule that made the call supervised.
	Rule string
	// Risk is a human summary: a command's parse and class, an edit's diff.
	Risk string
	// Targets are the places the call changes, resolved in the workspace
	// when it was asked (Path as the call names it, Real where the change
	// lands). They are part of the binding: the decision holds for those
	// places only, and the call refuses to run if a path leads elsewhere
	// by then.
	Targets []Target
	// MaxWait, when positive, lets the request outlive its caller: Ask
	// waits at most this long, then returns a *PendingError while the
	// request stays PENDING (owned by no process) until a person decides it
	// or it expires; the caller's context ending does not cancel it either.
	// An identical later Ask (same binding hash) takes it up: it waits on
	// it again, runs it once if it was approved meanwhile, or gets the
	// denial and its reason. Zero: Ask waits for the decision or the
	// timeout, and the caller's end cancels the request.
	MaxWait time.Duration
}

// Target is a file a call changes: the path its arguments name and the
// real workspace-relative location the change lands at. They differ when a
// directory on the way is a symbolic link.
type Target struct {
	Path string `json:"path"`
	Real string `json:"real"`
}

// Outcome is how a request was decided.
type Outcome struct {
	ID       string
	Approved bool
	Auto     bool   // approved by an auto-approve rule, no person asked
	Grant    string // approved by this grant (decision "granted"), no person asked
	By       string // supervisor id, "auto:<rule>" or "timeout"
	Reason   string
	State    store.State // store.Approved, Denied, TimedOut or Cancelled
	// Args are the stored, approved arguments (canonical JSON): when
	// Approved, the caller runs Tool with exactly these, not with what it
	// asked with. ArgsHash is their SHA-256, bound to the request.
	Args     json.RawMessage
	ArgsHash string
}

// ErrNoChannel means no channel can reach a person to decide a request.
var ErrNoChannel = errors.New("no approval channel can reach a supervisor")

// Approver decides supervised calls. Ask blocks until a decision, a timeout
// or ctx's end (which cancels the request). Executed records the result of an
// approved call, once.
type Approver interface {
	Ask(ctx context.Context, req *Request) (Outcome, error)
	Executed(ctx context.Context, id string, success bool, result string) error
}
