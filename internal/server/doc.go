// Package server is the HTTP API of the approval flow, served by
// `warden serve`: list, show, approve and deny requests, and follow them as
// server-sent events.
//
//	GET  /healthz
//	GET  /api/approvals?status=pending&limit=N
//	GET  /api/approvals/stream
//	GET  /api/approvals/{id}
//	POST /api/approvals/{id}/approve   {"reason": "…", "grant_minutes": N} (optional body)
//	POST /api/approvals/{id}/deny      {"reason": "…"} (reason required)
//	GET  /api/grants?all=1
//	POST /api/grants/{id}/revoke
//
// grant_minutes > 0 also grants the exact same call in the same session for
// N minutes, capped at grant_max_minutes; the answer then holds "grant".
// The stream carries approval.requested, approval.decided, grant.created,
// grant.used, grant.revoked and grant.expired events.
//
// # Threat model
//
// Every /api call needs "Authorization: Bearer <token>", where the token is
// one supervisor's, read from the environment variable its token_env names.
// Tokens are compared in constant time (as SHA-256 digests, so their length
// does not leak) against every supervisor's, and the supervisor a token
// belongs to is decided_by: a body cannot name who decides (bodies are size
// limited and strictly decoded; unknown fields are refused). Refused
// credentials are audited. Decisions go through the broker, so the store's
// conditional update makes exactly one of concurrent decisions win and
// refuses late ones with 409. A grant is created only by an approval
// (grant_minutes on deny is refused), by the supervisor whose token it is, and
// never on a request already decided.
//
// The API listens on loopback by default; `warden serve` refuses a
// non-loopback address without TLS unless --insecure-public is given
// (CheckAddr).
//
// # Non-goals
//
// No sessions, cookies or CSRF tokens: a browser page must send the bearer
// token itself. No per-supervisor scoping: any supervisor may decide any
// request. No rate limiting of failed tokens beyond auditing them.
package server
