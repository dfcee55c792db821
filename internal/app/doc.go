// Package app composes warden: from the configuration and the command
// line's choices it builds what one invocation runs tool calls with — the
// workspace (os.Root), its jail when the workspace has a [sandbox] section,
// the approvals and audit store, the approval broker and its channels, the
// tools, and the engine over them — and closes it all again. cmd/warden
// only parses flags, calls this package, and prints.
//
// # Threat model
//
// This package decides nothing itself; it must only never weaken what the
// packages it wires decide:
//
//   - A workspace with a [sandbox] section gets every effect through its
//     jailed worker (files and commands, post-edit hooks, stdio MCP
//     servers in a jail of their own); there is no fallback to the host.
//     An invalid [sandbox] section runs in lockdown and says so.
//   - Every tool call goes through the one engine, with the audit sinks and
//     the approver built here; an upstream MCP server's tools are served
//     through the same engine, never around it.
//   - The approver fails safe: without a terminal, a remote channel or an
//     MCP client that elicits, a supervised call is refused (the broker's
//     ErrNoChannel). `warden mcp` never prompts on the terminal: stdin is
//     the protocol.
//   - Secrets (webhook URLs, tokens) are read from the environment by the
//     channel packages, never logged here.
//
// # Non-goals
//
// Flags, output and exit statuses are cmd/warden's. Listening for HTTP is
// package server's (ListenAndServe).
package app
