// Package mcp connects warden to the Model Context Protocol in both
// directions.
//
// As a server (NewServer, `warden mcp` over stdio, NewHTTPHandler under
// `warden serve`), it exposes the tools of warden's engine with their JSON
// Schemas and hints, and every call goes through the engine: confinement,
// hard guards, policy, approvals, sandbox and audit. A refusal is a tool
// result with isError set and the reason as its text. A supervised call
// waits for a decision from any channel of the approval broker; when the
// client can elicit, the Elicitor also asks the person through a form in the
// client, and the first decision wins. While it waits, a call that carries a
// progress token gets progress notifications naming the request. MCP clients
// give up on a call after about a minute, so past ServerOptions.ApprovalWait
// (security.approval.mcp_wait_secs) the call answers the model with the
// request id, that a person has been asked and that it can make the same
// call again; the request stays pending, owned by no process. The same call
// made again waits on it, runs once if it was approved meanwhile, or gets
// the denial. A call the client cancels leaves its request pending too:
// nothing is cancelled because a client gave up.
//
// As a client (Connect), it registers the tools of remote MCP servers as
// mcp__<server>__<tool>: sensitive, in group "mcp", so they meet the same
// policy and approvals as any other tool. Their results reach the model
// wrapped as untrusted data (WrapUntrusted).
//
// # Threat model
//
//   - The MCP client of `warden mcp` (the agent host) is the party warden
//     confines: it can call any exposed tool with any arguments, and nothing
//     it sends skips the engine. Over stdio, stdout carries only the
//     protocol. Its messages are read by NewStdioTransport, which bounds a
//     message to MaxLineLength bytes and maxDepth levels of nesting before
//     parsing it, and refuses anything but one JSON value on a line.
//   - Over HTTP, a client must present one of the configured bearer tokens
//     (compared in constant time, at least MinTokenLen characters); a session
//     is bound to the client that opened it, and the SDK refuses a non-local
//     Host on a loopback connection (DNS rebinding). Serving off loopback
//     without TLS is `warden serve`'s decision, not this package's.
//   - A remote MCP server is untrusted: what it returns is data for the
//     model, marked as such, cut at MaxResultBytes; non-text content is
//     described, not passed on. Its token goes only to its own URL (no
//     redirects followed, no proxy, never over plain http off loopback); a
//     successful response that is neither application/json nor
//     text/event-stream is refused.
//   - Tool definitions are pinned (Pins): the hash of each tool's name,
//     description, schemas and hints is stored on first use, and a tool
//     whose definition changed, or that appeared later, is refused (its new
//     description never reaches the model) until the user runs
//     `warden mcp trust SERVER`. This holds after connect too: on every
//     notifications/tools/list_changed warden lists the tools again, and a
//     registered tool whose definition no longer matches is refused by its
//     guard (before any approval) and again before the call is forwarded;
//     a tool added later is not offered until trusted and warden restarts;
//     a change whose list cannot be read refuses every call of the server.
//   - A stdio server of a sandboxed workspace runs in a jail of the
//     workspace (ClientOptions.Jail, built like the tools' jail: same masks,
//     lockdown, network and limits), never on the host; it is started by
//     the user's configuration (a workspace file cannot add servers), so it
//     is trusted to start but confined in what it does. It dies with the
//     session, with the jail, and with warden.
//   - Logs carry session ids cut to 12 characters and arguments cut to
//     LogArgsMax characters with secrets redacted; the literal value of a
//     token is never logged.
//
// # Not covered
//
//   - Pinning guards definitions, not behaviour: a trusted server can
//     still return anything, which is why its results are marked untrusted
//     and its tools are sensitive.
//   - Without a sandbox, stdio MCP servers run as child processes with an
//     allowlisted environment in the workspace directory, unconfined.
//   - A stdio server that exits, or whose jail is reset, is not restarted:
//     its calls fail until warden starts again.
//   - The re-check before a call compares with the list the server last
//     announced; a server that changes a definition without announcing it
//     still gets only calls that match the trusted schema (what it then does
//     is behaviour, which pinning does not cover).
//   - The stateless protocol revision (2026-07-28) is not served: it forbids
//     the elicitation warden uses during an approval wait
//     (ProtocolVersions).
//   - The elicitation form is shown by the client: warden cannot prove that
//     a person, and not the agent host itself, answered it. A supervisor who
//     must not trust the host decides through the store instead, and
//     configures no elicitation (Approver.Eliciting nil).
package mcp
