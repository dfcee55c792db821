package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// gitControl names the entries of a git directory through which git reads
// configuration or runs programs: what a jailed command must not be able
// to write, nor create where it is missing, so that the user's next git
// status, diff or commit on the host runs nothing the jail chose
// (core.fsmonitor, diff.external, a hook, a commondir pointing at a
// directory whose config does). It is the jail's form of the directory
// names of the file tools' list, workspace.GitControl (internal/workspace/
// git.go); TestGitControlMatchesFileTools keeps the two equal.
//
// Each entry is protected in every git directory of the workspace: .git,
// a repository nested at any depth (vendor/x/.git), and every git
// directory under .git/modules (submodules, nested ones included);
// .git/worktrees is protected whole. What stays writable is what git's
// everyday commands write: objects, refs, the index, logs, HEAD and their
// lock files, so git add, commit and checkout work in the jail.
var gitControl = []struct {
	name string
	dir  bool
	// placeholder is the content a missing file is created with, so that
	// the jail cannot create it: one git reads as if the file were absent.
	placeholder string
}{
	{name: "config", placeholder: ""},
	{name: "config.worktree", placeholder: ""},
	// An empty commondir is an error to git; "." is the git directory
	// itself, which is what a missing commondir means.
	{name: "commondir", placeholder: ".\n"},
	{name: "hooks", dir: true},
	{name: "info", dir: true},
	{name: "worktrees", dir: true},
	{name: "remotes", dir: true},
	{name: "branches", dir: true},
}

// maxGitDirs bounds the git directories protected in one workspace.
const maxGitDirs = 256

// Git is what protects git's control surface in a workspace's jail.
type Git struct {
	// Dirs are the git directories (.git and nested ones; not those under
	// .git/modules, which live inside .git): each is bound onto itself, so
	// that a jailed command can neither rename nor replace it.
	Dirs []string
	// Protect are the control entries and gitlink files that exist: bound
	// read-only.
	Protect []string
	// Files and EmptyDirs are the control entries that did not exist:
	// created on the host (Files with the content that means "absent" to
	// git, EmptyDirs empty) and bound read-only.
	Files     map[string]string
	EmptyDirs []string
}

// ResolveGit finds the git directories of the workspace at ws (absolute,
// clean, symbolic links resolved) and what of each must be read-only. It
// walks the workspace once (bounded as the masks' walk is), and does not
// follow symbolic links: one named .git is bound read-only itself, as a
// gitlink is.
func ResolveGit(ws string) (*Git, error) {
	g := &Git{Files: map[string]string{}}
	var gitDirs []string // every git directory, those under .git/modules too
	n := 0
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == ws {
				return err
			}
			return nil
		}
		if n++; n > maxMaskWalk {
			return fmt.Errorf("workspace has more than %d entries; narrow it to protect its git directories", maxMaskWalk)
		}
		if d.Name() != ".git" || p == ws {
			return nil
		}
		switch {
		case d.IsDir():
			g.Dirs = append(g.Dirs, p)
			gitDirs = append(gitDirs, p)
			// Submodules' git directories live in .git/modules/**; the
			// rest of .git holds none.
			mods, err := moduleGitDirs(filepath.Join(p, "modules"), 0)
			if err != nil {
				return err
			}
			gitDirs = append(gitDirs, mods...)
			return fs.SkipDir
		case d.Type()&fs.ModeSymlink != 0:
			// git takes the link's target as the git directory, and a
			// mount over a link lands on its target: the link could be
			// replaced from the jail. Refused rather than left open.
			return errSymlinkedGit(ws, p)
		default:
			// A gitlink: a file naming the git directory.
			g.Protect = append(g.Protect, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to find the git directories of %s: %w", ws, err)
	}
	if len(gitDirs) > maxGitDirs {
		return nil, fmt.Errorf("%d git directories in %s, more than %d to protect", len(gitDirs), ws, maxGitDirs)
	}
	for _, gd := range gitDirs {
		for _, c := range gitControl {
			p := filepath.Join(gd, c.name)
			st, err := os.Lstat(p)
			switch {
			case err == nil && st.Mode()&fs.ModeSymlink != 0:
				return nil, errSymlinkedGit(ws, p)
			case err == nil && (st.IsDir() || st.Mode().IsRegular()):
				g.Protect = append(g.Protect, p)
			case err == nil:
				return nil, fmt.Errorf("%s is neither a file nor a directory; warden will not jail a workspace it cannot protect", p)
			case errors.Is(err, fs.ErrNotExist) && c.dir:
				g.EmptyDirs = append(g.EmptyDirs, p)
			case errors.Is(err, fs.ErrNotExist):
				g.Files[p] = c.placeholder
			default:
				return nil, fmt.Errorf("failed to look at %s: %w", p, err)
			}
		}
	}
	return g, nil
}

// moduleGitDirs lists the git directories below dir (a .git/modules): a
// directory holding HEAD, as git's own test for a repository asks, at any
// depth (a submodule named a/b lives in modules/a/b), and, below each, those
// of its own modules/ (a submodule's submodules).
func moduleGitDirs(dir string, depth int) ([]string, error) {
	if depth > 16 {
		return nil, fmt.Errorf("submodules nested deeper than 16 under %s", dir)
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return nil // a missing or unreadable modules/ holds nothing the jail can see
		}
		if _, err := os.Lstat(filepath.Join(p, "HEAD")); err != nil {
			return nil // a directory level of a submodule's name
		}
		out = append(out, p)
		if len(out) > maxGitDirs {
			return fmt.Errorf("more than %d git directories under %s", maxGitDirs, dir)
		}
		nested, err := moduleGitDirs(filepath.Join(p, "modules"), depth+1)
		if err != nil {
			return err
		}
		out = append(out, nested...)
		return fs.SkipDir
	})
	return out, err
}

// errSymlinkedGit refuses a workspace whose .git, or a control entry of a
// git directory, is a symbolic link: a mount cannot hold a link (it lands
// on the target), so a jailed command could replace it and point git at a
// configuration of its own.
func errSymlinkedGit(ws, p string) error {
	rel, _ := filepath.Rel(ws, p)
	return &HintError{
		Err:     fmt.Errorf("%s in the workspace is a symbolic link, which a jail cannot hold read-only; warden will not jail a workspace whose git control files it cannot protect", rel),
		HintMsg: "replace the link with the file or directory it points to (cp -a --remove-destination), or keep the repository outside the workspace",
	}
}

// checkGitHeld refuses a protected git path that became a symbolic link
// between its resolution and now (a command of another jail of the
// workspace could plant one).
func checkGitHeld(ws string, g *Git) error {
	for _, list := range [][]string{g.Dirs, g.Protect, g.EmptyDirs} {
		for _, p := range list {
			if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
				return errSymlinkedGit(ws, p)
			}
		}
	}
	for p := range g.Files {
		if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return errSymlinkedGit(ws, p)
		}
	}
	return nil
}

// createGitPlaceholders creates, through an os.Root of ws (no symbolic
// link can send them elsewhere), the control entries that were missing, so
// that the read-only mounts over them leave the jail nothing to create.
func createGitPlaceholders(ws string, g *Git) (err error) {
	if len(g.Files)+len(g.EmptyDirs) == 0 {
		return nil
	}
	r, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer r.Close()
	rel := func(p string) (string, error) {
		rp, err := filepath.Rel(ws, p)
		if err != nil || rp == "." || strings.HasPrefix(rp, "..") {
			return "", fmt.Errorf("git placeholder %s is not inside the workspace", p)
		}
		return rp, nil
	}
	for _, d := range g.EmptyDirs {
		rp, err := rel(d)
		if err != nil {
			return err
		}
		if err := r.Mkdir(rp, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("failed to create the git placeholder %s: %w", d, err)
		}
	}
	defer func() {
		if err == nil {
			err = checkGitHeld(ws, g)
		}
	}()
	for p, content := range g.Files {
		rp, err := rel(p)
		if err != nil {
			return err
		}
		f, err := r.OpenFile(rp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue // made since it was looked at: bound read-only as it is
		}
		if err == nil {
			_, err = f.WriteString(content)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("failed to create the git placeholder %s: %w", p, err)
		}
	}
	return nil
}
