package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/audit"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// schemaVersion is the PRAGMA user_version this code writes and reads.
// Version 1 holds approvals and the audit chain; version 2 adds grants.
const schemaVersion = 2

const schemaV1 = `
CREATE TABLE approvals (
	request_id       TEXT PRIMARY KEY,
	tool             TEXT NOT NULL,
	arguments        TEXT NOT NULL,
	args_hash        TEXT NOT NULL,
	workspace        TEXT NOT NULL DEFAULT '',
	session_id       TEXT NOT NULL DEFAULT '',
	agent            TEXT NOT NULL DEFAULT '',
	rule             TEXT NOT NULL DEFAULT '',
	risk             TEXT NOT NULL DEFAULT '',
	state            TEXT NOT NULL CHECK (state IN ('PENDING','APPROVED','EXECUTED','DENIED','TIMED_OUT','CANCELLED')),
	decision         TEXT NOT NULL DEFAULT '',
	decided_by       TEXT NOT NULL DEFAULT '',
	decided_at       INTEGER NOT NULL DEFAULT 0,
	reason           TEXT NOT NULL DEFAULT '',
	execution_result TEXT NOT NULL DEFAULT '',
	claimed          INTEGER NOT NULL DEFAULT 0,
	created_at       INTEGER NOT NULL,
	expires_at       INTEGER NOT NULL,
	owner_host       TEXT NOT NULL DEFAULT '',
	owner_pid        INTEGER NOT NULL DEFAULT 0,
	owner_start      INTEGER NOT NULL DEFAULT 0,
	seq              INTEGER NOT NULL
);
CREATE UNIQUE INDEX approvals_seq ON approvals(seq);
CREATE INDEX approvals_state ON approvals(state, created_at);
CREATE TABLE audit (
	id         INTEGER PRIMARY KEY,
	time       INTEGER NOT NULL,
	event      TEXT NOT NULL,
	request_id TEXT NOT NULL DEFAULT '',
	record     TEXT NOT NULL,
	prev_hash  TEXT NOT NULL,
	hash       TEXT NOT NULL
);
CREATE INDEX audit_request ON audit(request_id);
CREATE INDEX audit_event ON audit(event, id);
`

const approvalCols = `request_id, tool, arguments, args_hash, workspace, session_id, agent, rule, risk,
	state, decision, decided_by, decided_at, reason, execution_result, claimed, created_at, expires_at,
	owner_host, owner_pid, owner_start, seq`

const nextSeq = `(SELECT COALESCE(MAX(seq), 0) + 1 FROM approvals)`

// Options tune OpenSQLite; nil means the defaults.
type Options struct {
	// Now is the clock decisions are judged by; default time.Now.
	Now func() time.Time
	// BusyTimeout is how long a writer waits for another; default 5 s.
	BusyTimeout time.Duration
}

// SQLite is the Store on a SQLite database file.
type SQLite struct {
	// writeMu lets one write transaction of this process at a time ask
	// SQLite for the write lock: writers of one process queue here, in
	// order, instead of sleeping in SQLite's busy handler while holding
	// pool connections that readers need. Other processes still wait on
	// the busy timeout.
	writeMu sync.Mutex
	db      *sql.DB
	now     func() time.Time
	path    string
}

var _ Store = (*SQLite)(nil)

// DefaultPath is where the database lives: $WARDEN_DB, else
// $XDG_STATE_HOME/warden/warden.db, else ~/.local/state/warden/warden.db.
func DefaultPath() (string, error) {
	if p := os.Getenv("WARDEN_DB"); p != "" {
		return p, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "warden", "warden.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("failed to find the state directory: %w (set WARDEN_DB or XDG_STATE_HOME)", err)
	}
	return filepath.Join(home, ".local", "state", "warden", "warden.db"), nil
}

// OpenSQLite opens (creating if needed) the database at path, or an
// in-memory database for ":memory:", and brings its schema up to date.
func OpenSQLite(path string, opts *Options) (*SQLite, error) {
	if opts == nil {
		opts = &Options{}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	if path == "" {
		return nil, errors.New("failed to open the store: empty database path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("failed to open the store: database path %q contains '?' or '#'", path)
	}
	memory := path == ":memory:"
	q := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_txlock=immediate", busy.Milliseconds())
	if !memory {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("failed to create the state directory: %w", err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("failed to open the store: %w", err)
		}
		f.Close()
		q += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	}
	db, err := sql.Open("sqlite", path+"?"+q)
	if err != nil {
		return nil, fmt.Errorf("failed to open the store %s: %w", path, err)
	}
	if memory {
		// Each connection to ":memory:" is its own database.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
	}
	s := &SQLite{db: db, now: now, path: path}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Path is the database file the store uses.
func (s *SQLite) Path() string { return s.path }

// DB exposes the database handle, for tests and maintenance tools.
func (s *SQLite) DB() *sql.DB { return s.db }

// Close implements Store.
func (s *SQLite) Close() error { return s.db.Close() }

func (s *SQLite) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("failed to open the store %s: %w", s.path, err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("failed to read the schema version of %s: %w", s.path, err)
	}
	switch {
	case v == schemaVersion:
		return nil
	case v < 0:
		return fmt.Errorf("database %s has an invalid schema version %d", s.path, v)
	case v > schemaVersion:
		return fmt.Errorf("database %s has schema version %d, newer than this warden understands (%d)", s.path, v, schemaVersion)
	}
	for i, step := range []string{schemaV1, schemaV2}[v:] {
		if _, err := tx.ExecContext(ctx, step); err != nil {
			return fmt.Errorf("failed to bring the schema of %s to version %d: %w", s.path, v+i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("failed to set the schema version of %s: %w", s.path, err)
	}
	return tx.Commit()
}

type scanner interface{ Scan(dest ...any) error }

func scanApproval(r scanner) (*Approval, error) {
	var a Approval
	var args, state string
	var decidedAt, created, expires int64
	var claimed int
	err := r.Scan(&a.ID, &a.Tool, &args, &a.ArgsHash, &a.Workspace, &a.Session, &a.Agent, &a.Rule, &a.Risk,
		&state, &a.Decision, &a.DecidedBy, &decidedAt, &a.Reason, &a.ExecutionResult, &claimed, &created, &expires,
		&a.Owner.Host, &a.Owner.PID, &a.Owner.Start, &a.Seq)
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

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getApproval(ctx context.Context, q querier, id string) (*Approval, error) {
	a, err := scanApproval(q.QueryRowContext(ctx, "SELECT "+approvalCols+" FROM approvals WHERE request_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("approval request %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read approval request %s: %w", id, err)
	}
	return a, nil
}

// Create implements Store.
func (s *SQLite) Create(ctx context.Context, a *Approval, rec *audit.Record) error {
	if a.ID == "" || a.Tool == "" || len(a.Args) == 0 {
		return errors.New("failed to create approval request: id, tool and arguments are required")
	}
	return s.inTx(ctx, "create approval request "+a.ID, func(tx *sql.Tx) error {
		return s.createIn(ctx, tx, a, rec)
	})
}

func (s *SQLite) createIn(ctx context.Context, tx *sql.Tx, a *Approval, rec *audit.Record) error {
	claimed := 0
	if a.Claimed {
		claimed = 1
	}
	var decidedAt int64
	if !a.DecidedAt.IsZero() {
		decidedAt = a.DecidedAt.UnixMilli()
	}
	err := tx.QueryRowContext(ctx, `INSERT INTO approvals (`+approvalCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, `+nextSeq+`) RETURNING seq`,
		a.ID, a.Tool, string(a.Args), a.ArgsHash, a.Workspace, a.Session, a.Agent, a.Rule, a.Risk,
		string(a.State), a.Decision, a.DecidedBy, decidedAt, a.Reason, a.ExecutionResult, claimed,
		a.CreatedAt.UnixMilli(), a.ExpiresAt.UnixMilli(), a.Owner.Host, a.Owner.PID, a.Owner.Start).Scan(&a.Seq)
	if err != nil {
		return err
	}
	return s.appendIn(ctx, tx, a.ID, rec)
}

// Get implements Store.
func (s *SQLite) Get(ctx context.Context, id string) (*Approval, error) {
	return getApproval(ctx, s.db, id)
}

// List implements Store.
func (s *SQLite) List(ctx context.Context, f Filter) ([]*Approval, error) {
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
func (s *SQLite) Changes(ctx context.Context, after int64, limit int) ([]*Approval, error) {
	if limit <= 0 {
		limit = 1000
	}
	return s.queryApprovals(ctx, "SELECT "+approvalCols+" FROM approvals WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
}

// ChangeHead implements Store.
func (s *SQLite) ChangeHead(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM approvals").Scan(&seq); err != nil {
		return 0, fmt.Errorf("failed to read the change head: %w", err)
	}
	return seq, nil
}

func (s *SQLite) queryApprovals(ctx context.Context, q string, args ...any) ([]*Approval, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
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
func (s *SQLite) Decide(ctx context.Context, id string, t Transition, rec *audit.Record) (*Approval, error) {
	if t.To != Approved && t.To != Denied {
		return nil, fmt.Errorf("failed to decide approval request %s: a decision approves or denies, not %s", id, t.To)
	}
	return s.transition(ctx, id, "decide", t, true, rec)
}

// Resolve implements Store.
func (s *SQLite) Resolve(ctx context.Context, id string, t Transition, rec *audit.Record) (*Approval, error) {
	switch t.To {
	case Approved, TimedOut, Cancelled, Denied:
	default:
		return nil, fmt.Errorf("failed to resolve approval request %s: cannot move it to %s", id, t.To)
	}
	return s.transition(ctx, id, "resolve", t, false, rec)
}

func (s *SQLite) transition(ctx context.Context, id, op string, t Transition, live bool, rec *audit.Record) (*Approval, error) {
	var out *Approval
	err := s.inTx(ctx, op+" approval request "+id, func(tx *sql.Tx) error {
		var err error
		out, err = s.decideIn(ctx, tx, id, op, t, live, rec)
		return err
	})
	return out, err
}

// decideIn moves PENDING request id to t.To (only if unexpired when live)
// and appends rec, in tx.
func (s *SQLite) decideIn(ctx context.Context, tx *sql.Tx, id, op string, t Transition, live bool, rec *audit.Record) (*Approval, error) {
	now := s.now()
	q := `UPDATE approvals SET state = ?, decision = ?, decided_by = ?, decided_at = ?, reason = ?, seq = ` + nextSeq + `
		WHERE request_id = ? AND state = 'PENDING'`
	args := []any{string(t.To), t.Decision, t.By, now.UnixMilli(), t.Reason, id}
	if live {
		q += " AND expires_at > ?"
		args = append(args, now.UnixMilli())
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	cur, err := getApproval(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if cur.State == Pending {
			return nil, fmt.Errorf("approval request %s expired at %s: %w", id, cur.ExpiresAt.Format(time.RFC3339), ErrExpired)
		}
		return nil, &ConflictError{ID: id, Op: op, State: cur.State, By: cur.DecidedBy}
	}
	return cur, s.appendIn(ctx, tx, id, rec)
}

// Claim implements Store.
func (s *SQLite) Claim(ctx context.Context, id string) (*Approval, error) {
	var out *Approval
	err := s.inTx(ctx, "claim approval request "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET claimed = 1, seq = `+nextSeq+`
			WHERE request_id = ? AND state = 'APPROVED' AND claimed = 0`, id)
		if err != nil {
			return err
		}
		cur, err := getApproval(ctx, tx, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			st := cur.State
			if st == Approved {
				return &ConflictError{ID: id, Op: "claim", State: "claimed"}
			}
			return &ConflictError{ID: id, Op: "claim", State: st, By: cur.DecidedBy}
		}
		out = cur
		return nil
	})
	return out, err
}

// MarkExecuted implements Store.
func (s *SQLite) MarkExecuted(ctx context.Context, id, result string, rec *audit.Record) (*Approval, error) {
	var out *Approval
	err := s.inTx(ctx, "record the execution of approval request "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET state = 'EXECUTED', execution_result = ?, seq = `+nextSeq+`
			WHERE request_id = ? AND state = 'APPROVED' AND claimed = 1`, result, id)
		if err != nil {
			return err
		}
		cur, err := getApproval(ctx, tx, id)
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

// SetOwner implements Store.
func (s *SQLite) SetOwner(ctx context.Context, id string, from, to Owner) (bool, error) {
	var ok bool
	err := s.inTx(ctx, "hand over approval request "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET owner_host = ?, owner_pid = ?, owner_start = ?, seq = `+nextSeq+`
			WHERE request_id = ? AND owner_host = ? AND owner_pid = ? AND owner_start = ?`,
			to.Host, to.PID, to.Start, id, from.Host, from.PID, from.Start)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		ok = n == 1
		return nil
	})
	return ok, err
}

// SweepOrphans implements Store.
func (s *SQLite) SweepOrphans(ctx context.Context, alive func(Owner) bool) ([]*Approval, error) {
	cands, err := s.queryApprovals(ctx, "SELECT "+approvalCols+" FROM approvals WHERE state = 'PENDING' OR (state = 'APPROVED' AND claimed = 0)")
	if err != nil {
		return nil, err
	}
	var out []*Approval
	for _, a := range cands {
		if a.Owner == Unowned || alive(a.Owner) {
			continue
		}
		err := s.inTx(ctx, "cancel orphaned approval request "+a.ID, func(tx *sql.Tx) error {
			const why = "the process that asked exited before the request was executed"
			res, err := tx.ExecContext(ctx, `UPDATE approvals SET state = 'CANCELLED', reason = ?, seq = `+nextSeq+`
				WHERE request_id = ? AND state = ? AND claimed = 0 AND owner_host = ? AND owner_pid = ? AND owner_start = ?`,
				why, a.ID, string(a.State), a.Owner.Host, a.Owner.PID, a.Owner.Start)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return nil // it moved on meanwhile
			}
			cur, err := getApproval(ctx, tx, a.ID)
			if err != nil {
				return err
			}
			out = append(out, cur)
			return s.appendIn(ctx, tx, a.ID, &audit.Record{
				Event: "approval", Tool: a.Tool, Session: a.Session, Agent: a.Agent, Workspace: a.Workspace,
				Decision: "cancelled", Rule: a.Rule, Reason: fmt.Sprintf("%s (was %s, pid %d)", why, a.State, a.Owner.PID),
			})
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// inTx runs f in a write transaction (BEGIN IMMEDIATE) and commits it.
func (s *SQLite) inTx(ctx context.Context, what string, f func(*sql.Tx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("failed to %s: %w", what, err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		var ce *ConflictError
		var ge *GrantStateError
		if errors.As(err, &ce) || errors.As(err, &ge) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) ||
			errors.Is(err, ErrNoGrant) || errors.Is(err, ErrGrantNotFound) || errors.Is(err, ErrGrantScope) {
			return err
		}
		return fmt.Errorf("failed to %s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("failed to %s: %w", what, err)
	}
	return nil
}
