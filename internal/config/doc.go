// Package config loads warden's configuration: strictly, from layered
// sources, with the workspace file held to tightening only.
//
// Sources, lowest precedence first: the built-in defaults; the user config
// ($XDG_CONFIG_HOME/warden/config.toml or config.yaml, default
// ~/.config/warden); a file named with --config, trusted like the user
// config; the workspace file (<workspace>/warden.toml or warden.yaml); the
// WARDEN_* environment variables; command-line flags. Scalars override; the
// lists that only ever restrict (masks, protected paths, blocked patterns)
// are extended, never replaced.
//
// TOML and YAML files are parsed into one positioned tree (go-toml's
// unstable parser, yaml.v3's Node) and decoded against one schema, so both
// formats obey identical rules. Every unknown key, duplicate key, wrong type
// and invalid value of a file is reported, each as an *Error naming the
// file, line, column and key path; loading fails if any is found.
//
// # Threat model
//
// The user config, the --config file, the environment and the flags are
// written by the person running warden and are trusted. The workspace file
// is not: it lives where the agent can write. It may therefore only tighten
// what the trusted sources allow. Every setting it may write has a rule
// (tighten.go) that refuses any value looser than the trusted one — a
// looser confirm_mode or tool policy, allow_delete, commands re-enabled,
// higher timeouts and output limits, additions to allow-lists, sandbox
// relaxations, sandbox paths outside the workspace — and every setting
// without a rule (hooks, MCP servers, LLM endpoint and key, supervisors,
// webhooks, auto-approve rules, tool groups, the workspace root) is refused
// outright. A refusal fails the load with the file and line; nothing is
// silently ignored. The workspace file must be a regular file, not a
// symlink, and no larger than MaxFileSize; opening it never blocks on a
// FIFO.
//
// A [sandbox] section that cannot be used as written (wrong type, unknown
// key, unknown backend, bad value) never leaves the workspace unsandboxed:
// Config.Sandbox is then {Enabled: true, Lockdown: true, Invalid: why} and a
// warning says so.
//
// # Non-goals
//
// This package decides nothing at run time: it does not mask files, judge
// commands or resolve policies; it only hands the effective values to the
// packages that do, and built-in hard guards live there, beyond the reach of
// any source. Sandbox paths are checked against the workspace (following
// symlinks that exist at load time); a symlink created afterwards must be
// caught when the sandbox mounts the path. The environment and flags are
// trusted as the user's own choice: WARDEN_MODE=yolo overrides a stricter
// workspace file.
package config
