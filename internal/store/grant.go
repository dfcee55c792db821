package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

// Grant lets one exact call (tool + canonical arguments + workspace +
// session, bound by ArgsHash) run without asking until ExpiresAt. A
// supervisor creates it when approving a request; it is never broader than
// that request.
type Grant struct {
	ID         string          `json:"id"`
	ApprovalID string          `json:"approval_id"`
	Tool       string          `json:"tool"`
	ArgsHash   string          `json:"args_hash"`
	Args       json.RawMessage `json:"args"`
	Workspace  string          `json:"workspace"`
	Session    string          `json:"session"`
	Agent      string          `json:"agent"`
	CreatedBy  string          `json:"created_by"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	RevokedBy  string          `json:"revoked_by,omitempty"`
	RevokedAt  time.Time       `json:"revoked_at,omitzero"`
	Uses       int             `json:"uses"`
	// LastEvent is the grant's latest change: created, used, revoked or
	// expired (expiry is recorded by ExpireGrants, after the fact).
	LastEvent string `json:"last_event"`
	// Seq orders changes to grants (its own sequence, not approvals').
	Seq int64 `json:"seq"`
}

// Active reports whether g can still be used at now.
func (g *Grant) Active(now time.Time) bool {
	return g.RevokedAt.IsZero() && now.Before(g.ExpiresAt)
}

// GrantFilter selects grants for Grants.
type GrantFilter struct {
	// All lists revoked and expired grants too; by default only active ones.
	All   bool
	Limit int // 0 for no limit
}

// Grants is the part of Store that keeps grants. Every change appends its
// audit row in the same transaction: grant_created, grant_used,
// grant_revoked, grant_expired.
type Grants interface {
	// DecideWithGrant approves PENDING request id exactly as Decide does
	// (conditional on PENDING and unexpired) and, in the same transaction,
	// stores a grant bound to the request's tool, arguments, workspace and
	// session, valid for d from the store's now. rec is the decision's
	// audit row. A request without a session cannot get a grant.
	DecideWithGrant(ctx context.Context, id string, t Transition, grantID string, d time.Duration, rec *audit.Record) (*Approval, *Grant, error)
	// UseGrant looks for an active grant matching a (tool, arguments,
	// args_hash, workspace, session). If there is one, it counts a use and
	// inserts a as APPROVED (decision "granted", decided by the grant's
	// creator, already claimed) with rec as its audit row; otherwise it
	// returns ErrNoGrant and stores nothing.
	UseGrant(ctx context.Context, a *Approval, rec *audit.Record) (*Grant, error)
	// GetGrant returns grant id, or ErrGrantNotFound.
	GetGrant(ctx context.Context, id string) (*Grant, error)
	// ListGrants returns grants, newest first.
	ListGrants(ctx context.Context, f GrantFilter) ([]*Grant, error)
	// RevokeGrant ends an active grant; a revoked or expired one gives a
	// *GrantStateError.
	RevokeGrant(ctx context.Context, id, by string) (*Grant, error)
	// ExpireGrants records (once each) the grants that expired.
	ExpireGrants(ctx context.Context) ([]*Grant, error)
	// GrantChanges returns grants changed after seq, in change order.
	GrantChanges(ctx context.Context, after int64, limit int) ([]*Grant, error)
	// GrantHead is the latest grant change sequence (0 when none).
	GrantHead(ctx context.Context) (int64, error)
}

// ErrNoGrant means no active grant covers a call.
var ErrNoGrant = errors.New("no active grant covers this call")

// ErrGrantNotFound means no grant has that id.
var ErrGrantNotFound = errors.New("no such grant")

// ErrGrantScope means a grant was asked for a request it cannot be scoped to.
var ErrGrantScope = errors.New("a grant needs a request bound to one session")

// GrantStateError is a grant change refused because the grant already
// ended. It matches ErrConflict.
type GrantStateError struct {
	ID    string
	Op    string // revoke
	State string // revoked, expired
	By    string
}

func (e *GrantStateError) Error() string {
	msg := fmt.Sprintf("cannot %s grant %s: it is already %s", e.Op, e.ID, e.State)
	if e.By != "" {
		msg += " (by " + e.By + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *GrantStateError) Is(target error) bool { return target == ErrConflict }

const grantCols = `grant_id, approval_id, tool, args_hash, arguments, workspace, session_id, agent,
	created_by, created_at, expires_at, revoked_by, revoked_at, uses, last_event, seq`

const nextGrantSeq = `(SELECT COALESCE(MAX(seq), 0) + 1 FROM grants)`

func scanGrant(r scanner) (*Grant, error) {
	var g Grant
	var args string
	var created, expires, revoked int64
	err := r.Scan(&g.ID, &g.ApprovalID, &g.Tool, &g.ArgsHash, &args, &g.Workspace, &g.Session, &g.Agent,
		&g.CreatedBy, &created, &expires, &g.RevokedBy, &revoked, &g.Uses, &g.LastEvent, &g.Seq)
	if err != nil {
		return nil, err
	}
	g.Args = json.RawMessage(args)
	g.CreatedAt = time.UnixMilli(created).UTC()
	g.ExpiresAt = time.UnixMilli(expires).UTC()
	if revoked != 0 {
		g.RevokedAt = time.UnixMilli(revoked).UTC()
	}
	return &g, nil
}

func (s *DB) getGrant(ctx context.Context, q execer, id string) (*Grant, error) {
	g, err := scanGrant(s.queryRow(ctx, q, "SELECT "+grantCols+" FROM grants WHERE grant_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("grant %q: %w", id, ErrGrantNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read grant %s: %w", id, err)
	}
	return g, nil
}

// grantRecord is the audit row of a grant event.
func grantRecord(g *Grant, event, by string) *audit.Record {
	return &audit.Record{
		Event: event, Session: g.Session, Agent: g.Agent, Workspace: g.Workspace, Tool: g.Tool,
		Args: audit.Sanitize(g.Args, audit.DefaultMaxLen), DecidedBy: by, Success: event == "grant_created" || event == "grant_used",
		Reason: fmt.Sprintf("grant %s (request %s, by %s, until %s, uses %d)", g.ID, g.ApprovalID, g.CreatedBy,
			g.ExpiresAt.Format(time.RFC3339), g.Uses),
	}
}

// DecideWithGrant implements Grants.
func (s *DB) DecideWithGrant(ctx context.Context, id string, t Transition, grantID string, d time.Duration, rec *audit.Record) (*Approval, *Grant, error) {
	if t.To != Approved {
		return nil, nil, fmt.Errorf("failed to grant on approval request %s: only an approval creates a grant, not %s", id, t.To)
	}
	if grantID == "" || d <= 0 {
		return nil, nil, fmt.Errorf("failed to grant on approval request %s: a grant needs an id and a positive duration", id)
	}
	var out *Approval
	var g *Grant
	err := s.inTx(ctx, "approve with a grant request "+id, func(ctx context.Context, tx *sql.Tx) error {
		cur, err := s.getApproval(ctx, tx, id)
		if err != nil {
			return err
		}
		if cur.Session == "" {
			return fmt.Errorf("approval request %s has no session: %w", id, ErrGrantScope)
		}
		if out, err = s.decideIn(ctx, tx, id, "decide", t, true, rec); err != nil {
			return err
		}
		now := s.now()
		err = s.queryRow(ctx, tx, `INSERT INTO grants (`+grantCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0, 0, 'created', `+nextGrantSeq+`) RETURNING seq`,
			grantID, out.ID, out.Tool, out.ArgsHash, string(out.Args), out.Workspace, out.Session, out.Agent,
			t.By, now.UnixMilli(), now.Add(d).UnixMilli()).Scan(new(int64))
		if err != nil {
			return err
		}
		if g, err = s.getGrant(ctx, tx, grantID); err != nil {
			return err
		}
		return s.appendIn(ctx, tx, id, grantRecord(g, "grant_created", t.By))
	})
	if err != nil {
		return nil, nil, err
	}
	return out, g, nil
}

// UseGrant implements Grants.
func (s *DB) UseGrant(ctx context.Context, a *Approval, rec *audit.Record) (*Grant, error) {
	// Most supervised calls have no grant: find out without the write lock.
	var n int
	err := s.queryRow(ctx, s.db, `SELECT COUNT(*) FROM grants WHERE args_hash = ? AND revoked_at = 0 AND expires_at > ?`,
		a.ArgsHash, s.now().UnixMilli()).Scan(&n)
	if err != nil {
		return nil, fmt.Errorf("failed to look for a grant: %w", err)
	}
	if n == 0 {
		return nil, ErrNoGrant
	}
	var g *Grant
	err = s.inTx(ctx, "use a grant for "+a.Tool, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		var err error
		g, err = scanGrant(s.queryRow(ctx, tx, `SELECT `+grantCols+` FROM grants
			WHERE args_hash = ? AND tool = ? AND arguments = ? AND workspace = ? AND session_id = ?
			AND revoked_at = 0 AND expires_at > ? ORDER BY expires_at DESC LIMIT 1`,
			a.ArgsHash, a.Tool, string(a.Args), a.Workspace, a.Session, now.UnixMilli()))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoGrant
		}
		if err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `UPDATE grants SET uses = uses + 1, last_event = 'used', seq = `+nextGrantSeq+`
			WHERE grant_id = ?`, g.ID); err != nil {
			return err
		}
		if g, err = s.getGrant(ctx, tx, g.ID); err != nil {
			return err
		}
		a.State, a.Decision, a.DecidedBy, a.DecidedAt, a.Claimed = Approved, "granted", g.CreatedBy, now, true
		a.Reason = "grant " + g.ID
		var r *audit.Record
		if rec != nil {
			c := *rec
			c.Decision, c.DecidedBy, c.Reason, c.Success = audit.Decision(a.Decision), a.DecidedBy, a.Reason, true
			r = &c
		}
		if err := s.createIn(ctx, tx, a, r); err != nil {
			return err
		}
		return s.appendIn(ctx, tx, a.ID, grantRecord(g, "grant_used", g.CreatedBy))
	})
	if errors.Is(err, ErrNoGrant) {
		return nil, ErrNoGrant
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// GetGrant implements Grants.
func (s *DB) GetGrant(ctx context.Context, id string) (*Grant, error) {
	return s.getGrant(ctx, s.db, id)
}

// ListGrants implements Grants.
func (s *DB) ListGrants(ctx context.Context, f GrantFilter) ([]*Grant, error) {
	q := "SELECT " + grantCols + " FROM grants"
	var args []any
	if !f.All {
		q += " WHERE revoked_at = 0 AND expires_at > ?"
		args = append(args, s.now().UnixMilli())
	}
	q += " ORDER BY created_at DESC, seq DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return s.queryGrants(ctx, q, args...)
}

// RevokeGrant implements Grants.
func (s *DB) RevokeGrant(ctx context.Context, id, by string) (*Grant, error) {
	var out *Grant
	err := s.inTx(ctx, "revoke grant "+id, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		res, err := s.exec(ctx, tx, `UPDATE grants SET revoked_by = ?, revoked_at = ?, last_event = 'revoked', seq = `+nextGrantSeq+`
			WHERE grant_id = ? AND revoked_at = 0 AND expires_at > ?`, by, now.UnixMilli(), id, now.UnixMilli())
		if err != nil {
			return err
		}
		cur, err := s.getGrant(ctx, tx, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			if !cur.RevokedAt.IsZero() {
				return &GrantStateError{ID: id, Op: "revoke", State: "revoked", By: cur.RevokedBy}
			}
			return &GrantStateError{ID: id, Op: "revoke", State: "expired"}
		}
		out = cur
		return s.appendIn(ctx, tx, cur.ApprovalID, grantRecord(cur, "grant_revoked", by))
	})
	return out, err
}

// ExpireGrants implements Grants.
func (s *DB) ExpireGrants(ctx context.Context) ([]*Grant, error) {
	q := `SELECT ` + grantCols + ` FROM grants WHERE last_event IN ('created','used') AND revoked_at = 0 AND expires_at <= ?`
	cands, err := s.queryGrants(ctx, q, s.now().UnixMilli())
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	var out []*Grant
	err = s.inTx(ctx, "record expired grants", func(ctx context.Context, tx *sql.Tx) error {
		for _, g := range cands {
			res, err := s.exec(ctx, tx, `UPDATE grants SET last_event = 'expired', seq = `+nextGrantSeq+`
				WHERE grant_id = ? AND last_event IN ('created','used') AND revoked_at = 0 AND expires_at <= ?`, g.ID, s.now().UnixMilli())
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				continue // revoked or recorded meanwhile
			}
			cur, err := s.getGrant(ctx, tx, g.ID)
			if err != nil {
				return err
			}
			out = append(out, cur)
			if err := s.appendIn(ctx, tx, cur.ApprovalID, grantRecord(cur, "grant_expired", "expiry")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GrantChanges implements Grants.
func (s *DB) GrantChanges(ctx context.Context, after int64, limit int) ([]*Grant, error) {
	if limit <= 0 {
		limit = 1000
	}
	return s.queryGrants(ctx, "SELECT "+grantCols+" FROM grants WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
}

// GrantHead implements Grants.
func (s *DB) GrantHead(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM grants").Scan(&seq); err != nil {
		return 0, fmt.Errorf("failed to read the grant change head: %w", err)
	}
	return seq, nil
}

func (s *DB) queryGrants(ctx context.Context, q string, args ...any) ([]*Grant, error) {
	rows, err := s.query(ctx, s.db, q, args...)
	if err != nil {
		return nil, fmt.Errorf("failed to list grants: %w", err)
	}
	defer rows.Close()
	var out []*Grant
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, fmt.Errorf("failed to read a grant: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("failed to list grants: %w", err)
	}
	return out, nil
}
