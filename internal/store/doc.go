// Package store keeps warden's approval requests and its audit trail in a
// database that several processes share: a `warden tool call` waiting in one
// terminal is decided by `warden approvals approve` in another, or by
// `warden serve`.
//
// The default backend is SQLite (modernc.org/sqlite, pure Go) in WAL mode
// with a busy timeout, at $XDG_STATE_HOME/warden/warden.db. The schema is
// versioned with PRAGMA user_version. Everything sits behind the Store
// interface so a PostgreSQL backend can follow with the same schema.
//
// # Threat model
//
// Deciding is a conditional update (… WHERE request_id = ? AND state =
// 'PENDING' AND expires_at > now): of any number of concurrent decisions in
// any number of processes exactly one wins, and a decision after a timeout or
// after another decision is refused with ErrConflict. An approved request is
// handed to its executor once (Claim is conditional too), and Executed moves
// it to EXECUTED once. Every transition and the audit row that records it are
// written in one transaction: there is no decision without its audit row.
//
// The audit table is a hash chain: each row stores the SHA-256 of the
// previous row's hash and its own content, so editing, deleting or reordering
// rows is detected by VerifyAudit, which names the first broken row.
//
// Requests left PENDING (or approved but never claimed) by a process that
// died are CANCELLED by SweepOrphans, with an audit row, and never executed.
// A process is identified by host, pid and the pid's start time, so a reused
// pid does not keep a dead owner's request alive.
//
// Grants (schema version 2) follow the same rules: a grant is written in
// the transaction that approves its request, conditional on that request
// being PENDING and unexpired; using one counts the use and stores the
// granted request in one transaction, re-checking expiry and revocation
// at the store's clock; revoking is conditional on the grant being active.
// grant_created, grant_used, grant_revoked and grant_expired rows join the
// audit chain.
//
// # Non-goals
//
// The store trusts whoever can write the database file: the file is created
// 0600 in a 0700 directory, and a local user who can write it can decide any
// request or rewrite the whole audit chain. The chain makes partial edits
// evident; it does not stop a writer who recomputes every hash from the
// tampered row on. Anchor the head hash (VerifyAudit's result) elsewhere, or
// keep the JSON-lines audit mirror on another machine, to detect that.
// Arguments are stored as the caller gives them; sanitising them for logs is
// the audit package's job.
package store
