package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Backend names a kind of database the store runs on.
type Backend string

// The backends.
const (
	BackendSQLite   Backend = "sqlite"
	BackendPostgres Backend = "postgres"
)

// Options tune OpenSQLite and OpenPostgres; nil means the defaults.
type Options struct {
	// Now is the clock decisions and leases are judged by. The default is
	// time.Now on SQLite, and on PostgreSQL the database server's clock
	// (measured once when the store opens), so that replicas on several
	// hosts judge expiry by one clock.
	Now func() time.Time
	// BusyTimeout is how long a SQLite writer waits for another process's
	// write; default 5 s.
	BusyTimeout time.Duration
	// Poll is how often Watch re-reads the store for changes made by other
	// processes without telling this one: on SQLite that is how they are
	// seen (default 50 ms); on PostgreSQL, where LISTEN/NOTIFY wakes
	// watchers at once, it is only a safety net (default 2 s).
	Poll time.Duration
	// MaxConns caps the PostgreSQL connection pool; default 16.
	MaxConns int
}

// DB is the Store on a SQL database: SQLite (OpenSQLite) or PostgreSQL
// (OpenPostgres). Both run the same statements; the few places where the
// dialects differ (placeholders, the schema, how writers are serialised,
// how other processes are told about a change) are marked.
type DB struct {
	// writeMu lets one write transaction of this process at a time ask
	// the database for the write lock: writers of one process queue here,
	// in order, instead of waiting in the database while holding pool
	// connections that readers need.
	writeMu sync.Mutex
	db      *sql.DB
	pool    *pgxpool.Pool // PostgreSQL only
	backend Backend
	now     func() time.Time
	// where names the database in errors: a SQLite path, or PostgreSQL's
	// host and database (never a password).
	where string
	path  string // SQLite only

	rebound sync.Map // query with '?' → query with $n (PostgreSQL)
	watch   *watcher
	closing sync.Once
}

// SQLite is the store's historical name, kept for callers that name it.
type SQLite = DB

var _ Store = (*DB)(nil)

// Backend is the kind of database s runs on.
func (s *DB) Backend() Backend { return s.backend }

// Where names the database: the SQLite file, or PostgreSQL's host, port and
// database name. It never holds a password.
func (s *DB) Where() string { return s.where }

// Path is the SQLite database file ("" on PostgreSQL).
func (s *DB) Path() string { return s.path }

// DB exposes the database handle, for tests and maintenance tools. On
// PostgreSQL its statements take $1-style placeholders; Rebind turns the
// store's '?' into them.
func (s *DB) DB() *sql.DB { return s.db }

// Now is the store's clock.
func (s *DB) Now() time.Time { return s.now() }

// Close implements Store.
func (s *DB) Close() error {
	var err error
	s.closing.Do(func() {
		s.watch.close()
		err = s.db.Close()
		if s.pool != nil {
			s.pool.Close()
		}
	})
	return err
}

// Rebind returns query with its '?' placeholders in the backend's syntax.
// The store's queries hold no '?' inside string literals.
func (s *DB) Rebind(query string) string {
	if s.backend != BackendPostgres {
		return query
	}
	if v, ok := s.rebound.Load(query); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	s.rebound.Store(query, out)
	return out
}

// Advisory lock keys (PostgreSQL): arbitrary constants, the same in every
// warden process, unlikely to collide with another application's keys in
// the same database.
const (
	// lockWriters serialises every transaction that changes approvals,
	// grants or the audit chain, so change sequences and chain ids are
	// handed out in commit order (as SQLite's single writer does).
	lockWriters int64 = 0x77617264656e0001 // "warden" 0001
	// lockMigrate serialises schema migrations of replicas starting at once.
	lockMigrate int64 = 0x77617264656e0002
)

// notifyChannel is the PostgreSQL channel every change is announced on.
const notifyChannel = "warden_changes"

// txOpts say what a write transaction needs.
type txOpts struct {
	// light transactions (lease heartbeats) touch no change sequence and
	// no audit row: on PostgreSQL they skip the writers' lock and the
	// notification.
	light bool
}

// committedError is an error returned by a transaction's body after a
// change that must be kept: inTx commits, then returns the inner error.
// A decision on a request whose caller is gone cancels the request and
// refuses the decision, for example.
type committedError struct{ error }

func (e committedError) Unwrap() error { return e.error }

// inTx runs f in a write transaction and commits it.
func (s *DB) inTx(ctx context.Context, what string, f func(*sql.Tx) error) error {
	return s.inTxOpts(ctx, what, txOpts{}, f)
}

func (s *DB) inTxOpts(ctx context.Context, what string, o txOpts, f func(*sql.Tx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// On SQLite, BeginTx is BEGIN IMMEDIATE (_txlock=immediate): it takes
	// the database's write lock at once.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("failed to %s: %w", what, err)
	}
	defer tx.Rollback()
	if s.backend == BackendPostgres && !o.light {
		// One round trip takes the writers' lock and queues the wake-up,
		// which PostgreSQL delivers at commit (and drops on rollback).
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1), pg_notify($2, '')", lockWriters, notifyChannel); err != nil {
			return fmt.Errorf("failed to %s: %w", what, err)
		}
	}
	ferr := f(tx)
	var keep committedError
	if ferr != nil && !errors.As(ferr, &keep) {
		if isStoreError(ferr) {
			return ferr
		}
		return fmt.Errorf("failed to %s: %w", what, ferr)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("failed to %s: %w", what, err)
	}
	if !o.light {
		s.watch.kick()
	}
	if ferr != nil {
		return keep.error
	}
	return nil
}

// isStoreError reports whether err is one of the store's own refusals,
// which reach the caller unwrapped.
func isStoreError(err error) bool {
	var ce *ConflictError
	var ge *GrantStateError
	return errors.As(err, &ce) || errors.As(err, &ge) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) ||
		errors.Is(err, ErrNoGrant) || errors.Is(err, ErrGrantNotFound) || errors.Is(err, ErrGrantScope) ||
		errors.Is(err, ErrLeaseLost)
}

// exec, queryRow and query run a '?' statement on q (the database or a
// transaction).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *DB) exec(ctx context.Context, q execer, query string, args ...any) (sql.Result, error) {
	return q.ExecContext(ctx, s.Rebind(query), args...)
}

func (s *DB) queryRow(ctx context.Context, q execer, query string, args ...any) *sql.Row {
	return q.QueryRowContext(ctx, s.Rebind(query), args...)
}

func (s *DB) query(ctx context.Context, q execer, query string, args ...any) (*sql.Rows, error) {
	return q.QueryContext(ctx, s.Rebind(query), args...)
}

func (o *Options) orDefault() *Options {
	if o == nil {
		return &Options{}
	}
	return o
}
