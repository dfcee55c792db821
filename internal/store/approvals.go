package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

const approvalCols = `request_id, tool, arguments, args_hash, workspace, session_id, agent, rule, risk,
	state, decision, decided_by, decided_at, reason, execution_result, claimed, created_at, expires_at,
	owner_host, owner_pid, owner_start, owner_lease, seq`

// nextSeq is the next change sequence. Writers are serialised (SQLite's one
// writer; PostgreSQL's writers' lock), so MAX+1 is unique and sequences
// grow in commit order: a reader of Changes never skips a change that
// commits later with a smaller sequence.
const nextSeq = `(SELECT COALESCE(MAX(seq), 0) + 1 FROM approvals)`

// leaseLive is true for a request whose waiting process still holds its
// lease (or that names none: the pid check of SweepOrphans applies). Its
// one parameter is the store's now.
const leaseLive = `(owner_lease = '' OR EXISTS (SELECT 1 FROM leases l WHERE l.lease_id = approvals.owner_lease AND l.expires_at > ?))`

type scanner interface{ Scan(dest ...any) error }

func scanApproval(r scanner) (*Approval, error) {
	var a Approval
	var args, state string
	var decidedAt, created, expires int64
	var claimed int
	err := r.Scan(&a.ID, &a.Tool, &args, &a.ArgsHash, &a.Workspace, &a.Session, &a.Agent, &a.Rule, &a.Risk,
		&state, &a.Decision, &a.DecidedBy, &decidedAt, &a.Reason, &a.ExecutionResult, &claimed, &created, &expires,
		&a.Owner.Host, &a.Owner.PID, &a.Owner.Start, &a.Owner.Lease, &a.Seq)
	if err != nil {
		return nil, err
	}
	a.Args = json.RawMessage(args)
	a.State = State(state)
	a.Claimed = claimed != 0
	a.CreatedAt = time.UnixMilli(created).UTC()
	a.ExpiresAt = time.UnixMilli(expires).UTC()
	if decidedAt != 0 {
		a.DecidedAt = time.UnixMilli(decidedAt).UTC()
	}
	return &a, nil
}

func (s *DB) getApproval(ctx context.Context, q execer, id string) (*Approval, error) {
	a, err := scanApproval(s.queryRow(ctx, q, "SELECT "+approvalCols+" FROM approvals WHERE request_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("approval request %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read approval request %s: %w", id, err)
	}
	return a, nil
}

// Create implements Store.
func (s *DB) Create(ctx context.Context, a *Approval, rec *audit.Record) error {
	if a.ID == "" || a.Tool == "" || len(a.Args) == 0 {
		return errors.New("failed to create approval request: id, tool and arguments are required")
	}
	return s.inTx(ctx, "create approval request "+a.ID, func(ctx context.Context, tx *sql.Tx) error {
		return s.createIn(ctx, tx, a, rec)
	})
}

func (s *DB) createIn(ctx context.Context, tx *sql.Tx, a *Approval, rec *audit.Record) error {
	claimed := 0
	if a.Claimed {
		claimed = 1
	}
	var decidedAt int64
	if !a.DecidedAt.IsZero() {
		decidedAt = a.DecidedAt.UnixMilli()
	}
	err := s.queryRow(ctx, tx, `INSERT INTO approvals (`+approvalCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, `+nextSeq+`) RETURNING seq`,
		a.ID, a.Tool, string(a.Args), a.ArgsHash, a.Workspace, a.Session, a.Agent, a.Rule, a.Risk,
		string(a.State), a.Decision, a.DecidedBy, decidedAt, a.Reason, a.ExecutionResult, claimed,
		a.CreatedAt.UnixMilli(), a.ExpiresAt.UnixMilli(), a.Owner.Host, a.Owner.PID, a.Owner.Start, a.Owner.Lease).Scan(&a.Seq)
	if err != nil {
		return err
	}
	return s.appendIn(ctx, tx, a.ID, rec)
}

// Get implements Store.
func (s *DB) Get(ctx context.Context, id string) (*Approval, error) {
	return s.getApproval(ctx, s.db, id)
}

// List implements Store.
func (s *DB) List(ctx context.Context, f Filter) ([]*Approval, error) {
	q := "SELECT " + approvalCols + " FROM approvals"
	var (
		args  []any
		where []string
	)
	if f.State != "" {
		where = append(where, "state = ?")
		args = append(args, string(f.State))
	}
	if f.ArgsHash != "" {
		where = append(where, "args_hash = ?")
		args = append(args, f.ArgsHash)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, seq DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return s.queryApprovals(ctx, q, args...)
}

// Changes implements Store.
func (s *DB) Changes(ctx context.Context, after int64, limit int) ([]*Approval, error) {
	if limit <= 0 {
		limit = 1000
	}
	return s.queryApprovals(ctx, "SELECT "+approvalCols+" FROM approvals WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
}

// ChangeHead implements Store.
func (s *DB) ChangeHead(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM approvals").Scan(&seq); err != nil {
		return 0, fmt.Errorf("failed to read the change head: %w", err)
	}
	return seq, nil
}

func (s *DB) queryApprovals(ctx context.Context, q string, args ...any) ([]*Approval, error) {
	rows, err := s.query(ctx, s.db, q, args...)
	if err != nil {
		return nil, fmt.Errorf("failed to list approval requests: %w", err)
	}
	defer rows.Close()
	var out []*Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("failed to read approval request: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("failed to list approval requests: %w", err)
	}
	return out, nil
}

// Decide implements Store.
func (s *DB) Decide(ctx context.Context, id string, t Transition, rec *audit.Record) (*Approval, error) {
	if t.To != Approved && t.To != Denied {
		return nil, fmt.Errorf("failed to decide approval request %s: a decision approves or denies, not %s", id, t.To)
	}
	return s.transition(ctx, id, "decide", t, true, rec)
}

// Resolve implements Store.
func (s *DB) Resolve(ctx context.Context, id string, t Transition, rec *audit.Record) (*Approval, error) {
	switch t.To {
	case Approved, TimedOut, Cancelled, Denied:
	default:
		return nil, fmt.Errorf("failed to resolve approval request %s: cannot move it to %s", id, t.To)
	}
	return s.transition(ctx, id, "resolve", t, false, rec)
}

func (s *DB) transition(ctx context.Context, id, op string, t Transition, live bool, rec *audit.Record) (*Approval, error) {
	var out *Approval
	err := s.inTxOpts(ctx, op+" approval request "+id, txOpts{cleanRefusals: true}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.decideIn(ctx, tx, id, op, t, live, rec)
		return err
	})
	return out, err
}

// decideIn moves PENDING request id to t.To and appends rec, in tx. A live
// decision (a supervisor's) also needs the request unexpired and its
// caller's lease unexpired, both at the store's now; a request whose caller
// is gone is cancelled instead (committed) and the decision refused.
func (s *DB) decideIn(ctx context.Context, tx *sql.Tx, id, op string, t Transition, live bool, rec *audit.Record) (*Approval, error) {
	now := s.now()
	q := `UPDATE approvals SET state = ?, decision = ?, decided_by = ?, decided_at = ?, reason = ?, seq = ` + nextSeq + `
		WHERE request_id = ? AND state = 'PENDING'`
	args := []any{string(t.To), t.Decision, t.By, now.UnixMilli(), t.Reason, id}
	if live {
		q += " AND expires_at > ? AND " + leaseLive
		args = append(args, now.UnixMilli(), now.UnixMilli())
	}
	// RETURNING hands back the decided row in the same round trip; only a
	// refused decision reads the row again to say why.
	var cur *Approval
	var err error
	if s.backend == BackendPostgres && rec != nil {
		// One round trip decides and appends: the audit row, hashed
		// beforehand from the head this transaction holds, is inserted by
		// the same statement, once per decided row (none if refused).
		r := *rec
		r.RequestID = id
		row, body, rerr := s.nextAuditRow(ctx, tx, &r)
		if rerr != nil {
			return nil, rerr
		}
		one := "WITH d AS (" + q + " RETURNING " + approvalCols + "), a AS (INSERT INTO audit (" + auditCols +
			") SELECT ?::bigint, ?::bigint, ?::text, ?::text, ?::text, ?::text, ?::text FROM d) SELECT " + approvalCols + " FROM d"
		cur, err = scanApproval(s.queryRow(ctx, tx, one, append(args, row.auditArgs(body)...)...))
		if err == nil {
			s.appended(tx, row)
			return cur, nil
		}
	} else {
		cur, err = scanApproval(s.queryRow(ctx, tx, q+" RETURNING "+approvalCols, args...))
		if err == nil {
			return cur, s.appendIn(ctx, tx, id, rec)
		}
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if cur, err = s.getApproval(ctx, tx, id); err != nil {
		return nil, err
	}
	if cur.State != Pending {
		return nil, &ConflictError{ID: id, Op: op, State: cur.State, By: cur.DecidedBy}
	}
	if !cur.ExpiresAt.After(now) {
		return nil, fmt.Errorf("approval request %s expired at %s: %w", id, cur.ExpiresAt.Format(time.RFC3339), ErrExpired)
	}
	// PENDING and unexpired: its caller's lease ran out.
	return nil, s.cancelOrphanIn(ctx, tx, cur, op)
}

// cancelOrphanIn cancels request a, whose caller's lease has expired, in tx
// with its audit row, and returns the error that refuses op: a committed
// *ConflictError naming CANCELLED.
func (s *DB) cancelOrphanIn(ctx context.Context, tx *sql.Tx, a *Approval, op string) error {
	if _, err := s.cancelIn(ctx, tx, a, leaseGoneReason(a)); err != nil {
		return err
	}
	return committedError{&ConflictError{ID: a.ID, Op: op, State: Cancelled, By: "lease-expiry"}}
}

func leaseGoneReason(a *Approval) string {
	return fmt.Sprintf("the process that asked (host %s, pid %d) stopped renewing its lease: it exited or was cut off", a.Owner.Host, a.Owner.PID)
}

// cancelIn moves a (PENDING, or APPROVED and unclaimed) to CANCELLED with
// reason, if it is still in the state it was read in, and appends the
// audit row. It reports whether it did.
func (s *DB) cancelIn(ctx context.Context, tx *sql.Tx, a *Approval, why string) (bool, error) {
	res, err := s.exec(ctx, tx, `UPDATE approvals SET state = 'CANCELLED', decision = 'cancelled', reason = ?, seq = `+nextSeq+`
		WHERE request_id = ? AND state = ? AND claimed = 0 AND owner_lease = ? AND owner_host = ? AND owner_pid = ? AND owner_start = ?`,
		why, a.ID, string(a.State), a.Owner.Lease, a.Owner.Host, a.Owner.PID, a.Owner.Start)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return false, nil // it moved on meanwhile
	}
	return true, s.appendIn(ctx, tx, a.ID, &audit.Record{
		Event: "approval", Tool: a.Tool, Session: a.Session, Agent: a.Agent, Workspace: a.Workspace,
		Args: audit.Sanitize(a.Args, audit.DefaultMaxLen), Decision: "cancelled", Rule: a.Rule,
		Reason: fmt.Sprintf("%s (was %s)", why, a.State),
	})
}

// Claim implements Store. Only a caller that still holds its lease can
// claim: a request approved after its caller was cut off is cancelled, so
// the caller cannot run it when it comes back.
func (s *DB) Claim(ctx context.Context, id string) (*Approval, error) {
	var out *Approval
	err := s.inTx(ctx, "claim approval request "+id, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE approvals SET claimed = 1, seq = `+nextSeq+`
			WHERE request_id = ? AND state = 'APPROVED' AND claimed = 0 AND `+leaseLive, id, s.now().UnixMilli())
		if err != nil {
			return err
		}
		cur, err := s.getApproval(ctx, tx, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			switch {
			case cur.State == Approved && cur.Claimed:
				return &ConflictError{ID: id, Op: "claim", State: "claimed"}
			case cur.State == Approved:
				return s.cancelOrphanIn(ctx, tx, cur, "claim")
			}
			return &ConflictError{ID: id, Op: "claim", State: cur.State, By: cur.DecidedBy}
		}
		out = cur
		return nil
	})
	return out, err
}

// MarkExecuted implements Store.
func (s *DB) MarkExecuted(ctx context.Context, id, result string, rec *audit.Record) (*Approval, error) {
	var out *Approval
	err := s.inTx(ctx, "record the execution of approval request "+id, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE approvals SET state = 'EXECUTED', execution_result = ?, seq = `+nextSeq+`
			WHERE request_id = ? AND state = 'APPROVED' AND claimed = 1`, result, id)
		if err != nil {
			return err
		}
		cur, err := s.getApproval(ctx, tx, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			st := cur.State
			if st == Approved {
				st = "APPROVED but not claimed"
			}
			return &ConflictError{ID: id, Op: "execute", State: st, By: cur.DecidedBy}
		}
		out = cur
		return s.appendIn(ctx, tx, id, rec)
	})
	return out, err
}

// SetOwner implements Store. The lease moves with the owner: a request
// handed to Unowned has none (nothing can expire for it), and the caller
// that takes it back names its own.
func (s *DB) SetOwner(ctx context.Context, id string, from, to Owner) (bool, error) {
	var ok bool
	err := s.inTx(ctx, "hand over approval request "+id, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE approvals SET owner_host = ?, owner_pid = ?, owner_start = ?, owner_lease = ?, seq = `+nextSeq+`
			WHERE request_id = ? AND owner_host = ? AND owner_pid = ? AND owner_start = ? AND owner_lease = ?`,
			to.Host, to.PID, to.Start, to.Lease, id, from.Host, from.PID, from.Start, from.Lease)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		ok = n == 1
		return nil
	})
	return ok, err
}

// SweepOrphans implements Store. A request is orphaned when its caller's
// lease ran out, or when alive (if not nil) says its caller's process is
// gone: a process on this host that exited is seen at once, without
// waiting for its lease (alive answers true for other hosts, which only
// their leases speak for).
func (s *DB) SweepOrphans(ctx context.Context, alive func(Owner) bool) ([]*Approval, error) {
	const open = "(state = 'PENDING' OR (state = 'APPROVED' AND claimed = 0))"
	dead, err := s.queryApprovals(ctx, "SELECT "+approvalCols+" FROM approvals WHERE "+open+
		" AND owner_lease <> '' AND NOT "+leaseLive, s.now().UnixMilli())
	if err != nil {
		return nil, err
	}
	if alive != nil {
		owners, err := s.openOwners(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range owners {
			if o == Unowned || alive(o) {
				continue
			}
			list, err := s.queryApprovals(ctx, "SELECT "+approvalCols+" FROM approvals WHERE "+open+
				" AND owner_lease = ? AND owner_host = ? AND owner_pid = ? AND owner_start = ?", o.Lease, o.Host, o.PID, o.Start)
			if err != nil {
				return nil, err
			}
			dead = append(dead, list...)
		}
	}
	var out []*Approval
	seen := map[string]bool{}
	for _, a := range dead {
		if seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		why := fmt.Sprintf("the process that asked (host %s, pid %d) exited before the request was executed", a.Owner.Host, a.Owner.PID)
		if a.Owner.Lease != "" && !s.leaseAlive(ctx, a.Owner.Lease) {
			why = leaseGoneReason(a)
		}
		err := s.inTx(ctx, "cancel orphaned approval request "+a.ID, func(ctx context.Context, tx *sql.Tx) error {
			done, err := s.cancelIn(ctx, tx, a, why)
			if err != nil || !done {
				return err
			}
			cur, err := s.getApproval(ctx, tx, a.ID)
			if err != nil {
				return err
			}
			out = append(out, cur)
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	if _, err := s.exec(ctx, s.db, "DELETE FROM leases WHERE expires_at < ?", s.now().Add(-leaseRetention).UnixMilli()); err != nil {
		return out, fmt.Errorf("failed to remove old leases: %w", err)
	}
	return out, nil
}

// openOwners lists the distinct callers of the requests still open.
func (s *DB) openOwners(ctx context.Context) ([]Owner, error) {
	rows, err := s.query(ctx, s.db, `SELECT DISTINCT owner_host, owner_pid, owner_start, owner_lease FROM approvals
		WHERE state = 'PENDING' OR (state = 'APPROVED' AND claimed = 0)`)
	if err != nil {
		return nil, fmt.Errorf("failed to list the callers of open requests: %w", err)
	}
	defer rows.Close()
	var out []Owner
	for rows.Next() {
		var o Owner
		if err := rows.Scan(&o.Host, &o.PID, &o.Start, &o.Lease); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// leaseAlive reports whether lease id is unexpired at the store's now.
func (s *DB) leaseAlive(ctx context.Context, id string) bool {
	var n int
	err := s.queryRow(ctx, s.db, "SELECT COUNT(*) FROM leases WHERE lease_id = ? AND expires_at > ?", id, s.now().UnixMilli()).Scan(&n)
	return err == nil && n > 0
}
