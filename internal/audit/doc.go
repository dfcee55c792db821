// Package audit records what happened to every tool call, and keeps
// secrets out of those records.
//
// Threat model: audit logs are read by people and tools that should not
// learn the secrets an agent handled, and they are often shipped elsewhere.
// Sanitize and Redact cut long values (a file's content, a patch) and
// replace anything shaped like a credential: API keys and tokens of the
// common providers, bearer tokens, JWTs, private-key blocks, values under
// keys that look secret (authorization, password, token, …) and the values
// of this process's environment variables whose names look secret.
//
// Non-goals: redaction is pattern-based and cannot recognise every secret
// (a password with no label in free text passes); it narrows exposure, it
// does not make logs safe to publish. Tamper evidence is the store's job
// (a hash chain over the audit table); the JSON-lines file is a mirror.
package audit
