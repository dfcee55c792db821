// Package notify holds the channels that tell a person an approval request
// waits: a signed webhook, Slack, Discord and email (Telegram, which also
// takes answers, is package telegram, built on this one). Each is an
// approval.Channel; none decides anything. It also holds what they share:
// the Outbox that delivers in the background, and the Summary of a request
// every message is made from.
//
// # Threat model
//
//   - Channels only tell; a failing one never blocks Ask, another channel
//     or a decision. Each queues its messages (bounded; a full queue
//     refuses, Notify never waits) and delivers them in the background,
//     retried with exponential backoff and jitter up to a bounded number of
//     attempts, then logged and dropped. Close delivers what is queued
//     until a deadline.
//   - Messages carry no secret: arguments go through audit.Sanitize and are
//     cut short, the risk (whose diff shows file contents) through
//     audit.Excerpt, the webhook's too; a secret env value or key-shaped
//     string is redacted. Agent text is escaped for each service's markup:
//     Slack's & < >, Discord's markdown and mentions (and allowed_mentions
//     parses none), none for Telegram (plain text, no parse_mode); the
//     arguments sit in code blocks whose fence they cannot close. A Summary
//     says when it shows only an excerpt (Cut), so that a channel that takes
//     answers never offers to approve what it did not show. Links point
//     only at page_url + "/requests/" + id. Webhook URLs and tokens come
//     from environment variables and are never logged (an HTTP error names
//     the service, not the URL).
//   - Email needs STARTTLS, verified for the host of smtp_addr (plus
//     ca_file): a server that does not offer it gets nothing, not even the
//     credentials (AUTH PLAIN after TLS only). Headers carry no agent text
//     but the tool name reduced to [A-Za-z0-9_.-]; addresses are checked.
//   - The webhook body is signed: X-Warden-Signature is the HMAC-SHA256 of
//     the body under a secret of at least 16 bytes.
//
// # Non-goals
//
// The webhook only notifies; its receiver must verify X-Warden-Signature
// and decide through the API. Slack, Discord and email only notify (a
// supervisor follows the link to the page); whoever reads those channels
// sees the redacted excerpt.
package notify
