// Package server is the HTTP API of the approval flow, served by
// `warden serve`: list, show, approve and deny requests, and follow them as
// server-sent events; and the supervisor page, the same flow for a person
// in a browser.
//
//	GET  /healthz
//	GET  /api/approvals?status=pending&limit=N
//	GET  /api/approvals/stream
//	GET  /api/approvals/{id}
//	GET  /api/approvals/{id}/always    the lasting rule "always" would write
//	POST /api/approvals/{id}/approve   {"reason": "…", "grant_minutes": N} or {"always": true, "rules": [...]} (optional body)
//	POST /api/approvals/{id}/deny      {"reason": "…"} (reason required)
//	GET  /api/grants?all=1
//	POST /api/grants/{id}/revoke
//
// grant_minutes > 0 also grants the exact same call in the same session for
// N minutes, capped at grant_max_minutes; the answer then holds "grant".
// With "grant_scope": "workspace" the grant covers the call in every
// session of the request's agent in its workspace (not for file changes).
// always writes the narrowest rule that covers the call (or the rules
// given, which must be allow rules for the request's workspace that still
// allow the call) into the user config of the user running warden serve;
// the answer then holds "rules". A denial takes neither.
// The stream carries approval.requested, approval.decided, grant.created,
// grant.used, grant.revoked and grant.expired events.
//
// The pending list (status=pending) is answered from memory: a view of the
// pending requests kept from the same change feed as the stream
// (pending.go), each row encoded once per change. What this process wrote
// is in it at once (a list first reads the feed if this process wrote
// since the last read); what another process wrote, as soon as the stream
// has it (LISTEN/NOTIFY on PostgreSQL, the store's poll, 50 ms, on
// SQLite; the hub's poll if a notification is lost). A stale list costs a
// 409: every decision is checked by the store. Other lists read the
// database.
//
// The supervisor page (web*.go; html/template pages and static files
// embedded from web/):
//
//	GET  /signin, POST /signin, POST /signout
//	GET  /                  the live queue of pending requests and the active grants
//	GET  /requests/{id}     one request (the link channels send)
//	POST /requests/{id}/approve | deny (reason) | grant (minutes) | always (words, exact)
//	POST /grants/{id}/revoke
//	GET  /history           audit search (tool, decision, supervisor, event, time) and chain status
//	GET  /events, /cards/{id}, /grants   the page's own stream and fragments
//	GET  /checkpoints       every workspace's checkpoints (with Options.Checkpoints)
//	GET  /checkpoints/{ws}/{id}       one checkpoint and what undoing to it would change now
//	POST /checkpoints/{ws}/{id}/undo  (plan: the digest of the plan shown)
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
// The page signs a supervisor in with the same token, then uses a session
// cookie: 256 random bits, HttpOnly, SameSite=Strict, Secure when served
// over TLS, kept server-side (keyed by its SHA-256) with an idle expiry
// (SessionIdle) and an absolute one (SessionMax), replaced at each sign-in
// and deleted at sign-out. Every POST needs the session's CSRF token (form
// field or X-CSRF-Token header, constant-time compared) and must not come
// from another origin (Origin, Sec-Fetch-Site); the sign-in form has its
// own double-submit token. A missing or unknown cookie gets the sign-in
// page (GET) or 401 (POST, the page's data); refusals are audited like
// bad tokens, and a refused CSRF token gets the sign-in page (403).
//
// The cookie is not the only secret a decision needs. Browsers do not
// separate cookies by port, and 127.0.0.1:3000 is the same site as
// 127.0.0.1:8080, so SameSite does not keep the cookie from a server an
// agent runs on this host: a supervisor who opens it in the same browser
// sends it the cookie, and it can replay the cookie without Origin or
// Sec-Fetch headers. So the CSRF token is in no response to a GET (no
// meta tag, no form value): it is handed out once, in the answer to the
// sign-in POST, which needed the supervisor's secret token. The page's
// script keeps it in localStorage, which is per origin (scheme, host and
// port: another port cannot read it), fills it into each form as it is
// submitted, and forgets it on the sign-in page (after sign-out, an ended
// session or a refused token) and on a 401. Deciding therefore needs
// JavaScript; the page says so in a <noscript> note. What the cookie alone
// still gives: every GET — the queue, each request with its arguments and
// diff, the grants, the history and audit trail, the event stream — so a
// replayed cookie READS everything the supervisor can. Sign out before
// browsing servers an agent runs, or keep the page in its own browser
// profile, or open it under a host name used for nothing else (the cookie
// is host-only: set by warden.localhost:8080, it goes to that host on any
// port, never to 127.0.0.1:3000 or localhost:3000). Pages carry a Content-Security-Policy without inline script
// or style, nosniff, no-referrer and frame denial. Every string from a
// request (arguments, paths, diff lines, reasons) is escaped by
// html/template; the page's script moves only server-rendered fragments
// (parsed by DOMParser, never innerHTML) and sets text with textContent.
// Redirect targets are limited to the page's own paths. Decisions go
// through the broker, as the API's do.
//
// Every request but /healthz (the page, /api and, through Guard, /mcp)
// must name this server in Host and, when a browser sends an Origin, come
// from this server's own origin (origin.go): a DNS-rebinding page —
// attacker's content under the attacker's name, now resolving to
// 127.0.0.1 — sends its own name as Host; a page on any other origin,
// including another port of this host (an agent's dev server), sends its
// origin. Both get 403 with the reason, audited like bad tokens. Accepted
// Hosts: the address the connection reached, and on a loopback connection
// localhost and NAME.localhost (browsers resolve those themselves, never
// through DNS), each on the port reached; plus --allowed-host names.
// Accepted Origins: those hosts with the server's scheme, plus
// --allowed-origin. "Origin: null" passes only with Sec-Fetch-Site:
// same-origin (the page's own form posts under no-referrer). A request
// without Origin (curl, SDKs, navigations) is judged by Host and its
// credentials alone. The MCP specification requires this Origin check for
// Streamable HTTP.
//
// An undo is a state-changing POST like a decision, behind the same
// session, origin and CSRF checks. Its form carries the digest of the plan
// the page showed, and the undo applies that plan or nothing (the
// workspace changed meanwhile: 409, and the page shows the new plan). It
// writes through the checkpoint package's confinement (never outside the
// workspace, never a masked or protected path) and is audited, refused or
// done, with the supervisor who asked. Workspaces and checkpoints are
// named by ids the page listed, never by paths from the request.
//
// The API listens on loopback by default; `warden serve` refuses a
// non-loopback address without TLS unless --insecure-public is given
// (CheckAddr).
//
// # Non-goals
//
// No per-supervisor scoping: any supervisor may decide any request. No rate
// limiting of failed tokens or sign-ins beyond auditing them. Page
// sessions live in memory: a restart signs everyone out, and several
// replicas do not share them. An open event stream is checked at connect
// only: signing out does not close a stream already open in another tab.
// Behind a proxy that terminates TLS (--insecure-public) the cookie is
// not marked Secure. A replayed cookie is not detected: it reads the
// pages until the session ends. Any page of the same site may send the
// browser to /signin, which forgets the stored token: deciding then
// needs signing in again (a nuisance, not a decision). The history search reads the latest 5000 audit rows.
package server
