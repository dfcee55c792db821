// Package workspace confines every file access of every warden tool to one
// directory, the workspace, and hides or freezes the paths inside it that a
// person marked as secret (masked) or read-only (protected).
//
// # How a path is resolved
//
// A name is first cleaned: NUL bytes are refused (ErrInvalid), absolute
// names and names whose ".." climb above the workspace are refused
// (ErrEscapes), and the masks — and, for a change, the protected paths —
// are applied to the cleaned name. This already refuses a masked file that
// does not exist yet, so a tool cannot create .env and then read it.
//
// The file is then opened with one openat2(2) call relative to a handle on
// the workspace, with RESOLVE_BENEATH and RESOLVE_NO_MAGICLINKS: the kernel
// walks the path and refuses, in the same walk that opens the file, any
// step that would leave the workspace — "..", an absolute symbolic link, a
// link that climbs out, chains of them, whether their target exists or
// not. There is no check-then-open sequence a swapped link could race.
//
// When the path went through a symbolic link, the real location of the
// opened file is read from /proc/self/fd and the masks are applied to it,
// so a link inside the workspace does not reach a masked file either. The
// location is read before the link count, and a file with no link left is
// refused, so a file unlinked between the open and the check cannot pass as
// an unmasked one. Directory masks cover everything below them (.ssh hides
// .ssh/config), matching is case-insensitive (.ENV, Id_Rsa.PEM and
// .SSH/config are masked), and masked entries are left out of listings and
// walks, whose masked directories are never opened.
//
// # Writes
//
// A write opens the parent directory as above, making missing directories
// one at a time (each checked against the masks and protected paths before
// it is made), applies the guards to the entry's real path, and then
// writes a new temporary file (O_CREAT|O_EXCL|O_NOFOLLOW) in that
// directory, syncs it and renames it over the name. A reader, or a process
// killed mid-write, sees the old content or the new, never half.
//
// A write never goes through a symbolic link: when the last component of
// the name is a link, WriteFile refuses with ErrSymlink and, when the
// target is an unmasked, unprotected workspace path, names that path so the
// caller can write there instead. A link in a parent directory is followed
// if it stays inside, and the guards apply to where it leads (a write to
// hooks/pre-commit, where hooks -> .git/hooks, is refused as protected).
// If a link is swapped in at the last moment, the rename replaces the link
// itself, so the link's target is still not written. Remove and Rename act
// on a link itself, never on its target. Rename of a directory is refused
// when anything below it, under its old path or its new one, is masked or
// protected (checked by a walk just before the rename).
//
// # Pinned changes
//
// A name is not a place: docs/notes.yml lands in .github/workflows when
// docs is a link to it, and docs can become one after a person approved
// the write. Locate says where a change to a name would land (links in
// parent directories followed, as the change will); a caller shows that
// place to the person and binds it into the approval, then makes the change
// with WriteFileAt or RemoveAt, which refuse with ErrMoved unless the name
// still leads there — checked before a missing directory is made, and
// again on the real path of the parent directory the change is made in,
// through the same descriptor. A directory renamed elsewhere after that
// last check still receives the change (the race described below).
//
// # Git's control files
//
// Git runs programs named in files it keeps next to the work tree, even for
// commands that only read (git status runs core.fsmonitor, git diff runs
// diff.external, git commit runs hooks), and the user runs git on the host,
// outside any jail. So every file through which git reads configuration or
// runs a program is protected, in the top repository and in repositories
// nested at any depth; GitControl is the list, with the reason for each row,
// shared with the sandbox:
//
//   - .git/config, config.worktree and commondir (which names the directory
//     git takes config and hooks from), hooks/, info/ (attributes choose
//     diff, merge and filter drivers; exclude; sparse-checkout),
//     worktrees/ (linked worktrees' git directories), remotes/ and
//     branches/ (legacy remote definitions);
//   - the same in every submodule's git directory, .git/modules/**/;
//   - .gitmodules, anywhere: it steers what git submodule update fetches
//     and where it checks it out (git before 2.24.1 also ran
//     "update = !command" from it; 2.39 refuses that), and git's own
//     submodule commands are the way to change it;
//   - .git itself, anywhere: as a file (a gitlink, "gitdir: PATH") it names
//     the git directory, so a new or changed one points git at a
//     configuration of the writer's choosing; as a directory it cannot be
//     renamed, removed or replaced, and nothing below it can be written —
//     the tools never need to (git's own commands write objects, refs and
//     the index), which also covers files that steer git without being
//     configuration (objects/info/alternates, rebase-merge/git-rebase-todo,
//     whose "exec" lines git rebase --continue runs).
//
// Names are compared after the case folding below, so .GIT/Config and
// .git/HOOKS are refused as well; cleaning removes other spellings
// (.git/./config, sub/../.git/config, .git//config); a symbolic link into a
// git directory is judged where it leads (togit/config, where togit ->
// .git, is .git/config); and a write replaces the directory entry, so a
// hard link elsewhere to .git/config is never changed through its other
// name.
//
// A git directory need not be called .git: a bare repository in the
// workspace (repo.git), the directory a gitlink or a .git symbolic link
// points to (.repo/projects/x.git), a separate git directory. So a change
// is also refused when it touches config, config.worktree, commondir,
// hooks, info, worktrees, remotes or branches directly inside a directory
// that holds HEAD and refs/ or commondir — what git itself looks for before
// it takes a directory as a repository. This looks at the file system, on
// the name as given and again on the real path.
//
// Not covered, because git does not take them from a place the tools can
// write unnoticed: the user's global and system configuration (outside the
// workspace); tracked files that ask git to run something already
// configured (.gitattributes selects drivers defined in a config file; a
// hooks directory that core.hooksPath names inside the work tree, such as
// .husky/, is versioned and shows in git diff, like a Makefile); files a
// repository's config includes from the work tree with include.path; and a
// directory the writer makes into a repository itself (HEAD, refs/ and a
// config written in that order), which runs nothing until the user runs git
// inside it or points a gitlink or commondir at it, both protected.
//
// # Hard links
//
// A hard link is another name for the same file, possibly made outside the
// workspace, and no path check can tell it from an ordinary file. What is
// covered: ReadFile and Open refuse a regular file with more than one link
// (ErrHardLink), so a link to a secret elsewhere cannot be read; writes
// replace the directory entry (temporary file, rename) and so never change
// the content seen through another link. What is not covered: Stat, Lstat,
// ReadDir and Walk report such files (their size and times are those of the
// shared file), and Remove and Rename act on the entry as on any file.
//
// # What is not covered
//
// Like os.Root, the package does not prevent crossing file system
// boundaries: a bind mount inside the workspace is followed, and what it
// exposes is inside the workspace as far as this package can see. Device
// files, FIFOs and sockets inside the workspace are listed and statted; a
// read opens them with O_NONBLOCK|O_NOCTTY and then refuses them
// (ErrNotRegular), but the open itself reaches the driver. /proc-style
// magic links are refused (RESOLVE_NO_MAGICLINKS), but a procfs mounted
// inside the workspace is otherwise just files. Masks match names, not
// contents: a copy of a secret under an unmasked name is readable.
//
// Masks and protected paths are case-insensitive everywhere; on a
// case-insensitive file system (or a case-folding directory) the kernel may
// also open FOO for foo, and since both spellings are checked against the
// lowercased patterns the guard still holds. A case-folding directory also
// equates a few non-ASCII letters with ASCII ones (".ſsh" and ".ßh" are
// .ssh there; "hoo\u212as" with a Kelvin sign is hooks): names are folded
// the same way before matching. Unicode normalisation (NFC vs NFD) is not
// folded, and neither are Windows spellings (git~1, trailing dots), which
// Linux file systems keep distinct.
//
// Checks against concurrent changes are linearisable, not time-travelling:
// a file that is renamed onto a masked name after it was opened was read
// under its earlier, unmasked name. Walk and ReadDir decide masks by each
// directory's path when it was opened; a directory moved under a masked
// path during a walk is still listed under its old name. A write checks the
// real path of its parent directory when it opens it; a directory moved
// under a protected path between that check and the rename receives the
// write. Rename's walk of a directory races with files added below it at
// the same moment. If the workspace directory itself is moved while open,
// paths through links inside it are refused (ErrEscapes) and DirPath
// returns the old path. These races
// need a second writer in the workspace at the same time (a command the
// agent runs); the sandbox closes them by mounting masked paths away and
// protected paths read-only.
//
// DirPath returns the directory's real host path, checked, for a command to
// use as its working directory. The command changes into it by path, later,
// in another process: if a parent of that path is replaced by a link in
// between, the command starts elsewhere. The path has no links in it when
// returned, which narrows the window to a deliberate swap; run commands in
// the sandbox, whose mount namespace contains only the workspace, to close
// it.
//
// The package needs Linux 5.6 or later (openat2) and /proc mounted; Open
// fails otherwise, rather than falling back to weaker checks.
//
// # Non-goals
//
// The package confines file access made through it. It does not confine
// commands (the sandbox does), does not decide which tools may run (the
// policy does), and does not guard against a person who can write the
// workspace outside warden.
package workspace
