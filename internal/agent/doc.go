// Package agent is warden's agent loop (seed 000, layer 7): it sends a task
// and the agent's tool schemas to a model, runs the tool calls the model
// asks for through the engine, feeds every result back — refusals
// included, so the model can adapt — and ends with a final answer.
//
// Threat model: the model is untrusted. It may be confused, steered by
// text it read, or simply loop. It reaches the machine only through the
// engine, which judges every call (the loop adds no path of its own), and
// the loop bounds what it can spend: every run ends, with a stop reason,
// by one of these nets —
//
//	done          the model answered without calling a tool
//	max_steps     the agent's step limit (build 50, plan and review 20, resume 15)
//	budget        the cost of the tokens used passed the budget (USD)
//	timeout       one step (model call plus its tool calls) took too long
//	context_full  the conversation outgrew the context limit even after old
//	              tool results were compacted
//	interrupted   the user asked to stop (first SIGINT or SIGTERM): the step in
//	              flight finishes, then one last model call without tools
//	              writes a summary
//	error         the model endpoint failed for good
//
// Each stop is reported in the Result and written as an audit record
// (Event "stop"); each model call is an audit record too (Event
// "llm_call"), next to the engine's record of each tool call.
//
// Non-goals: the loop does not judge tool calls (the engine does), does not
// handle signals (the caller closes Options.Stop), and its token counts
// for the context check are estimates (bytes/3, or the server's count when
// it reported one), erring towards stopping early.
package agent
