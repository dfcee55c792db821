// Package approval decides supervised tool calls: auto-approve rules first,
// then a person, reached through the terminal prompt, the CLI
// (`warden approvals`), the HTTP API of `warden serve` or a webhook.
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
//
// # Non-goals
//
// Patterns are RE2 searches as the user wrote them: an unanchored or broad
// pattern approves what it matches. The webhook only notifies; its receiver
// must verify X-Warden-Signature and decide through the API. The engine, not
// this package, applies hard guards (blocklist, confinement) before a call
// is ever supervised.
package approval
