// Package checkpoint records the workspace before a call that may change
// it, and restores a recorded state (warden undo).
//
// # What a checkpoint holds
//
// Every regular file's content and permission bits, every directory and
// its permission bits, every symbolic link as a link (its target, never
// what it points to), and the absence of everything else: restoring a
// checkpoint removes what was created after it. Paths a checkpoint sees
// but does not record are noted in its tree and left alone by a restore:
// masked paths (never opened, never read: only their names are noted),
// files over max_file_bytes, files with other hard links (restoring one
// as a plain file would hand tools the content of a file that may live
// outside the workspace), FIFOs, sockets and devices, and directories that
// cannot be read. Ignored paths (DefaultIgnore, [checkpoints] ignore, the
// workspace's .gitignore files and .git/info/exclude) are neither recorded
// nor removed: a checkpoint records the rules it was taken with, and its
// restore scans the workspace with those same rules, reading the
// .gitignore files from the checkpoint itself, not from the workspace.
// Owners, times and extended attributes are not recorded; a restored file
// gets the current time, as after a git checkout.
//
// .git is recorded like any directory (within the same caps): `git
// checkout .`, `git reset --hard` or `git stash drop` can be taken back,
// refs, index and stash included. Its pack files are immutable and cost
// once; a pack over max_file_bytes is not recorded. A restore never removes
// a file inside .git/objects (a repack may have moved the only copy of an
// object the restored refs need) and, like every restore, never writes
// .git/config or .git/hooks (protected paths). Users who do not want .git
// in checkpoints add ".git/" to [checkpoints] ignore.
//
// # The store
//
// $XDG_STATE_HOME/warden/checkpoints/<id>/ (else
// ~/.local/state/warden/...), one per workspace (id: a hash of the
// workspace's real path), directories 0700, files 0600:
//
//	workspace            the workspace's path, checked on open
//	lock                 flock(2): one checkpoint, restore or prune at a time
//	records/<seq>-<id>.json  one per checkpoint, written last
//	packs/<p>.pack/.idx  content-addressed objects (SHA-256): file
//	                     contents, link targets and trees
//	index                path → (dev, inode, size, mtime, ctime, mode, hash)
//	usage                bytes of the packs, for pruning
//	undo.json            the journal of an undo in progress
//
// A checkpoint walks the workspace from a directory handle the
// confinement layer (package workspace) opened, then one component at a
// time with openat(O_NOFOLLOW) relative to its parent: it never follows a
// link and never leaves the tree. It reads only files whose stat differs
// from the index (or that were written within a clock tick of the last
// scan), through workspace.Root.Open, which refuses a masked real path, a
// link or a hard link. Unchanged files and directories cost a stat and
// nothing in the store: a directory's tree object depends only on what it
// holds, so checkpoints share everything that did not change.
//
// # Crash safety
//
// A checkpoint is complete before Checkpoint returns, or it does not
// exist: new objects are appended to new packs, each pack is synced, then
// its index is written, synced and renamed into place, then the record.
// A pack without an index is the remains of a killed writer, removed by
// the next checkpoint; objects no record needs are swept by pruning, which
// removes records first, then the index entries that name what goes, then
// the packs (rewriting those that keep some live objects). Small packs
// are merged when there are more than 32, so a checkpoint reads few
// indexes. A caller that gets an error from Checkpoint must not run the
// call.
//
// An undo first computes its plan and reads every object it will write
// (a damaged store fails here, having changed nothing), takes a checkpoint
// of the workspace as it is (so the undo can be undone), writes and syncs
// a journal, applies the plan (directories first, then the files and
// links, several at once, each a temporary file renamed over its name),
// syncs the workspace's file system, checks that
// the workspace now matches the checkpoint, and removes the journal.
// Killed at any point, it leaves either no journal (the workspace was not
// touched) or a journal, which warden reports at start and which blocks
// every checkpoint (so no call runs on a half-restored tree) until
// `warden undo --resume` restores the target or `warden undo --rollback`
// restores the checkpoint taken just before the undo. Both are plans
// computed afresh, so they finish whatever the kill interrupted.
//
// # Threat model
//
// The store is outside the workspace and outside every path the jail
// binds: the sandbox mounts the workspace, its configured rw_paths and
// ro_paths, read-only system directories and a few files of /etc, over an
// empty root with a private /tmp and home; the state directory is none of
// those. Open refuses a store that the workspace or a configured exposed
// path would contain (ErrExposed: e.g. a workspace at $HOME with the
// default state directory below it), so a jailed command can neither read
// the recorded contents nor forge a checkpoint to have a later undo write
// what it chose. Without a sandbox, commands run as the user and can reach
// the store like any of the user's files: checkpoints then protect against
// mistakes, not against a command that sets out to corrupt them.
//
// A restore writes only through the workspace's confinement layer: never
// outside the workspace, never through a symbolic link (a link planted
// where the checkpoint had a directory is removed and the directory made;
// a link swapped in during the restore makes the write fail, confined),
// never to a masked or protected path. The store is trusted as far as its
// format: every object is checked against its hash before it is used, and
// a malformed record, tree, index or journal is an error (ErrCorrupt),
// never a different restore. A damaged index (a cache) is dropped.
//
// The rules that leave paths out are partly the workspace's own: an agent
// that can write a .gitignore can widen what later checkpoints skip. The
// checkpoint taken before that write still holds what it recorded (undo
// --to it), as long as pruning keeps it: keep counts checkpoints, so a
// long run of calls pushes older ones out.
//
// # Non-goals
//
// A checkpoint is not a snapshot: a file written while it is being read is
// read again (up to three times), then noted as not recorded; a directory
// renamed during the walk may be recorded under its old name. Calls are
// checkpointed when they are about to run, when nothing else of the agent
// runs; other writers (an editor, a build in another terminal) race like
// with any backup tool. Checkpoints do not replace version control or
// backups: they are bounded (keep, max_bytes) and pruned oldest first.
package checkpoint
