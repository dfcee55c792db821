// Package telemetry exports warden's audit events to an OpenTelemetry
// collector over OTLP/HTTP: each tool call, approval decision and egress
// decision becomes a span and a log record, named and attributed after the
// GenAI semantic conventions where they apply (gen_ai.operation.name =
// execute_tool, gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.agent.name,
// gen_ai.tool.call.arguments) and warden.* otherwise.
//
// It is an audit.Sink: it sees exactly the records the audit trail gets,
// and passes every free-text field through internal/audit's sanitiser
// (Sanitize for arguments, Redact and Truncate for reasons, errors and
// results) once more before export, so nothing leaves that the audit
// record would not hold. It is off unless [telemetry] otlp_endpoint is set.
//
// This is the only package that imports the OpenTelemetry SDK: the engine,
// the judge, the jail and the approval flow do not link it, and only the
// composition root decides to add this sink.
//
// # Threat model
//
// The collector is trusted with what the audit trail holds (tool names,
// sanitised arguments, decisions, who decided). Export is best effort and
// asynchronous (batched): a collector that is down or slow never blocks or
// fails a tool call, and the database audit chain, not this export, is the
// record of truth. Plain http is accepted only to a loopback collector
// (config validation); headers (an API key) come from the environment
// variable named by headers_env, never from a file.
//
// # Non-goals
//
// Metrics, trace context propagation into tools, and sampling: every
// record is exported.
package telemetry
