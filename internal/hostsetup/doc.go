// Package hostsetup writes, and checks, what an agent host needs to be
// guarded by warden: Claude Code, Codex, Gemini CLI and Cursor.
//
// For each host it plans the changes to the host's own configuration files
// (Plan): warden's MCP server entry, started with the environment warden
// needs passed through — where its configuration and database are, and the
// secrets its configuration names, always by reference to the variable,
// never by value —; the hook entries that send every one of the host's own
// tool calls to `warden hook HOST` (with a timeout above [hooks] wait_secs);
// permission rules that let the host run warden's MCP tools without asking
// again (a person is asked once, by warden) and, when warden is meant to be
// the only path, deny the host's own tools; the host's MCP tool timeout
// above security.approval.mcp_wait_secs; and what the host needs before it
// runs a hook at all (Codex: its hook trust, or a managed requirements.toml;
// and no terminal for commands, whose later input Codex does not pass to
// hooks). Check reads the same files and says what is missing.
//
// A plan is shown as a diff of each file; written, every file that existed
// is first copied to FILE.warden-backup-TIMESTAMP, and the new content is
// written atomically (temporary file, then rename). Entries of the user's
// own are kept: only warden's keys are set.
//
// # Threat model
//
// The files written configure a host the user runs; nothing here runs with
// more privilege than the user (a managed Codex requirements.toml is
// written only where the user can write it, i.e. as root). Secrets never
// enter a host's configuration file: an entry names the variable, and the
// host passes its value on when it starts warden.
//
// # Not covered
//
// Keys are set, not merged deeply into every shape a host accepts: a hook
// list or server entry of warden's is replaced whole. Comments in a Codex
// config.toml are kept outside warden's own tables only.
package hostsetup
