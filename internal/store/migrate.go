package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one versioned change to the schema, in each dialect.
// Migrations only ever get appended: a released one is never edited.
type migration struct {
	version          int
	name             string
	sqlite, postgres string
}

// schemaVersion is the newest schema this code writes and reads.
var schemaVersion = migrations[len(migrations)-1].version

var migrations = []migration{
	{1, "approval requests and the audit chain", schemaV1, pgSchemaV1},
	{2, "grants", schemaV2, pgSchemaV2},
	{3, "callers' leases", schemaV3, pgSchemaV3},
	{4, "an index of approval requests by call", schemaV4, schemaV4},
}

const schemaMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    BIGINT PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at BIGINT NOT NULL
)`

// migrate brings the schema up to schemaVersion in one transaction, which
// holds the migration lock (PostgreSQL: an advisory transaction lock;
// SQLite: BEGIN IMMEDIATE), so replicas starting at once apply each
// migration once: the first applies them, the others wait and find them
// applied. A database from a newer warden is refused, untouched.
func (s *DB) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("failed to open the store %s: %w", s.where, err)
	}
	defer tx.Rollback()
	if s.backend == BackendPostgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", lockMigrate); err != nil {
			return fmt.Errorf("failed to take the migration lock on %s: %w", s.where, err)
		}
	}
	if _, err := tx.ExecContext(ctx, schemaMigrationsTable); err != nil {
		return fmt.Errorf("failed to create the schema_migrations table in %s: %w", s.where, err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fmt.Errorf("failed to read the schema version of %s: %w", s.where, err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("failed to read the schema version of %s: %w", s.where, err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("failed to read the schema version of %s: %w", s.where, err)
	}
	changed := false
	if s.backend == BackendSQLite {
		if changed, err = s.adoptUserVersion(ctx, tx, applied); err != nil {
			return err
		}
	}
	for v := range applied {
		if v > schemaVersion {
			return fmt.Errorf("database %s has schema version %d, newer than this warden understands (%d): upgrade warden", s.where, v, schemaVersion)
		}
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		ddl := m.sqlite
		if s.backend == BackendPostgres {
			ddl = m.postgres
		}
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("failed to bring the schema of %s to version %d (%s): %w", s.where, m.version, m.name, err)
		}
		if err := recordMigration(ctx, s, tx, m); err != nil {
			return err
		}
		changed = true
	}
	if !changed {
		return nil // nothing to commit; the rollback releases the lock
	}
	if s.backend == BackendSQLite {
		// Older warden binaries read only user_version: keep it, so they
		// refuse a schema they do not know instead of writing to it.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
			return fmt.Errorf("failed to set the schema version of %s: %w", s.where, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("failed to migrate the schema of %s: %w", s.where, err)
	}
	return nil
}

func recordMigration(ctx context.Context, s *DB, tx *sql.Tx, m migration) error {
	_, err := s.exec(ctx, tx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("failed to record schema version %d of %s: %w", m.version, s.where, err)
	}
	return nil
}

// adoptUserVersion records, in a SQLite database written before
// schema_migrations existed, the versions its PRAGMA user_version says were
// applied.
func (s *DB) adoptUserVersion(ctx context.Context, tx *sql.Tx, applied map[int]bool) (bool, error) {
	var uv int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&uv); err != nil {
		return false, fmt.Errorf("failed to read the schema version of %s: %w", s.where, err)
	}
	switch {
	case uv < 0:
		return false, fmt.Errorf("database %s has an invalid schema version %d", s.where, uv)
	case uv > schemaVersion:
		return false, fmt.Errorf("database %s has schema version %d, newer than this warden understands (%d): upgrade warden", s.where, uv, schemaVersion)
	case len(applied) > 0 || uv == 0:
		return false, nil
	}
	for _, m := range migrations[:uv] {
		if err := recordMigration(ctx, s, tx, m); err != nil {
			return false, err
		}
		applied[m.version] = true
	}
	return true, nil
}

// SchemaVersions returns the versions recorded in schema_migrations, oldest
// first.
func (s *DB) SchemaVersions(ctx context.Context) ([]int, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		return nil, fmt.Errorf("failed to read the schema versions of %s: %w", s.where, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// schemaV4 indexes requests by their call's binding hash, which every
// supervised call looks up (List with Filter.ArgsHash) before it asks, and
// replaces the index by state with one that holds List's whole order
// (created_at, seq), so listing the newest pending requests reads just
// those rows instead of sorting ties; the same DDL on both databases.
const schemaV4 = `
CREATE INDEX approvals_args_hash ON approvals(args_hash, created_at, seq);
CREATE INDEX approvals_state_order ON approvals(state, created_at, seq);
DROP INDEX approvals_state;
`

// The schema on SQLite. Times are Unix milliseconds.
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

const schemaV2 = `
CREATE TABLE grants (
	grant_id    TEXT PRIMARY KEY,
	approval_id TEXT NOT NULL REFERENCES approvals(request_id),
	tool        TEXT NOT NULL,
	args_hash   TEXT NOT NULL,
	arguments   TEXT NOT NULL,
	workspace   TEXT NOT NULL DEFAULT '',
	session_id  TEXT NOT NULL,
	agent       TEXT NOT NULL DEFAULT '',
	created_by  TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	revoked_by  TEXT NOT NULL DEFAULT '',
	revoked_at  INTEGER NOT NULL DEFAULT 0,
	uses        INTEGER NOT NULL DEFAULT 0,
	last_event  TEXT NOT NULL CHECK (last_event IN ('created','used','revoked','expired')),
	seq         INTEGER NOT NULL
);
CREATE UNIQUE INDEX grants_seq ON grants(seq);
CREATE INDEX grants_match ON grants(args_hash, expires_at);
CREATE INDEX grants_live ON grants(last_event, expires_at);
`

// Version 3: a caller's liveness is a lease row it renews; a request
// names the lease of the process waiting for it.
const schemaV3 = `
CREATE TABLE leases (
	lease_id    TEXT PRIMARY KEY,
	host        TEXT NOT NULL DEFAULT '',
	pid         INTEGER NOT NULL DEFAULT 0,
	start       INTEGER NOT NULL DEFAULT 0,
	acquired_at INTEGER NOT NULL,
	renewed_at  INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL
);
CREATE INDEX leases_expiry ON leases(expires_at);
ALTER TABLE approvals ADD COLUMN owner_lease TEXT NOT NULL DEFAULT '';
CREATE INDEX approvals_lease ON approvals(owner_lease);
`

// The same schema on PostgreSQL: 64-bit integers where SQLite's INTEGER
// is 64-bit already.
const pgSchemaV1 = `
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
	decided_at       BIGINT NOT NULL DEFAULT 0,
	reason           TEXT NOT NULL DEFAULT '',
	execution_result TEXT NOT NULL DEFAULT '',
	claimed          INTEGER NOT NULL DEFAULT 0,
	created_at       BIGINT NOT NULL,
	expires_at       BIGINT NOT NULL,
	owner_host       TEXT NOT NULL DEFAULT '',
	owner_pid        BIGINT NOT NULL DEFAULT 0,
	owner_start      BIGINT NOT NULL DEFAULT 0,
	seq              BIGINT NOT NULL
);
CREATE UNIQUE INDEX approvals_seq ON approvals(seq);
CREATE INDEX approvals_state ON approvals(state, created_at);
CREATE TABLE audit (
	id         BIGINT PRIMARY KEY,
	time       BIGINT NOT NULL,
	event      TEXT NOT NULL,
	request_id TEXT NOT NULL DEFAULT '',
	record     TEXT NOT NULL,
	prev_hash  TEXT NOT NULL,
	hash       TEXT NOT NULL
);
CREATE INDEX audit_request ON audit(request_id);
CREATE INDEX audit_event ON audit(event, id);
`

const pgSchemaV2 = `
CREATE TABLE grants (
	grant_id    TEXT PRIMARY KEY,
	approval_id TEXT NOT NULL REFERENCES approvals(request_id),
	tool        TEXT NOT NULL,
	args_hash   TEXT NOT NULL,
	arguments   TEXT NOT NULL,
	workspace   TEXT NOT NULL DEFAULT '',
	session_id  TEXT NOT NULL,
	agent       TEXT NOT NULL DEFAULT '',
	created_by  TEXT NOT NULL,
	created_at  BIGINT NOT NULL,
	expires_at  BIGINT NOT NULL,
	revoked_by  TEXT NOT NULL DEFAULT '',
	revoked_at  BIGINT NOT NULL DEFAULT 0,
	uses        BIGINT NOT NULL DEFAULT 0,
	last_event  TEXT NOT NULL CHECK (last_event IN ('created','used','revoked','expired')),
	seq         BIGINT NOT NULL
);
CREATE UNIQUE INDEX grants_seq ON grants(seq);
CREATE INDEX grants_match ON grants(args_hash, expires_at);
CREATE INDEX grants_live ON grants(last_event, expires_at);
`

const pgSchemaV3 = `
CREATE TABLE leases (
	lease_id    TEXT PRIMARY KEY,
	host        TEXT NOT NULL DEFAULT '',
	pid         BIGINT NOT NULL DEFAULT 0,
	start       BIGINT NOT NULL DEFAULT 0,
	acquired_at BIGINT NOT NULL,
	renewed_at  BIGINT NOT NULL,
	expires_at  BIGINT NOT NULL
);
CREATE INDEX leases_expiry ON leases(expires_at);
ALTER TABLE approvals ADD COLUMN owner_lease TEXT NOT NULL DEFAULT '';
CREATE INDEX approvals_lease ON approvals(owner_lease);
`
