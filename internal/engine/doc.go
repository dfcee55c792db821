// Package engine is the one path every tool call takes, whoever makes it
// (MCP, the agent loop, the CLI, the HTTP API):
//
//	look up the tool (registered? in the agent's set?)
//	→ validate the arguments against the tool's JSON Schema
//	→ hard guards (confinement, masks, protected paths, delete protection,
//	  the command blocklist, commands disabled, allowed_only)
//	→ policy: allow | deny | supervised
//	→ supervised: an approval request, decided by a person or a rule
//	→ execute (or [DRY-RUN])
//	→ post-edit hooks
//	→ a sanitised audit record
//	→ tools.Result
//
// The steps up to asking a person are one decision stage (Decide): Call,
// Explain and the hooks of agent hosts (Admit, for a call the host runs
// itself) all take it, so explain reports exactly what a call would meet,
// auto-approve rules (by file and line) and active grants included.
//
// Threat model: the caller is a model that may be confused or steered by
// injected text. It controls the tool name and the arguments, nothing else.
// The engine never panics out to its caller and never returns a Go error
// for a tool failure: every failure, refusals included, is a Result with
// Success false and an error the model can act on, naming the rule that
// refused. What runs after an approval is exactly what was approved: the
// engine keeps the canonical argument bytes it asked about and runs those.
//
// Non-goals: the engine does not itself confine paths or judge commands;
// the workspace and shellpolicy packages do, and each tool calls them again
// when it runs, so a guard skipped here would still hold there.
package engine
