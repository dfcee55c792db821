// Package jail is what every backend of internal/sandbox shares about a
// jail: the [sandbox] settings made safe to act on (Resolve), the jail's
// layout (NewLayout, a pure function of the settings, translated by each
// backend into its own flags), the rule for which host paths may ever be
// bound (MayBind), the masks and protected paths of a workspace
// (PrepareMasks), the jail's environment (JailEnv), and the contract
// between internal/sandbox and a backend (Launch, Started, Process). It
// imports no other package of internal/sandbox.
//
// # Threat model
//
// The settings come from the user's configuration (trusted, but possibly
// wrong: an invalid section forces lockdown, never less); the workspace's
// contents come from the agent (hostile: symbolic links, names that look
// like masks, paths created after the jail started).
//
//   - Layout: the workspace is bound at its own path, writable unless in
//     lockdown; rw_paths and ro_paths are bound after every path that
//     contains them, so the nearer setting wins (read-only wins at the same
//     path); protected paths are bound read-only over every bind; masks
//     come last and cover everything. HOME and /tmp are private and empty.
//   - MayBind: never /proc, /sys, /dev, /boot or a secret of /etc (nor
//     anything above or below one); never a system directory (/, /usr,
//     /etc, /home, /tmp, ...) writable or as the workspace.
//   - Masks: existing matches are covered with empty read-only files or
//     directories; literal masks that do not exist yet are covered too (an
//     empty placeholder is created on the host through an os.Root, so a
//     symbolic link planted in the workspace cannot send it elsewhere, and
//     mounted over), so a command can neither create nor read them; a
//     symbolic link that matches is followed when it stays inside the
//     workspace. A missing literal protected directory ("X/**") whose parent
//     exists is mounted empty and read-only, so a command cannot plant, say,
//     .git/hooks.
//   - JailEnv: PATH, HOME and TMPDIR fixed, the host's variables named in
//     an allowlist, never one whose name looks like a secret.
//
// # Non-goals and known limits
//
//   - Glob masks ("**/*.pem") are resolved when the jail starts: a match a
//     command creates later is visible to commands in that jail (the file
//     tools still refuse it). A file hard-linked to a masked file is not
//     masked for commands (the file tools refuse hard links).
//   - Placeholders for missing literal masks stay on the host, empty
//     (missing warden.toml and warden.yaml get one too: the config loader
//     reads an empty file as absent): removing one while another jail of
//     the workspace has it mounted would unmask it there.
//   - A workspace with more than 500,000 entries cannot have its glob masks
//     resolved and is refused rather than jailed with secrets showing.
package jail
