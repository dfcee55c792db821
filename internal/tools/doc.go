// Package tools holds warden's own tools: the file tools, the search
// tools, http_request and run_command. Each is a *Tool: a name, a JSON
// Schema that refuses extra fields, MCP annotations, a Guard that applies
// the tool's hard guards before any policy or person is consulted, and Run.
//
// Threat model: the arguments come from a model that may be steered by
// injected text. Every file access goes through Env.FS (package
// workspace, or the jailed worker that uses it), never through os paths,
// so confinement, masks and protected paths hold for every tool; the
// search tools never follow symbolic links, honour .gitignore and
// .git/info/exclude at every level, and never show .git or masked entries.
// Writes are atomic; apply_patch is all or nothing; delete_file and
// deleting patches need workspace.allow_delete. run_command is judged by
// package shellpolicy in Guard and again in Run, and runs with an
// allowlisted environment. http_request dials only through package
// netguard: the address is checked at connect time (DNS rebinding cannot
// get through), redirects are checked again, no proxy, no cookie jar.
//
// Non-goals: the tools do not filter what they return. File contents,
// command output and HTTP bodies are untrusted data for the model; what a
// caller does with them is its own concern.
package tools
