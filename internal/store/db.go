package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// writer is held (a one-slot semaphore) by the one goroutine of this
	// process whose write transaction asks the database for the write
	// lock: writers of one process queue here, in order, instead of waiting
	// in the database while holding pool connections that readers need.
	writer chan struct{}
	// writes counts committed write transactions (LocalWrites).
	writes atomic.Uint64
	// head is the audit chain's last row as appended in the transaction
	// tx, so a batch reads it once (guarded by writer).
	head struct {
		tx   *sql.Tx
		id   int64
		hash string
	}
	// queue holds the write jobs waiting for writer (inTxOpts).
	queueMu sync.Mutex
	queue   []*writeJob
	db      *sql.DB
	pool    *pgxpool.Pool // PostgreSQL only
	backend Backend
	now     func() time.Time
	// where names the database in errors: a SQLite path, or PostgreSQL's
	// host and database (never a password).
	where string
	path  string // SQLite only

	rebound sync.Map // query with '?' → query with $n (PostgreSQL)
	stmts   sync.Map // query → *sql.Stmt (SQLite)
	// toPrepare holds the queries write transactions ran unprepared, to
	// prepare once the transaction is over (SQLite; see stmt).
	toPrepare sync.Map // query → struct{}
	nstmts    atomic.Int64
	watch     *watcher
	closing   sync.Once
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
		s.stmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
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
	// cleanRefusals says that when the body refuses (returns one of the
	// store's own errors, isStoreError), it has written nothing, so a
	// batch needs no savepoint to undo it (runBatch).
	cleanRefusals bool
}

// committedError is an error returned by a transaction's body after a
// change that must be kept: inTx commits, then returns the inner error.
// A decision on a request whose caller is gone cancels the request and
// refuses the decision, for example.
type committedError struct{ error }

func (e committedError) Unwrap() error { return e.error }

// inTx runs f in a write transaction and commits it.
func (s *DB) inTx(ctx context.Context, what string, f func(context.Context, *sql.Tx) error) error {
	return s.inTxOpts(ctx, what, txOpts{}, f)
}

// writeJob is one caller's write transaction body, waiting to run.
type writeJob struct {
	ctx  context.Context
	what string
	o    txOpts
	f    func(context.Context, *sql.Tx) error
	err  error // set before done is closed
	// done is closed once the job's transaction is over, by whichever
	// writer ran it.
	done chan struct{}
}

// maxBatch bounds how many callers' writes share one transaction.
const maxBatch = 64

// inTxOpts runs f in a write transaction. Writers of this process that
// arrive while another one holds the write lock are committed together:
// the next one to get the lock runs every body queued by then in one
// transaction, each inside its own savepoint, so a body that fails is
// rolled back alone and the others commit. Each body still sees the
// effects of the ones before it, exactly as if they had run one after
// another; only the commit (and on PostgreSQL the lock, the notification
// and the round trips of BEGIN and COMMIT) is shared. A failed commit fails
// every body of the batch.
func (s *DB) inTxOpts(ctx context.Context, what string, o txOpts, f func(context.Context, *sql.Tx) error) error {
	job := &writeJob{ctx: ctx, what: what, o: o, f: f, done: make(chan struct{})}
	s.queueMu.Lock()
	s.queue = append(s.queue, job)
	s.queueMu.Unlock()

	// Wait until a writer before us has run our job, or the write slot is
	// ours. The jobs of a batch are released at once (done is closed),
	// without passing through the slot, so they come back with their next
	// write while the next batch is still forming: with several writes in
	// flight, batches stay as large as the writers in flight.
	select {
	case <-job.done:
		return job.err
	case s.writer <- struct{}{}:
	}
	defer func() { <-s.writer }()
	select {
	case <-job.done: // run by the writer we waited for
		return job.err
	default:
	}
	s.queueMu.Lock()
	n := min(len(s.queue), maxBatch)
	batch := s.queue[:n:n]
	s.queue = append([]*writeJob(nil), s.queue[n:]...)
	s.queueMu.Unlock()
	s.runBatch(batch)
	for _, j := range batch {
		close(j.done)
	}
	if s.backend == BackendSQLite {
		s.prepareQueued(context.WithoutCancel(ctx))
	}
	return job.err
}

// runBatch runs jobs in one transaction and records each one's result.
//
// A job whose refusals write nothing (txOpts.cleanRefusals) runs without a
// savepoint of its own, which costs two round trips on PostgreSQL: if it
// refuses, there is nothing to undo. If such a job fails in another way
// (a statement's error, which on PostgreSQL aborts the whole transaction),
// the batch is rolled back and run again with a savepoint for every job.
func (s *DB) runBatch(jobs []*writeJob) {
	if s.runBatchTx(jobs, false) {
		for _, j := range jobs {
			j.err = nil
		}
		s.runBatchTx(jobs, true)
	}
}

// runBatchTx runs jobs in one transaction, each in a savepoint unless it
// does not need one (all do if savepoints is set). It reports whether the
// batch must run again with savepoints (runBatch); then it committed
// nothing.
func (s *DB) runBatchTx(jobs []*writeJob, savepoints bool) (again bool) {
	defer func() { s.head.tx = nil }()
	finish := func(err error) {
		for _, j := range jobs {
			j.err = fmt.Errorf("failed to %s: %w", j.what, err)
		}
	}
	if len(jobs) == 1 && jobs[0].ctx.Err() != nil {
		finish(jobs[0].ctx.Err())
		return false
	}
	// The transaction outlives any one caller's context: each body's
	// statements run under its own.
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		finish(err)
		return false
	}
	defer tx.Rollback()
	light := true
	for _, j := range jobs {
		light = light && j.o.light
	}
	if s.backend == BackendPostgres && !light {
		// One round trip takes the writers' lock and queues the wake-up,
		// which PostgreSQL delivers at commit (and drops on rollback). The
		// audit head is read by a later statement: this one's snapshot
		// was taken before it had the lock.
		if _, err := tx.Exec("SELECT pg_advisory_xact_lock($1), pg_notify($2, '')", lockWriters, notifyChannel); err != nil {
			finish(err)
			return false
		}
	}
	single := len(jobs) == 1
	kept := 0
	for _, j := range jobs {
		savepoint := !single && (savepoints || !j.o.cleanRefusals)
		if savepoint {
			if _, err := s.exec(context.Background(), tx, "SAVEPOINT batch_job"); err != nil {
				finish(err)
				return false
			}
		}
		// A body that started runs to its end even if its caller gives
		// up meanwhile: a statement cancelled half-way would cost the
		// whole batch its connection (pgx closes it).
		ferr := j.ctx.Err()
		if ferr == nil {
			ferr = j.f(context.WithoutCancel(j.ctx), tx)
		}
		var keep committedError
		switch {
		case ferr == nil || errors.As(ferr, &keep):
			if keep.error != nil {
				j.err = keep.error
			}
			kept++
		case isStoreError(ferr):
			j.err = ferr
		case !single && !savepoint:
			return true // part of it may be in the transaction
		default:
			j.err = fmt.Errorf("failed to %s: %w", j.what, ferr)
		}
		if !savepoint {
			continue
		}
		release := "RELEASE SAVEPOINT batch_job"
		if j.err != nil && keep.error == nil {
			release = "ROLLBACK TO SAVEPOINT batch_job"
			s.head.tx = nil // the rows it appended are gone
		}
		if _, err := s.exec(context.Background(), tx, release); err != nil {
			finish(err)
			return false
		}
		if release != "RELEASE SAVEPOINT batch_job" {
			if _, err := s.exec(context.Background(), tx, "RELEASE SAVEPOINT batch_job"); err != nil {
				finish(err)
				return false
			}
		}
	}
	if kept == 0 {
		return false // nothing to keep: the deferred rollback ends it
	}
	if err := tx.Commit(); err != nil {
		finish(err)
		return false
	}
	if !light {
		s.writes.Add(1)
		s.watch.kick()
	}
	return false
}

// LocalWrites counts the write transactions this process has committed
// (lease heartbeats aside). A reader that notes it before reading the
// change feed knows, when it has moved since, that a write of this
// process may not be in what it read.
func (s *DB) LocalWrites() uint64 { return s.writes.Load() }

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
	if st := s.stmt(ctx, q, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return q.ExecContext(ctx, s.Rebind(query), args...)
}

func (s *DB) queryRow(ctx context.Context, q execer, query string, args ...any) *sql.Row {
	if st := s.stmt(ctx, q, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.QueryRowContext(ctx, s.Rebind(query), args...)
}

func (s *DB) query(ctx context.Context, q execer, query string, args ...any) (*sql.Rows, error) {
	if st := s.stmt(ctx, q, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return q.QueryContext(ctx, s.Rebind(query), args...)
}

// maxStmts bounds the prepared statements kept (queries with a LIMIT
// written in differ by their number).
const maxStmts = 128

// stmt returns query prepared on SQLite, where preparing a statement costs
// about a third of a short query (pgx caches prepared statements per
// connection by itself), or nil to run it unprepared.
//
// A statement of a write transaction is never prepared from inside it:
// preparing needs a connection of the pool, which a body holding the write
// transaction must not wait for (an in-memory database has one), and a
// fresh connection's setup may need the lock that transaction holds. It
// runs unprepared the first time and is prepared after the transaction
// (prepareQueued); from then on the transaction uses the prepared
// statement, which database/sql prepares once per connection.
func (s *DB) stmt(ctx context.Context, q execer, query string) *sql.Stmt {
	if s.backend != BackendSQLite {
		return nil
	}
	if tx, ok := q.(*sql.Tx); ok {
		v, ok := s.stmts.Load(query)
		if !ok {
			if s.nstmts.Load() < maxStmts {
				s.toPrepare.Store(query, struct{}{})
			}
			return nil
		}
		return tx.StmtContext(ctx, v.(*sql.Stmt))
	}
	if s.path == ":memory:" || q != s.db {
		return nil
	}
	return s.prepared(ctx, query)
}

// prepareQueued prepares the statements write transactions ran unprepared
// (stmt). It runs outside any transaction.
func (s *DB) prepareQueued(ctx context.Context) {
	s.toPrepare.Range(func(k, _ any) bool {
		s.toPrepare.Delete(k)
		s.prepared(ctx, k.(string))
		return true
	})
}

// prepared returns query prepared on the database (not a transaction),
// preparing it if needed, or nil if it cannot be.
func (s *DB) prepared(ctx context.Context, query string) *sql.Stmt {
	v, ok := s.stmts.Load(query)
	if !ok {
		if s.nstmts.Load() >= maxStmts {
			return nil
		}
		st, err := s.db.PrepareContext(ctx, query)
		if err != nil {
			return nil // run unprepared: the error comes back from there
		}
		if v, ok = s.stmts.LoadOrStore(query, st); ok {
			st.Close()
		} else {
			s.nstmts.Add(1)
		}
	}
	return v.(*sql.Stmt)
}

func (o *Options) orDefault() *Options {
	if o == nil {
		return &Options{}
	}
	return o
}
