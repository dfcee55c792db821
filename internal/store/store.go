package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

// State is where an approval request is in its lifecycle:
// PENDING → APPROVED → EXECUTED, or PENDING → DENIED | TIMED_OUT | CANCELLED.
type State string

// The states of an approval request.
const (
	Pending   State = "PENDING"
	Approved  State = "APPROVED"
	Executed  State = "EXECUTED"
	Denied    State = "DENIED"
	TimedOut  State = "TIMED_OUT"
	Cancelled State = "CANCELLED"
)

// ParseState returns the State named s (case-insensitive), or an error.
func ParseState(s string) (State, error) {
	for _, st := range []State{Pending, Approved, Executed, Denied, TimedOut, Cancelled} {
		if strings.EqualFold(string(st), s) {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown approval state %q (want pending, approved, executed, denied, timed_out or cancelled)", s)
}

// Owner identifies the process that asked and waits for a request.
type Owner struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Start is the process start time in clock ticks after boot
	// (/proc/PID/stat field 22): with PID it tells a reused pid apart.
	Start int64 `json:"start"`
	// Lease is the id of the lease the process renews while it waits
	// (AcquireLease). A request whose caller's lease expired is never
	// decided, claimed or executed: SweepOrphans cancels it. Without a
	// lease, the process is judged by host, pid and start time.
	Lease string `json:"lease,omitempty"`
}

// Approval is one approval request as stored. JSON names follow the audit
// fields of the approval flow (request_id, session_id, decided_by, …).
type Approval struct {
	ID              string          `json:"request_id"`
	Tool            string          `json:"tool"`
	Args            json.RawMessage `json:"arguments"`
	ArgsHash        string          `json:"args_hash"`
	Workspace       string          `json:"workspace,omitempty"`
	Session         string          `json:"session_id,omitempty"`
	Agent           string          `json:"agent,omitempty"`
	Rule            string          `json:"rule,omitempty"`
	Risk            string          `json:"risk,omitempty"`
	State           State           `json:"state"`
	Decision        string          `json:"decision,omitempty"`
	DecidedBy       string          `json:"decided_by,omitempty"`
	DecidedAt       time.Time       `json:"decided_at,omitzero"`
	Reason          string          `json:"reason,omitempty"`
	ExecutionResult string          `json:"execution_result,omitempty"`
	// Claimed is set when the approved request was handed to its executor.
	Claimed   bool      `json:"claimed"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Owner     Owner     `json:"owner"`
	// Seq orders changes: every insert or update takes the next value.
	Seq int64 `json:"seq"`
}

// Transition is a decision or resolution applied to a PENDING request.
type Transition struct {
	To State // Approved, Denied, TimedOut or Cancelled
	// Decision is the audit label: approved, auto-approved, denied,
	// timed_out, cancelled.
	Decision string
	By       string
	Reason   string
}

// Filter selects approval requests for List.
type Filter struct {
	State State // "" for every state
	// ArgsHash selects the requests for one exact call (its binding
	// hash); "" for every call.
	ArgsHash string
	Limit    int // 0 for no limit
}

// AuditRow is one row of the audit chain.
type AuditRow struct {
	ID       int64        `json:"id"`
	Time     time.Time    `json:"time"`
	Record   audit.Record `json:"record"`
	PrevHash string       `json:"prev_hash"`
	Hash     string       `json:"hash"`
}

// AuditFilter selects audit rows.
type AuditFilter struct {
	Event string // "" for every event
	After int64  // rows with id > After
	Last  int    // only the last N rows (still returned oldest first); 0 for all
}

// Store is the shared state of the approval flow. Every method is safe for
// concurrent use by several goroutines and several processes.
type Store interface {
	// Create inserts a new request and appends rec (if not nil) to the
	// audit chain in the same transaction. a.Seq is set.
	Create(ctx context.Context, a *Approval, rec *audit.Record) error
	// Get returns the request id, or ErrNotFound.
	Get(ctx context.Context, id string) (*Approval, error)
	// List returns requests, newest first.
	List(ctx context.Context, f Filter) ([]*Approval, error)
	// Changes returns requests changed after seq, in change order.
	Changes(ctx context.Context, after int64, limit int) ([]*Approval, error)
	// ChangeHead is the latest change sequence (0 when empty).
	ChangeHead(ctx context.Context) (int64, error)

	// Decide applies a supervisor's decision: it succeeds only if the
	// request is PENDING and not expired at the store's now. Otherwise it
	// returns ErrNotFound, ErrExpired or a *ConflictError.
	Decide(ctx context.Context, id string, t Transition, rec *audit.Record) (*Approval, error)
	// Resolve ends a PENDING request whatever its expiry (timeout, cancel).
	Resolve(ctx context.Context, id string, t Transition, rec *audit.Record) (*Approval, error)
	// Claim hands an APPROVED request to its executor, once: a second
	// Claim returns a *ConflictError.
	Claim(ctx context.Context, id string) (*Approval, error)
	// MarkExecuted moves a claimed APPROVED request to EXECUTED, once.
	MarkExecuted(ctx context.Context, id, result string, rec *audit.Record) (*Approval, error)
	// SetOwner hands request id from owner from to owner to, if from still
	// owns it, whatever its state; ok reports whether it did. A caller that
	// stops waiting gives its request to Unowned, and one that takes up such
	// a request takes it back (approval.Request.MaxWait).
	SetOwner(ctx context.Context, id string, from, to Owner) (ok bool, err error)
	// SweepOrphans cancels requests whose owner is gone (alive reports
	// false): PENDING ones, and APPROVED ones never claimed. Requests owned
	// by Unowned are never swept. Each gets an audit row. It returns the
	// requests it cancelled.
	SweepOrphans(ctx context.Context, alive func(Owner) bool) ([]*Approval, error)

	// AppendAudit appends rec to the audit chain.
	AppendAudit(ctx context.Context, rec *audit.Record) (*AuditRow, error)
	// Audit returns audit rows, oldest first.
	Audit(ctx context.Context, f AuditFilter) ([]*AuditRow, error)
	// VerifyAudit walks the chain and returns the number of rows and the
	// head hash, or a *ChainError naming the first broken row.
	VerifyAudit(ctx context.Context) (rows int64, head string, err error)

	Grants
	Leases

	// Watch returns a channel that receives a value soon after request id
	// changes (id "" for any change to requests or grants), made by this
	// process or any other sharing the database, and a func that stops
	// the watch. Values are coalesced and best effort: a watcher re-reads
	// what it waits for after each value, and now and then anyway.
	Watch(id string) (<-chan struct{}, func())

	Close() error
}

// ErrNotFound means no request has that id.
var ErrNotFound = errors.New("no such approval request")

// ErrExpired means a decision came after the request's expiry.
var ErrExpired = errors.New("approval request expired before the decision")

// ErrConflict is what a *ConflictError matches with errors.Is.
var ErrConflict = errors.New("approval request is not in a state that allows this")

// ConflictError is a transition refused because the request had already
// moved on (decided, timed out, cancelled, claimed, executed).
type ConflictError struct {
	ID    string
	Op    string // decide, resolve, claim, execute
	State State
	By    string // who decided it, when known
}

func (e *ConflictError) Error() string {
	msg := fmt.Sprintf("cannot %s approval request %s: it is already %s", e.Op, e.ID, e.State)
	if e.By != "" {
		msg += " (by " + e.By + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ChainError names the first audit row whose hash does not verify.
type ChainError struct {
	Row int64
	Why string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit chain broken at row %d: %s", e.Row, e.Why)
}
