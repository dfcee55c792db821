// Package telegram is the approval channel that reaches supervisors through
// a Telegram bot, and takes their answers: Approve and Deny buttons,
// `/approve ID`, `/deny ID reason: …`, or a reply giving the reason a Deny
// button asked for. Decisions go through an approval.Decider (the broker)
// as supervisor "telegram:<chat id>".
//
// # Threat model
//
//   - Telegram decides only for a private chat listed in chat_ids, from
//     that chat's own user (chat.id == from.id), as supervisor
//     "telegram:<chat id>" (Supervisors lists them, for the broker). A
//     group in chat_ids is told but never decides. Any other update that
//     tries to decide is refused, audited (auth_failure; at most a few
//     rows per chat per minute, so a flood cannot bloat the chain) and
//     changes nothing.
//   - Telegram approves only what its message showed whole: when the
//     arguments or the risk were cut to fit, the message offers Deny alone
//     and points at the page (or `warden approvals show ID`), and an
//     approval from Telegram (a button press, forged or not, or /approve)
//     is refused, judged on the stored request.
//   - The Bot API is reached over https (plain http only to a loopback
//     address), so the token never crosses a network in clear; the token
//     is never logged, not even in an error.
//   - The messages kept to edit after a decision are bounded (expired
//     requests, then the oldest, are forgotten).
//   - A denial needs a reason (`/deny ID reason: …`, or a reply to the
//     question the Deny button asks).
//   - Updates are long-polled (no public URL); an update id already
//     handled is ignored, and a decision is the store's conditional update,
//     so a replay or a late press answers "already decided by X" and
//     changes nothing.
//   - Messages are plain text (no parse_mode), made from a notify.Summary:
//     redacted, cut, and printable.
//
// # Non-goals
//
// Telegram trusts Telegram: whoever controls a supervisor's Telegram
// account, or the bot token, decides as that supervisor. Several processes
// polling one bot take turns (the Bot API answers 409 to all but one); each
// decides in the shared store. A decision sent through Telegram while no
// warden process polls waits there (about 24 h) and is applied, or refused
// as late, when one polls again.
package telegram
