package sandbox

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

// masked is what resolveMasks found: paths to cover with empty files or
// empty directories, and placeholders bubblewrap will create on the host
// because the masked path did not exist yet.
type masked struct {
	files, dirs  []string
	placeholders []string
	protect      []string
}

// isLiteral reports whether a pattern has no glob syntax.
func isLiteral(p string) bool { return !strings.ContainsAny(p, `*?[{\`) }

// resolveMasks resolves mask and protected patterns against the workspace
// at dir (absolute, clean, symlinks resolved):
//
//   - a literal pattern ("secrets/prod.key", "warden.toml") is masked whether
//     or not the path exists; a missing one becomes a placeholder bubblewrap
//     creates (empty file, or empty directory for "name/**"), so the jail
//     cannot create it, provided its parent directory exists;
//   - a glob pattern ("**/*.pem") is masked at every match that exists now;
//     a match created later is refused by internal/workspace for the file
//     tools, but a command could create and read it inside the jail;
//   - a symbolic link that matches is followed when it stays inside the
//     workspace (its target is masked) and left alone otherwise (what it
//     points to is outside the jail's view);
//   - protected paths that exist are bound read-only; a missing literal
//     protected directory ("X/**") whose parent exists is mounted empty and
//     read-only, so a command cannot plant, say, .git/hooks.
func resolveMasks(dir string, mask, protect []string) (*masked, error) {
	m := &masked{}
	addPath := func(abs string, wantDir bool, placeholder bool, toProtect bool) {
		if toProtect {
			m.protect = append(m.protect, abs)
			return
		}
		if wantDir {
			m.dirs = append(m.dirs, abs)
		} else {
			m.files = append(m.files, abs)
		}
		if placeholder {
			m.placeholders = append(m.placeholders, abs)
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
				addPath(abs, st.IsDir(), false, isProtect)
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
	allDirs := dedupe(slices.Clone(m.dirs))
	// Nothing is mounted inside a masked directory (it is empty and
	// read-only, and everything below it is hidden already).
	under := func(p string) bool {
		return slices.ContainsFunc(allDirs, func(d string) bool { return d != p && within(d, p) })
	}
	m.dirs = dedupe(m.dirs)
	m.dirs = slices.DeleteFunc(m.dirs, under)
	m.files = slices.DeleteFunc(dedupe(m.files), func(f string) bool { return under(f) || slices.Contains(m.dirs, f) })
	m.protect = slices.DeleteFunc(dedupe(m.protect), func(f string) bool {
		return under(f) || slices.Contains(m.dirs, f) || slices.Contains(m.files, f)
	})
	m.placeholders = slices.DeleteFunc(dedupe(m.placeholders), func(f string) bool {
		return under(f) || !(slices.Contains(m.dirs, f) || slices.Contains(m.files, f))
	})
	if n := len(m.files) + len(m.dirs); n > maxMasks {
		return nil, fmt.Errorf("%d paths to mask, more than %d; narrow the mask patterns", n, maxMasks)
	}
	return m, nil
}

// linkInside resolves the symbolic link at p and reports its target when
// that lies inside dir.
func linkInside(dir, p string) (string, bool) {
	t, err := filepath.EvalSymlinks(p)
	if err != nil || !within(dir, t) || t == dir {
		return "", false
	}
	return t, true
}

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// hostSystem describes the host's system directories for the Plan.
func hostSystem() []SystemDir {
	var out []SystemDir
	for _, d := range SystemDirs {
		st, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			if t, err := os.Readlink(d); err == nil {
				out = append(out, SystemDir{Path: d, Symlink: t})
			}
			continue
		}
		if st.IsDir() {
			out = append(out, SystemDir{Path: d})
		}
	}
	return out
}

// hostEtc lists the entries of EtcAllowlist present on the host.
func hostEtc() []string {
	var out []string
	for _, e := range EtcAllowlist {
		if _, err := os.Stat(e); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// hostGPU lists GPU device nodes on the host.
func hostGPU() []string {
	var out []string
	if _, err := os.Stat("/dev/dri"); err == nil {
		out = append(out, "/dev/dri")
	}
	nv, _ := filepath.Glob("/dev/nvidia*")
	return append(out, nv...)
}

// createPlaceholders creates, on the host, the empty files and directories
// that masks of missing paths are mounted on, so that a read-only
// (lockdown) workspace can be masked too. They are created through an
// os.Root, so a symbolic link planted in the workspace cannot send them
// elsewhere, and they stay after the jail ends (see Worker.cleanup).
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
		if slices.Contains(dirs, p) {
			err = r.Mkdir(rel, 0o755)
		} else {
			var f *os.File
			if f, err = r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				err = f.Close()
			}
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("failed to create the mask placeholder %s: %w", p, err)
		}
	}
	return nil
}

// resolvePaths makes o.Executable (default: this program) and o.Workspace
// absolute paths with every symbolic link resolved, as each backend binds
// them.
func (o *Options) resolvePaths() error {
	var err error
	if o.Executable == "" {
		if o.Executable, err = os.Executable(); err != nil {
			return fmt.Errorf("failed to find the warden executable: %w", err)
		}
	}
	if o.Executable, err = filepath.EvalSymlinks(o.Executable); err != nil {
		return fmt.Errorf("failed to find the warden executable: %w", err)
	}
	ws, err := filepath.Abs(o.Workspace)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		return fmt.Errorf("failed to open workspace %s: %w", o.Workspace, err)
	}
	o.Workspace = ws
	return nil
}

// prepareMasks resolves the workspace defaults, security.mask and
// sandbox.mask (and the protected paths) against o.Workspace, and creates
// the placeholders that literal masks of missing paths are mounted over.
func prepareMasks(o *Options, s Settings) (*masked, error) {
	mask := slices.Concat(workspace.DefaultMask, o.Mask, s.Mask)
	protect := slices.Concat(workspace.DefaultProtected, o.Protected)
	m, err := resolveMasks(o.Workspace, mask, protect)
	if err != nil {
		return nil, err
	}
	if err := createPlaceholders(o.Workspace, m.placeholders, m.dirs); err != nil {
		return nil, err
	}
	return m, nil
}
