package workspace

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"
)

// DefaultMask and DefaultProtected are always in force; configuration only adds to them.
var (
	DefaultMask = []string{
		".env", ".env.*", "**/.env", "**/.env.*",
		"**/*.pem", "**/*.key",
		"**/.ssh", "**/.ssh/**", "**/.aws", "**/.aws/**", "**/.gnupg", "**/.gnupg/**",
		"warden.toml", "warden.yaml",
	}
	// DefaultProtected is git's control surface as far as a jail protects
	// it too: the GitConfig rows of GitControl. Root protects the other
	// rows (.git itself, .gitmodules) as well; see GitControl.
	DefaultProtected = gitPatterns(GitConfig)
)

// fileToolsProtected are the rows of GitControl that Root protects beyond
// DefaultProtected.
var fileToolsProtected = gitPatterns(GitTracked, GitRepoDir)

// Options adds to the built-in masks and protected paths. A nil *Options
// means the defaults alone.
type Options struct {
	// Mask lists doublestar patterns, matched case-insensitively against
	// workspace-relative slash paths; a pattern that matches a directory
	// hides everything below it.
	Mask []string
	// Protected lists patterns of paths tools may read but not change, with
	// the same matching rules as Mask.
	Protected []string
	// GitDirContents lets changes reach inside a .git directory as git
	// itself does — refs, the index, objects — for the restore of a
	// checkpoint. .git itself stays protected as an entry (never created,
	// removed, renamed or replaced, so a gitlink cannot be planted), and
	// git's control files (GitControl's GitConfig rows) stay protected
	// wherever they are. The file tools never set it.
	GitDirContents bool
}

// Root is a workspace directory opened for confined access. It is safe for
// concurrent use.
type Root struct {
	dir       string   // absolute host path, as the kernel names it
	root      *os.File // O_PATH directory handle every lookup starts from
	mask      []pattern
	protected []pattern
	// protectedEntry are protected as the entry they name only, not what
	// is below it (Options.GitDirContents).
	protectedEntry []pattern
}

var _ FS = (*Root)(nil)

// Open opens the workspace at dir. It fails when the kernel lacks openat2
// (Linux 5.6) or /proc is not mounted, since confinement relies on both.
func Open(dir string, opts *Options) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to open workspace %s: %w", dir, err)
	}
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open workspace %s: %w", dir, &os.PathError{Op: "open", Path: abs, Err: err})
	}
	real, err := fdPath(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("failed to open workspace %s: confinement needs /proc: %w", dir, err)
	}
	probe, err := openat2(fd, ".", unix.O_PATH, unix.RESOLVE_BENEATH)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("failed to open workspace %s: confinement needs openat2 (Linux 5.6 or later): %w", dir, err)
	}
	unix.Close(probe)
	w := &Root{dir: real, root: os.NewFile(uintptr(fd), real)}
	for _, p := range append(DefaultMask, lower(optsMask(opts))...) {
		w.mask = append(w.mask, compile(p))
	}
	toolsOnly := fileToolsProtected
	if opts != nil && opts.GitDirContents {
		toolsOnly = gitPatterns(GitTracked)
		for _, p := range gitPatterns(GitRepoDir) {
			w.protectedEntry = append(w.protectedEntry, compile(p))
		}
	}
	for _, p := range slices.Concat(DefaultProtected, toolsOnly, lower(optsProtected(opts))) {
		w.protected = append(w.protected, compile(p))
	}
	for _, p := range append(append([]pattern(nil), w.mask...), w.protected...) {
		if !doublestar.ValidatePattern(p.src) {
			w.Close()
			return nil, fmt.Errorf("failed to open workspace %s: invalid mask or protected pattern %q", dir, p.src)
		}
	}
	return w, nil
}

func optsMask(o *Options) []string {
	if o == nil {
		return nil
	}
	return o.Mask
}

func optsProtected(o *Options) []string {
	if o == nil {
		return nil
	}
	return o.Protected
}

func lower(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		s = strings.TrimSuffix(path.Clean(fold(s)), "/")
		out = append(out, strings.TrimPrefix(s, "./"))
	}
	return out
}

// Dir returns the absolute host path of the workspace, with symbolic links
// resolved.
func (w *Root) Dir() string { return w.dir }

// Close releases the workspace. Calls already running finish; later ones fail.
func (w *Root) Close() error { return w.root.Close() }

// maxName is the kernel's PATH_MAX: a longer name could not be opened, and
// refusing it early bounds the work of matching patterns against it.
const maxName = 4096

// Clean checks name's syntax and returns it cleaned, slash-separated and
// relative ("." for the workspace itself). It refuses NUL bytes and names
// longer than 4096 bytes (ErrInvalid), absolute paths and paths whose ".." climb above the
// workspace (ErrEscapes). Everything else, "%2e%2e" or "\\" included, is
// just a name.
func (w *Root) Clean(op, name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 || len(name) > maxName {
		return "", &PathError{Op: op, Path: name, Err: ErrInvalid}
	}
	if name == "" {
		name = "."
	}
	if strings.HasPrefix(name, "/") {
		return "", &PathError{Op: op, Path: name, Err: ErrEscapes}
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", &PathError{Op: op, Path: name, Err: ErrEscapes}
	}
	return c, nil
}

// MaskRule returns the mask pattern matching rel, if any.
func (w *Root) MaskRule(rel string) (string, bool) { return match(w.mask, rel) }

// ProtectRule returns the protected pattern matching rel, if any.
func (w *Root) ProtectRule(rel string) (string, bool) {
	if rule, ok := match(w.protected, rel); ok {
		return rule, true
	}
	if rel == "." || rel == "" {
		return "", false
	}
	return matchEntry(w.protectedEntry, rel)
}

// Check applies the name-level guards to name: syntax, lexical escapes,
// masks and, when write is set, protected paths, including git's control
// files inside a directory git would take as a repository (gitGuard, which
// looks at the directories the name passes through; nothing else touches
// the file system). A name that reaches a guarded file only through a
// symbolic link passes Check and is refused when the operation runs.
// Callers use it to refuse a call before asking anyone
// about it; the operations themselves apply the same guards again,
// race-free, on the real location.
func (w *Root) Check(op, name string, write bool) error {
	_, err := w.check(op, name, write)
	return err
}

// check cleans name and applies the masks (and, for changes, the protected
// paths and gitGuard) to the name as given. The real location of what is
// then opened is checked again by open, or for a change by guardChange.
func (w *Root) check(op, name string, write bool) (string, error) {
	rel, err := w.Clean(op, name)
	if err != nil {
		return "", err
	}
	if !write {
		return rel, w.guard(op, name, rel, false)
	}
	return rel, w.guardChange(op, name, rel)
}

// guard applies the masks, and for changes the protected paths, to rel.
func (w *Root) guard(op, name, rel string, write bool) error {
	if rule, ok := w.MaskRule(rel); ok {
		return &PathError{Op: op, Path: name, Rule: rule, Err: ErrMasked}
	}
	if write {
		if rule, ok := w.ProtectRule(rel); ok {
			return &PathError{Op: op, Path: name, Rule: rule, Err: ErrProtected}
		}
	}
	return nil
}

// guardChange applies every guard of a change to real, the real location of
// what is about to change: the masks, the protected paths and git's control
// files in directories git would take as repositories.
func (w *Root) guardChange(op, name, real string) error {
	if err := w.guard(op, name, real, true); err != nil {
		return err
	}
	return w.gitGuard(op, name, real)
}
