// Package hook decides the tool calls of the agents people already use —
// Claude Code, Codex, Gemini CLI — from inside the host, through its hook:
// the host runs `warden hook HOST` before each of its own tool calls (Bash,
// Write, Edit, Read, WebFetch, its MCP tools, ...) with the call as JSON on
// stdin, and does what the answer on stdout says.
//
// A host's call is mapped to the warden tool call that has the same effect
// (Bash → run_command, Write → write_file, Read → read_file, WebFetch →
// http_request, mcp__S__T → the mcp group, ...), with the host's absolute
// paths made relative to the workspace, and then decided by the engine's
// one decision stage (engine.Admit): the command judge, confinement, masks,
// protected paths, delete protection, policy, auto-approve rules, grants and
// the mode, exactly as a call through warden's own tools would be, with the
// same approval requests, binding hash and audit trail. After the host ran
// a call (PostToolUse, AfterTool), what ran and a sanitised excerpt of its
// result go to the audit trail.
//
// Each host gets its own dialect (Host): where a host fails open on an
// answer — Codex runs the call on "allow" and "ask", Gemini CLI ignores
// Claude Code's format and hangs on "ask" under --yolo — that answer is
// never given: an allowed call is answered by the silence the host takes as
// "go on", and a call that needs a person waits for warden's approval flow
// (page, chat, CLI, REST) up to [hooks] wait_secs, then is denied with the
// request id and how to decide it; the request stays pending, and the same
// call made again runs once it was approved.
//
// # Threat model
//
//   - The model inside the host chooses the tool calls; the host itself and
//     its hook configuration are trusted. The hosts' configuration inside the
//     workspace (.claude/, .codex/, .gemini/, .cursor/, .mcp.json:
//     HostProtected) is protected for every call a hook decides, so the
//     model cannot write its way out of the hook.
//   - Input that does not parse, names a tool warden does not know, or
//     carries arguments that do not fit is refused for a tool call, never
//     allowed; events warden does not judge pass through.
//   - A path is judged where it really leads: symbolic links in it are
//     followed on the host before the guards see it, so a link inside the
//     workspace to /etc or to .env is judged as /etc or .env.
//   - A recursive read by the host (Grep, read_many_files) is refused when a
//     masked file lies under it: the host's own search does not skip masks.
//
// # Not covered
//
//   - The host runs the call, unconfined: warden decides before, it does not
//     run it in the jail. Between the decision and the host's run a file can
//     change (a symbolic link swapped in); warden's own tools do not have
//     this window, the host's do.
//   - A host's internal tools with no effect on the machine (todo lists,
//     plan mode, sub-agents whose own calls come through the hook) pass
//     without a decision.
//   - WebSearch runs at the model provider, not on this machine: it is
//     decided by the network policy but no address is checked.
//   - Input typed into a running command is not a hook event in Codex
//     0.169.0 (write_stdin), nor is exec_command's tty flag passed on: a
//     shell started with a terminal would run what is typed into it later,
//     unjudged. The defence is Codex's configuration, `[features]
//     unified_exec_tty = false`, which `warden setup codex` writes and
//     `--check` verifies; the hook cannot enforce it.
//   - Hosts check some calls themselves before any hook runs (Gemini CLI
//     refuses paths under .git and ignored files such as .env as "outside
//     the workspace"); warden does not see those calls.
package hook
