// Package approval decides supervised tool calls: auto-approve rules first,
// then a grant, then a person, reached through the terminal prompt, the CLI
// (`warden approvals`), the HTTP API of `warden serve`, or a channel of
// package notify (webhook, Slack, Discord, email, Telegram).
//
// A supervised call becomes a request in the shared store (package store)
// with an unguessable id (128 random bits), the tool, its canonical
// arguments and a SHA-256 binding them to the workspace, the session and,
// for a call that changes files, where each change lands (Targets). The
// Broker waits for the request to leave PENDING, woken by the store's watch
// (at once for a decision of any process on PostgreSQL, within 50 ms on
// SQLite; DefaultPoll is a safety net), and racing the terminal prompt when
// there is one. While requests of the process wait it holds a lease in the
// store (Options.Lease): if the process dies or is cut off from the database
// for a lease period, its requests are cancelled and never run, and a wait
// whose lease was lost ends cancelled. Channels are told (Channel); those
// that take answers (Listener) decide through the broker (Decider), like
// any supervisor.
//
// # Threat model
//
//   - What runs is what was approved: an approved Outcome carries the
//     stored canonical arguments, re-hashed against the binding hash before
//     they are handed out, and the caller runs those, not its own copy.
//   - A path names a place only until a directory on the way becomes a
//     link: the request carries Targets, where each change really lands
//     (resolved by package workspace when the call was judged), the person
//     is told first when one differs from its path, they are part of the
//     binding hash (so a grant made for one place does not cover another),
//     a path_pattern must match them as well, and the engine runs the call
//     pinned to them: a path that leads elsewhere by then is refused
//     (workspace.ErrMoved), not written.
//   - Exactly one decision wins (a conditional update in the store); a late
//     one is refused. An approval is handed out once (Claim), and recorded
//     as executed once.
//   - Only configured supervisors decide through Decide. The person at the
//     terminal that started this process decides its own prompts, as
//     "terminal". The HTTP API requires each supervisor's bearer token, and
//     so does the CLI (ProveSupervisor): `warden approvals approve --as
//     alice` takes alice's token from her token_env or asks for it on the
//     terminal, and compares it with her token_file when she has one. Any
//     process of the user can write the database; only the token makes a
//     decision a supervisor's. Processes that hold tokens (serve, mcp, run)
//     hide their environment from the user's other processes (package
//     secretenv), and commands never receive it.
//   - A command_pattern only auto-approves a command whose every simple
//     command matches, judged on the parse ("^ls " cannot approve
//     "ls; rm -rf x"); anything the judge cannot vouch for is asked. A
//     path_pattern sees the cleaned workspace-relative path and never an
//     absolute or escaping one; a url_pattern sees the URL re-serialised from
//     its parse, without user info.
//   - With no way to reach a person, Ask fails safe with ErrNoChannel.
//   - Text from the agent (arguments, risk) is escaped before it reaches a
//     terminal: no escape sequence can repaint the prompt. Reasons are
//     cleaned of control characters before they reach the agent.
//   - A request whose process died is cancelled at the next start, never
//     executed.
//   - Channels only tell: a failing one never blocks Ask, another channel
//     or a decision (Notify must return at once; package notify queues).
//     A channel that takes answers decides through Decide, as the
//     supervisor it is configured as, and nothing else.
//   - Grants (ApproveWithGrant) fight approval fatigue without widening
//     what was approved: a grant covers only the exact call of the request
//     it was made on (tool, canonical arguments, workspace and session,
//     bound by the binding hash and compared column by column), for at most
//     GrantMax (grant_max_minutes, default 60; a longer ask is capped). It
//     is created in the same conditional transaction as the approval, so a
//     denial, or a request already decided, expired or executed, never
//     gets one; a request with no session cannot get one. Only a
//     supervisor creates or revokes one. Every use is its own APPROVED
//     request, decision "granted", decided_by the grant's creator, and
//     creation, use, revocation and expiry are rows of the audit chain.
//   - Identical calls (same binding hash) asked while one is PENDING in
//     the same Broker collapse into it: one row, one notification, one
//     decision for all of them. Each approved waiter runs; the first result
//     marks the request EXECUTED and the others are approval_executed audit
//     rows on it. A waiter that gives up leaves; only the last one cancels
//     the request. Calls from different sessions never collapse.
//   - A request may outlive its caller (Request.MaxWait: an MCP call past
//     mcp_wait_secs, a host's hook past wait_secs): the caller leaves with a
//     *PendingError and the request stays PENDING, handed to no process
//     (store.Unowned) so no sweep cancels it, until a person decides it or
//     it expires. The identical call (same binding hash, compared column by
//     column) made again takes it up: it waits on it, runs it once if it was
//     approved (claimed like any approval), or gets a denial nobody
//     received. A decision the waiting caller received is never taken up
//     again. A caller's context ending does not cancel such a request.
//   - Foresee says what Ask would decide without a person (an auto-approve
//     rule, an active grant) with no side effect, so that explain and a
//     call agree (package engine's decision stage).
//
// # Without a jail, a command runs as the user
//
// Approving a command on a workspace without a sandbox runs it on the host,
// as the user, with everything the user can do: read any file the user can
// (a token_file, the shell profile that exports a token, ~/.ssh), write the
// approval database, start processes, change .git behind the file tools'
// back. No check in this package can take back what such a command was
// allowed to do — including deciding its own next request with a token it
// read. The answer is the jail ([sandbox] in the workspace's config): the
// command then sees only the workspace (masked files hidden, git's control
// files read-only, no home directory, no database, no tokens in its
// environment). Approve host commands as you would run them yourself.
//
// # Non-goals
//
// Patterns are RE2 searches as the user wrote them: an unanchored or broad
// pattern approves what it matches. The engine, not this package, applies
// hard guards (blocklist, confinement) before a call is ever supervised.
// Collapsing is per Broker (per process): identical calls from two
// processes are two requests. A grant cannot tell two agents of one
// session apart, and it lets the same call run repeatedly until it expires
// or is revoked: keep grants short. What a channel shows and whom it
// trusts is package notify's (and package telegram's) to say.
package approval
