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
//   - Git (ResolveGit): every file through which git reads configuration
//     or runs a program is read-only in the jail, in every git directory of
//     the workspace (.git, a repository nested at any depth, and each git
//     directory under .git/modules, submodules of submodules included):
//     config, config.worktree, commondir, hooks/, info/ (attributes choose
//     diff and filter drivers), worktrees/, remotes/, branches/, and every
//     gitlink (a .git file naming the git directory). Those missing are
//     created first, so that the jail cannot create them: an empty
//     config.worktree, a commondir of "." (what a missing one means; git
//     takes an empty one as an error) and empty directories; they stay on
//     the host. Each git directory is bound onto itself: a mount point, so a
//     jailed command can neither rename .git nor remove and replace it (git
//     init then fails on the read-only config). Objects, refs, the index,
//     logs and HEAD stay writable (read-only under lockdown, as the
//     workspace), so git add, commit and checkout work in the jail. It is
//     the jail's half of workspace.GitControl, the file tools' list: the
//     names are kept equal. Why: the user's next git status, diff or commit
//     on the host runs core.fsmonitor, diff.external, a diff driver or a
//     hook from these files, or takes them from the directory commondir or
//     a gitlink names.
//   - JailEnv: PATH, HOME and TMPDIR fixed, the host's variables named in
//     an allowlist, never one whose name looks like a secret.
//
// # Non-goals and known limits
//
//   - Glob masks ("**/*.pem") are resolved when the jail starts: a match a
//     command or the host creates later, in a new directory or not, is
//     visible to commands in that jail (the file tools still refuse it);
//     MaskGuard keeps only the matches found at the start masked. A literal
//     mask whose directory does not exist at the start is not mounted, nor
//     guarded. A file hard-linked to a masked file is not
//     masked for commands (the file tools refuse hard links).
//   - Placeholders for missing literal masks (missing warden.toml and
//     warden.yaml get one too: the config loader reads an empty file as
//     absent) exist on the host while a jail of the workspace runs (Hold:
//     removing one while a jail has it mounted would unmask it there); the
//     last jail out removes those still empty and marked as warden's (an
//     extended attribute; where the file system keeps none they stay). Git
//     in the jail ignores them (the worker's per-user ignore file); git on
//     the host sees them while a jail runs.
//   - A masked path renamed over or deleted on the host while a jail runs
//     (an editor saving through a temporary file, `mv`, `rm` then a new
//     file, a masked directory or one above a mask renamed) loses its mount
//     in that jail: the kernel detaches a mount whose dentry is unlinked or
//     replaced in another mount namespace. MaskGuard watches every
//     directory on the way to a mask (inotify) and, when a name there
//     changes, compares what the jail sees with the host's file; where they
//     are the same the backend mounts the mask again. What is left is the
//     window between the rename and the new mount, measured by
//     internal/sandbox/bwrap's TestMaskWindow (100 renames 10 ms apart,
//     load 11 on 2 cores, twice): from the start of the rename to the mask
//     in place, median 0.8 ms, p90 4.5-5.7 ms, max 36-81 ms (the guard's
//     own part, from reading the event: median 0.5 ms; the rest is the
//     scheduler waking it); a jailed loop reading the file as fast as it
//     can through 20 renames saw a secret in 300 to 52,000 of its 35,000
//     to 150,000 reads (0 to 40%; it competes with the guard for the
//     CPU), and was killed in 4 trials of 6. A command that reads the
//     file in the window has read it; a process of the jail that still has
//     it (or, for a directory, anything below it) open, mapped or as its
//     working directory when the mask is back gets the jail killed, as does
//     a mask that cannot be mounted again (8 tries) or a masked name that
//     became a symbolic link (a mount lands on the link's target). A
//     process that read and closed it in the window is not found. A masked
//     path deleted or renamed away on the host is masked again when the name
//     returns; in between, a command can create it, and the host then reads
//     what it wrote (a placeholder put back at once would fight the user's
//     own `rm -r` of the directory, or move their `mv new secrets` into
//     it). A command that holds such a file open when the host writes its
//     secret into it is found by the same look, and the jail killed.
//     Writing a file in place keeps it masked throughout. Protected paths
//     (read-only binds of themselves: git's control files, ro_paths in the
//     workspace) are kept read-only the same way: `git config` on the host
//     writes .git/config through config.lock and a rename, which detached
//     the jail's read-only bind and let a command write core.fsmonitor for
//     the host's next git status to run. A write that lands in the window
//     stays (the guard cannot tell it from the host's); no process is
//     looked for or killed for protected paths. The local
//     backend (bubblewrap, here or on an ssh backend's host) runs a
//     MaskGuard; the docker backend does not.
//   - A workspace with more than 500,000 entries cannot have its glob masks
//     resolved and is refused rather than jailed with secrets showing.
//   - Git: a mount can only hold a path that exists when the jail starts.
//     A jailed command can still create a new repository under a new name
//     (a directory with its own config, or a new gitlink file) and, the
//     index being writable, register it as a submodule: the host's git
//     status then runs git in it, and its configuration. The file tools
//     refuse such files; a command in the jail is not stopped. A .git, or a
//     control entry, that is a symbolic link is refused (a mount over a
//     link lands on its target, and the link could be replaced); a link
//     planted between the resolution and the mounts by a command of another
//     jail of the same workspace is looked for once more after the
//     placeholders are made, not after the mounts.
package jail
