// Package approval decides supervised tool calls: auto-approve rules first,
// then a person, reached through the terminal prompt, the CLI
// (`warden approvals`), the HTTP API of `warden serve`, a webhook, Slack,
// Discord, email or Telegram.
//
// A supervised call becomes a request in the shared store (package store)
// with an unguessable id (128 random bits), the tool, its canonical
// arguments and a SHA-256 binding them to the workspace and session. The
// Broker waits for the request to leave PENDING, polling the store so that a
// decision made by another process is seen within DefaultPoll, and racing
// the terminal prompt when there is one.
//
// # Threat model
//
//   - What runs is what was approved: an approved Outcome carries the
//     stored canonical arguments, re-hashed against the binding hash before
//     they are handed out, and the caller runs those, not its own copy.
//   - Exactly one decision wins (a conditional update in the store); a late
//     one is refused. An approval is handed out once (Claim), and recorded
//     as executed once.
//   - Only configured supervisors decide through Decide. The person at the
//     terminal that started this process decides its own prompts, as
//     "terminal". Who is a supervisor on the CLI is not proven by a secret:
//     the local user who can write the database is trusted (the HTTP API
//     requires each supervisor's bearer token).
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
//   - Channels (webhook, Slack, Discord, Telegram, email) only tell; a
//     failing one never blocks Ask, another channel or a decision. Each
//     queues its messages (bounded; a full queue refuses, Notify never
//     waits) and delivers them in the background, retried with exponential
//     backoff and jitter up to a bounded number of attempts, then logged
//     and dropped. Close delivers what is queued until a deadline.
//   - Messages carry no secret: arguments go through audit.Sanitize and are
//     cut short, the risk (whose diff shows file contents) through
//     audit.Excerpt, the webhook's too; a secret env value or key-shaped
//     string is redacted. Agent
//     text is escaped for each service's markup: Slack's & < >, Discord's
//     markdown and mentions (and allowed_mentions parses none), none for
//     Telegram (plain text, no parse_mode); the arguments sit in code
//     blocks whose fence they cannot close. Links point only at
//     page_url + "/requests/" + id. Webhook URLs and the bot token come from
//     environment variables and are never logged.
//   - Telegram decides only for a private chat listed in chat_ids, from
//     that chat's own user (chat.id == from.id), as supervisor
//     "telegram:<chat id>" (FromConfig adds these to the supervisors). A
//     group in chat_ids is told but never decides. Any other update that
//     tries to decide is refused, audited (auth_failure; at most a few
//     rows per chat per minute, so a flood cannot bloat the chain) and
//     changes nothing. Telegram approves only what its message showed
//     whole: when the arguments or the risk were cut to fit, the message
//     offers Deny alone and points at the page (or `warden approvals
//     show ID`), and an approval from Telegram (a button press, forged or
//     not, or /approve) is refused, judged on the stored request. The Bot
//     API is reached over https (plain http only to a loopback address),
//     so the token never crosses a network in clear. The messages kept to
//     edit after a decision are bounded (expired requests, then the
//     oldest, are forgotten). A denial needs a reason (`/deny ID reason: …`, or a reply to
//     the question the Deny button asks). Updates are long-polled (no
//     public URL); an update id already handled is ignored, and a decision
//     is the store's conditional update, so a replay or a late press answers
//     "already decided by X" and changes nothing.
//   - Email needs STARTTLS, verified for the host of smtp_addr (plus
//     ca_file): a server that does not offer it gets nothing, not even the
//     credentials (AUTH PLAIN after TLS only). Headers carry no agent text
//     but the tool name reduced to [A-Za-z0-9_.-]; addresses are checked.
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
//
// # Non-goals
//
// Patterns are RE2 searches as the user wrote them: an unanchored or broad
// pattern approves what it matches. The webhook only notifies; its receiver
// must verify X-Warden-Signature and decide through the API. Slack,
// Discord and email only notify (a supervisor follows the link to the
// page); whoever reads those channels sees the redacted excerpt. Telegram
// trusts Telegram: whoever controls a supervisor's Telegram account, or
// the bot token, decides as that supervisor. Several processes polling one
// bot take turns (the Bot API answers 409 to all but one); each decides in
// the shared store. A decision sent through Telegram while no warden
// process polls waits there (about 24 h) and is applied, or refused as
// late, when one polls again. The engine, not
// this package, applies hard guards (blocklist, confinement) before a call
// is ever supervised. Collapsing is per Broker (per process): identical
// calls from two processes are two requests. A grant cannot tell two
// agents of one session apart, and it lets the same call run repeatedly
// until it expires or is revoked: keep grants short.
package approval
