package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/wardenhq/warden/internal/workspace"
)

// maxMaskWalk bounds the walk that finds existing matches of glob masks. A
// larger workspace is refused rather than jailed with secrets left showing.
const maxMaskWalk = 500_000

// maxMasks bounds how many paths are masked by mounts (one file descriptor
// or one tmpfs each).
const maxMasks = 4096

// Masks is what ResolveMasks found in a workspace: paths to cover with
// empty read-only files or directories, paths to bind read-only over
// themselves, and placeholders created on the host because a masked path
// did not exist yet (the mount needs something to cover).
type Masks struct {
	Files, Dirs  []string
	Protect      []string
	Placeholders []string
	// GitDirs are the workspace's git directories, each bound onto itself
	// so that a jailed command cannot rename or replace it (see ResolveGit).
	GitDirs []string
	// GitIgnore are gitignore patterns, relative to the repository each
	// placeholder file is in, that hide the placeholders from git in the
	// jail (see placeholderIgnores).
	GitIgnore []string
}

// isLiteral reports whether a pattern has no glob syntax.
func isLiteral(p string) bool { return !strings.ContainsAny(p, `*?[{\`) }

// ResolveMasks resolves mask and protected patterns against the workspace
// at dir (absolute, clean, symlinks resolved):
//
//   - a literal pattern ("secrets/prod.key", "warden.toml") is masked whether
//     or not the path exists; a missing one gets a placeholder on the host
//     (an empty file, or an empty directory for "name/**") that the mask
//     covers, so the jail cannot create it, provided its parent directory
//     exists;
//   - a glob pattern ("**/*.pem") is masked at every match that exists now;
//     a match created later is refused by internal/workspace for the file
//     tools, but a command could create and read it inside the jail;
//   - a symbolic link that matches is followed when it stays inside the
//     workspace (its target is masked) and left alone otherwise (what it
//     points to is outside the jail's view);
//   - protected paths that exist are bound read-only; a missing literal
//     protected directory ("X/**") whose parent exists is mounted empty and
//     read-only, so a command cannot plant, say, .git/hooks.
func ResolveMasks(dir string, mask, protect []string) (*Masks, error) {
	m := &Masks{}
	addPath := func(abs string, wantDir bool, placeholder bool, toProtect bool) {
		if toProtect {
			m.Protect = append(m.Protect, abs)
			return
		}
		if wantDir {
			m.Dirs = append(m.Dirs, abs)
		} else {
			m.Files = append(m.Files, abs)
		}
		if placeholder {
			m.Placeholders = append(m.Placeholders, abs)
		}
	}
	var globs, pglobs []string
	for pi, list := range [][]string{mask, protect} {
		isProtect := pi == 1
		for _, p := range list {
			p = strings.TrimPrefix(path.Clean(strings.ToLower(p)), "./")
			if p == "." || p == "" || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") {
				continue
			}
			lit, dirOnly := p, false
			if strings.HasSuffix(p, "/**") && isLiteral(strings.TrimSuffix(p, "/**")) {
				lit, dirOnly = strings.TrimSuffix(p, "/**"), true
			}
			if !isLiteral(lit) {
				if isProtect {
					pglobs = append(pglobs, p)
				} else {
					globs = append(globs, p)
				}
				continue
			}
			abs := filepath.Join(dir, filepath.FromSlash(lit))
			st, err := os.Lstat(abs)
			switch {
			case err == nil && st.Mode()&fs.ModeSymlink != 0:
				if t, ok := linkInside(dir, abs); ok {
					if tst, err := os.Stat(t); err == nil {
						addPath(t, tst.IsDir(), false, isProtect)
					}
				}
			case err == nil:
				// A placeholder a jail of the workspace made earlier is
				// still one: the last jail out removes it.
				addPath(abs, st.IsDir(), !isProtect && placeholderAt(dir, abs), isProtect)
			case errors.Is(err, fs.ErrNotExist):
				// A missing warden.toml/warden.yaml gets a placeholder too:
				// the config loader reads an empty one as absent.
				if isProtect && !dirOnly {
					continue
				}
				if pst, perr := os.Stat(filepath.Dir(abs)); perr == nil && pst.IsDir() {
					addPath(abs, dirOnly, true, false)
				}
			default:
				return nil, fmt.Errorf("failed to resolve mask %q: %w", p, err)
			}
		}
	}
	if len(globs)+len(pglobs) > 0 {
		n := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dir {
					return err
				}
				return nil // unreadable below: the jail cannot read it either
			}
			if n++; n > maxMaskWalk {
				return fmt.Errorf("workspace has more than %d entries; narrow it to resolve the masks", maxMaskWalk)
			}
			if p == dir {
				return nil
			}
			rel := strings.ToLower(filepath.ToSlash(p[len(dir)+1:]))
			for pi, list := range [][]string{globs, pglobs} {
				for _, g := range list {
					if ok, _ := doublestar.Match(g, rel); !ok {
						continue
					}
					isProtect := pi == 1
					switch {
					case d.Type()&fs.ModeSymlink != 0:
						if t, ok := linkInside(dir, p); ok {
							if tst, err := os.Stat(t); err == nil {
								addPath(t, tst.IsDir(), false, isProtect)
							}
						}
					default:
						addPath(p, d.IsDir(), false, isProtect)
					}
					if d.IsDir() && !isProtect {
						return fs.SkipDir
					}
					return nil
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("failed to resolve masks in %s: %w", dir, err)
		}
	}
	allDirs := dedupe(slices.Clone(m.Dirs))
	// Nothing is mounted inside a masked directory (it is empty and
	// read-only, and everything below it is hidden already).
	under := func(p string) bool {
		return slices.ContainsFunc(allDirs, func(d string) bool { return d != p && Within(d, p) })
	}
	m.Dirs = dedupe(m.Dirs)
	m.Dirs = slices.DeleteFunc(m.Dirs, under)
	m.Files = slices.DeleteFunc(dedupe(m.Files), func(f string) bool { return under(f) || slices.Contains(m.Dirs, f) })
	m.Protect = slices.DeleteFunc(dedupe(m.Protect), func(f string) bool {
		return under(f) || slices.Contains(m.Dirs, f) || slices.Contains(m.Files, f)
	})
	m.Placeholders = slices.DeleteFunc(dedupe(m.Placeholders), func(f string) bool {
		return under(f) || !(slices.Contains(m.Dirs, f) || slices.Contains(m.Files, f))
	})
	if n := len(m.Files) + len(m.Dirs); n > maxMasks {
		return nil, fmt.Errorf("%d paths to mask, more than %d; narrow the mask patterns", n, maxMasks)
	}
	return m, nil
}

// linkInside resolves the symbolic link at p and reports its target when
// that lies inside dir.
func linkInside(dir, p string) (string, bool) {
	t, err := filepath.EvalSymlinks(p)
	if err != nil || !Within(dir, t) || t == dir {
		return "", false
	}
	return t, true
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// placeholderAt reports whether abs, in the workspace ws, is an empty
// placeholder of warden's.
func placeholderAt(ws, abs string) bool {
	rel, err := filepath.Rel(ws, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return false
	}
	r, err := os.OpenRoot(ws)
	if err != nil {
		return false
	}
	defer r.Close()
	return isPlaceholder(r, rel)
}

// createPlaceholders creates, on the host, the empty files and directories
// that masks of missing paths are mounted on, so that a read-only
// (lockdown) workspace can be masked too, and marks them as warden's. They
// are created through an os.Root, so a symbolic link planted in the
// workspace cannot send them elsewhere. They stay while any jail of the
// workspace runs (see Hold): removing one while a jail has it mounted would
// detach that mount and unmask the path there.
func createPlaceholders(ws string, placeholders, dirs []string) error {
	if len(placeholders) == 0 {
		return nil
	}
	r, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, p := range placeholders {
		rel, err := filepath.Rel(ws, p)
		if err != nil {
			return err
		}
		var f *os.File
		if slices.Contains(dirs, p) {
			if err = r.Mkdir(rel, 0o755); err == nil {
				f, err = r.Open(rel)
			}
		} else {
			f, err = r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if err == nil {
			markPlaceholder(f)
			err = f.Close()
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("failed to create the mask placeholder %s: %w", p, err)
		}
	}
	return nil
}

// PrepareMasks resolves the workspace defaults, security.mask and
// sandbox.mask (mask) and the protected paths (protect) in the workspace at
// ws, and git's control surface (ResolveGit), and creates the placeholders
// that masks and protections of missing paths are mounted over. The Hold
// keeps the mask placeholders in place: release it once the jail has
// exited, and the last jail of the workspace removes them.
func PrepareMasks(ws string, mask, protect []string) (_ *Masks, _ *Hold, err error) {
	h, err := holdWorkspace(ws)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			h.Release()
		}
	}()
	m, err := ResolveMasks(ws, slices.Concat(workspace.DefaultMask, mask), slices.Concat(workspace.DefaultProtected, protect))
	if err != nil {
		return nil, nil, err
	}
	h.todo = m.Placeholders
	if err := createPlaceholders(ws, m.Placeholders, m.Dirs); err != nil {
		return nil, nil, err
	}
	g, err := ResolveGit(ws)
	if err != nil {
		return nil, nil, err
	}
	if err := createGitPlaceholders(ws, g); err != nil {
		return nil, nil, err
	}
	m.addGit(g)
	m.GitIgnore = placeholderIgnores(m.Placeholders, m.Dirs)
	return m, h, nil
}

// placeholderIgnores returns, for each placeholder file (an empty directory
// is invisible to git already), a gitignore pattern anchored at the root of
// the git work tree it is in: the nearest directory above it holding a .git.
// A placeholder outside any repository needs none.
func placeholderIgnores(placeholders, dirs []string) []string {
	var out []string
	for _, p := range placeholders {
		if slices.Contains(dirs, p) {
			continue
		}
		for top := filepath.Dir(p); ; top = filepath.Dir(top) {
			if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
				rel, err := filepath.Rel(top, p)
				if err == nil {
					out = append(out, "/"+gitignoreEscape(filepath.ToSlash(rel)))
				}
				break
			}
			if top == "/" || top == "." {
				break
			}
		}
	}
	return dedupe(out)
}

// gitignoreEscape escapes what gitignore reads as pattern syntax in a
// literal path.
func gitignoreEscape(s string) string {
	var b strings.Builder
	for i, r := range s {
		if strings.ContainsRune(`\*?[]!#`, r) || r == ' ' && i == len(s)-1 {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// addGit adds the git protections to m: what is masked already stays
// masked (a mask hides more than a read-only bind).
func (m *Masks) addGit(g *Git) {
	masked := func(p string) bool {
		return slices.Contains(m.Files, p) || slices.ContainsFunc(m.Dirs, func(d string) bool { return Within(d, p) })
	}
	protect := slices.Concat(m.Protect, g.Protect, g.EmptyDirs)
	for p := range g.Files {
		protect = append(protect, p)
	}
	m.Protect = slices.DeleteFunc(dedupe(protect), masked)
	m.GitDirs = slices.DeleteFunc(dedupe(slices.Clone(g.Dirs)), masked)
}
