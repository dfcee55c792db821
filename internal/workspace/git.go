package workspace

import (
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// GitControlKind says where a row of GitControl must hold.
type GitControlKind uint8

const (
	// GitConfig files are read-only for the file tools and inside every
	// jail: git reads configuration or runs programs from them, and git's
	// own everyday commands (add, commit, checkout, fetch) never write them.
	GitConfig GitControlKind = iota
	// GitRepoDir is ".git" itself. As a file (a gitlink) it names the
	// directory git takes as the repository, config and hooks included; as
	// a directory, replacing or renaming it swaps every file below at once.
	// The file tools protect it whole: they never need to write inside it
	// (git's own commands do), so objects, refs, the index and the rest are
	// read-only for them as well. A jail keeps the directory where it is
	// (it cannot be renamed, replaced or created) and a gitlink read-only,
	// but leaves objects, refs, index, logs and HEAD writable, and applies
	// the GitConfig rows inside it, so git add, commit and checkout work.
	GitRepoDir
	// GitTracked files are versioned in the work tree and change git's
	// behaviour: read-only for the file tools; git's own commands change
	// them in a jail (git submodule add writes .gitmodules), and a change
	// shows in git status and git diff.
	GitTracked
)

// GitControlPath is one row of GitControl.
type GitControlPath struct {
	// Pattern is a doublestar pattern over lowercased, workspace-relative
	// slash paths; like every mask and protected pattern, one that matches a
	// directory covers everything below it.
	Pattern string
	Kind    GitControlKind
	// Why names what git does with the file.
	Why string
}

// GitControl is git's control surface in a workspace: every file through
// which git reads configuration or runs a program, in the top repository
// and in every repository nested at any depth (a vendored checkout, a
// submodule's .git/modules/NAME, a linked worktree's .git/worktrees/NAME).
// A tool that could write one of them could make the user's next git
// status, diff or commit — on the host, outside any jail — run a program of
// its choosing (core.fsmonitor, diff.external, a hook), or point git at a
// directory whose configuration does (commondir, a gitlink).
//
// It is one table so that the file tools (Root, through DefaultProtected
// and its own additions) and the jail backends protect the same list. The
// patterns are matched case-insensitively ('.GIT/Config' is refused too),
// so a case-insensitive file system cannot open a protected file under
// another spelling. Root also protects the same file names inside any
// directory git would take as a repository whatever its name (a bare
// repository, a separate git directory a gitlink points to): see gitGuard.
var GitControl = []GitControlPath{
	{"**/.git/config", GitConfig, "the repository's configuration: core.fsmonitor, core.pager, core.editor, core.sshCommand, core.hooksPath, diff.external, diff/merge/filter drivers, credential helpers, aliases with '!', include paths — programs git runs, even for git status or git diff"},
	{"**/.git/config.worktree", GitConfig, "per-worktree configuration (extensions.worktreeConfig), with the same keys as config"},
	{"**/.git/commondir", GitConfig, "names the directory git takes config, hooks, objects and refs from"},
	{"**/.git/hooks", GitConfig, "programs git runs on commit, checkout, merge, rebase and push"},
	{"**/.git/info", GitConfig, "attributes (which choose diff, merge and filter drivers per file), exclude and sparse-checkout, outside version control"},
	{"**/.git/worktrees", GitConfig, "the git directories of linked worktrees, each with its own commondir, config.worktree and gitdir"},
	{"**/.git/remotes", GitConfig, "legacy remote definitions: where fetch and pull go"},
	{"**/.git/branches", GitConfig, "legacy remote definitions: where fetch and pull go"},
	{"**/.git/modules/**/config", GitConfig, "a submodule's configuration (git status runs git inside every submodule)"},
	{"**/.git/modules/**/config.worktree", GitConfig, "a submodule's per-worktree configuration"},
	{"**/.git/modules/**/commondir", GitConfig, "where a submodule's git takes its config and hooks from"},
	{"**/.git/modules/**/hooks", GitConfig, "a submodule's hooks"},
	{"**/.git/modules/**/info", GitConfig, "a submodule's attributes, exclude and sparse-checkout"},
	{"**/.git/modules/**/worktrees", GitConfig, "a submodule's linked worktrees"},
	{"**/.git/modules/**/remotes", GitConfig, "a submodule's legacy remote definitions"},
	{"**/.git/modules/**/branches", GitConfig, "a submodule's legacy remote definitions"},
	{"**/.gitmodules", GitTracked, "submodule URLs, paths and update modes: what git submodule update fetches and where it checks it out (git before 2.24.1 also ran 'update = !command' from it)"},
	{"**/.git", GitRepoDir, "the repository itself: a gitlink file names the git directory (and so its config and hooks); a replaced or renamed .git directory swaps all of them at once"},
}

// gitPatterns returns the patterns of the rows of GitControl of the given kinds.
func gitPatterns(kinds ...GitControlKind) []string {
	var out []string
	for _, r := range GitControl {
		for _, k := range kinds {
			if r.Kind == k {
				out = append(out, r.Pattern)
			}
		}
	}
	return out
}

// gitDirControl names the entries of a git directory that GitControl
// protects under .git: the same names are protected in any directory git
// would take as a repository.
var gitDirControl = map[string]bool{
	"config": true, "config.worktree": true, "commondir": true, "hooks": true,
	"info": true, "worktrees": true, "remotes": true, "branches": true,
}

// gitGuard refuses a change at real (a workspace-relative path with no
// links) when one of its components is a git control name (config, hooks,
// info, ...) inside a directory git would take as a repository: one holding
// HEAD and refs/ or commondir, as git itself checks. This covers what the
// .git patterns cannot see by name: a bare repository in the workspace
// (repo.git/hooks/post-receive), the directory a gitlink or a .git symbolic
// link points to (.repo/projects/x.git/config), a separate git directory.
// It costs a lookup only for paths with such a component.
func (w *Root) gitGuard(op, name, real string) error {
	if real == "." || real == "" {
		return nil
	}
	comps := strings.Split(real, "/")
	for i, c := range comps {
		if !gitDirControl[fold(c)] {
			continue
		}
		dir := "."
		if i > 0 {
			dir = path.Join(comps[:i]...)
		}
		if w.isGitDir(dir) {
			return &PathError{Op: op, Path: name, Rule: "git directory " + dir, Err: ErrProtected}
		}
	}
	return nil
}

// isGitDir reports whether the workspace directory rel holds HEAD and refs/
// or commondir: what git looks for before it takes a directory as a
// repository (and reads its config and hooks).
func (w *Root) isGitDir(rel string) bool {
	n, err := w.open("stat", rel, rel, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return false
	}
	defer n.close()
	var st unix.Stat_t
	if unix.Fstatat(n.fd, "HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return unix.Fstatat(n.fd, "refs", &st, unix.AT_SYMLINK_NOFOLLOW) == nil ||
		unix.Fstatat(n.fd, "commondir", &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}
