// Package rulefile writes and removes the lasting rules a person creates by
// answering "always": [[rules]] entries scoped to one workspace, appended
// to the user's own config file — never to the workspace's warden.toml,
// which the agent can write — and removed by id.
//
// # Threat model
//
// The user config is trusted and the person's: a write must never lose or
// corrupt it. Every change is made under an exclusive lock (a sibling
// ".lock" file, flock), to a temporary file in the same directory that is
// loaded and checked (it must parse, validate, and hold exactly the rules
// expected) before it is renamed over the original, keeping its mode. A
// crash leaves the old file or the new one, never half of either. Only
// rules with an id can be removed, and only from the file they are in;
// only TOML files are edited (a YAML user config is refused with a hint).
// The values written come from an approval request (an agent's command
// words, paths, hosts): they are encoded as TOML strings, never spliced,
// so no value can add keys or tables.
//
// # Non-goals
//
// This package decides nothing: the rules package matches, the loader
// checks. It does not reformat or rewrite the rest of the file: lines it
// did not write are kept byte for byte.
package rulefile
