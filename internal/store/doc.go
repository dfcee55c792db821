// Package store keeps warden's approval requests, grants, callers' leases
// and its audit trail in a database that several processes share: a
// `warden tool call` waiting in one terminal is decided by `warden
// approvals approve` in another, or by any of several `warden serve`
// replicas.
//
// Two backends run the same statements behind the Store interface:
//
//   - SQLite (modernc.org/sqlite, pure Go), the default, in WAL mode with a
//     busy timeout, at $XDG_STATE_HOME/warden/warden.db: one machine.
//   - PostgreSQL (github.com/jackc/pgx/v5, a connection pool), for a team:
//     any number of processes on any hosts. The URL comes from an
//     environment variable ([store] url_env, default WARDEN_DATABASE_URL;
//     --db postgres:NAME), never from a file or the command line: a URL
//     with a password given as --db is refused (ParseLocator).
//
// The schema is versioned: each migration is recorded in schema_migrations
// and applied in one transaction that holds a migration lock (an advisory
// lock on PostgreSQL, BEGIN IMMEDIATE on SQLite), so replicas that start at
// once migrate it once. A database from a newer warden is refused.
//
// # Threat model
//
// Deciding is a conditional update (… WHERE request_id = ? AND state =
// 'PENDING' AND expires_at > now AND the caller's lease is live): of any
// number of concurrent decisions in any number of processes exactly one
// wins, and a decision after a timeout or after another decision is refused
// with ErrConflict. An approved request is handed to its executor once
// (Claim is conditional too), and MarkExecuted moves it to EXECUTED once.
// Every transition and the audit row that records it are written in one
// transaction: there is no decision without its audit row.
//
// Writers are serialised: SQLite has one writer; on PostgreSQL every
// transaction that changes requests, grants or the audit chain first takes
// one advisory transaction lock. Within one process, writers that queue
// behind each other share one transaction (group commit), each in its own
// savepoint, so one that fails is rolled back alone. So the change sequence (Changes) and the
// audit chain's ids are handed out in commit order, and the audit table is
// one hash chain whatever the number of writing processes: each row stores
// the SHA-256 of the previous row's hash and its own content, so editing,
// deleting or reordering rows is detected by VerifyAudit, which names the
// first broken row.
//
// A waiting caller's liveness is a lease (Leases, LeaseKeeper): a row it
// renews every third of the lease period, judged by the store's clock (on
// PostgreSQL the database server's, so replicas whose clocks disagree agree
// on expiry). Once a lease runs out it is never renewed again; the
// requests of its holder are then never decided, claimed or executed: a
// decision or claim on one cancels it (with an audit row) and is refused,
// and SweepOrphans cancels the rest. A process that dies (SIGKILL) or is cut
// off from the database therefore has its requests CANCELLED within the
// lease period, and cannot run one when it comes back. A sweeper on the
// caller's own host also checks its pid and the pid's start time, so the
// requests of a local process that exited are cancelled at once, without
// waiting for the lease (a reused pid does not keep them alive); requests
// without a lease (written before leases) are judged that way only. Hosts
// are told apart by hostname: two hosts (or containers) sharing one name
// and one database may cancel each other's requests early (never run them).
//
// Grants follow the same rules: a grant is written in the transaction that
// approves its request, conditional on that request being PENDING and
// unexpired; using one counts the use and stores the granted request in one
// transaction, re-checking expiry and revocation at the store's clock;
// revoking is conditional on the grant being active. grant_created,
// grant_used, grant_revoked and grant_expired rows join the audit chain.
//
// Watch wakes waiters when a request changes: at once for a change made by
// this process; through LISTEN/NOTIFY for another process's on PostgreSQL
// (with a slow poll as a safety net for a notification lost with its
// connection); by a poll (50 ms) on SQLite.
//
// # Non-goals
//
// The store trusts whoever can write the database: the SQLite file is
// created 0600 in a 0700 directory, and on PostgreSQL anyone with the
// role's password. Such a writer can decide any request or rewrite the
// whole audit chain. The chain makes partial edits evident; it does not stop
// a writer who recomputes every hash from the tampered row on. Anchor the
// head hash (VerifyAudit's result) elsewhere, or keep the JSON-lines audit
// mirror on another machine, to detect that. Give warden's role only the
// privileges it needs on its own database. TLS to PostgreSQL is whatever
// the URL asks for (sslmode=verify-full for a server off the host).
// Arguments are stored as the caller gives them; sanitising them for logs
// is the audit package's job.
package store
