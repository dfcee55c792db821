package checkpoint

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// Options configure a Store. A nil *Options means the defaults of
// [checkpoints] and the state directory of config.StateDir.
type Options struct {
	// StateDir is warden's state directory; the store is
	// StateDir/checkpoints/<workspace id>. Default config.StateDir().
	StateDir string
	// Keep, MaxBytes and MaxFileBytes bound the store (0: the default).
	Keep         int
	MaxBytes     int64
	MaxFileBytes int64
	// Ignore adds gitignore-syntax patterns to DefaultIgnore.
	Ignore []string
	// NoGitignore records what .gitignore files ignore too.
	NoGitignore bool
	// Exposed are host paths a command can reach besides the workspace
	// (the sandbox's rw_paths and ro_paths): the store may not be in one.
	Exposed []string
	// LockWait bounds the wait for another process's checkpoint or undo
	// (default 2 minutes).
	LockWait time.Duration
}

// OptionsFrom returns the options that [checkpoints] sets.
func OptionsFrom(c config.Checkpoints, stateDir string) *Options {
	return &Options{
		StateDir: stateDir, Keep: c.Keep, MaxBytes: c.MaxBytes, MaxFileBytes: c.MaxFileBytes,
		Ignore: c.Ignore, NoGitignore: !c.Gitignore,
	}
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.StateDir == "" {
		v.StateDir = config.StateDir()
	}
	if v.Keep <= 0 {
		v.Keep = config.DefaultCheckpointKeep
	}
	if v.MaxBytes <= 0 {
		v.MaxBytes = config.DefaultCheckpointMaxBytes
	}
	if v.MaxFileBytes <= 0 {
		v.MaxFileBytes = config.DefaultCheckpointMaxFileBytes
	}
	if v.LockWait <= 0 {
		v.LockWait = 2 * time.Minute
	}
	return v
}

// Store holds the checkpoints of one workspace. It is safe for concurrent
// use, within a process and across processes: every change to the store
// and every restore holds an exclusive lock on the store's lock file.
type Store struct {
	root  *workspace.Root
	dir   string
	opts  Options
	rules []ignoreRule // DefaultIgnore then Options.Ignore
}

// Dir returns where the checkpoints of the workspace at wsDir (an
// absolute path with links resolved) are kept under stateDir.
func Dir(stateDir, wsDir string) string {
	return filepath.Join(stateDir, "checkpoints", WorkspaceID(wsDir))
}

// WorkspaceID names the store of the workspace at wsDir: 16 hex digits of
// the SHA-256 of its path.
func WorkspaceID(wsDir string) string {
	sum := sha256.Sum256([]byte(wsDir))
	return hex.EncodeToString(sum[:8])
}

// Workspaces lists the workspaces that have a checkpoint store under
// stateDir, by the path each store records (checked against its id).
func Workspaces(stateDir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(stateDir, "checkpoints"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list checkpoint stores: %w", err)
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(stateDir, "checkpoints", e.Name(), "workspace"))
		if err != nil {
			continue
		}
		ws := strings.TrimSuffix(string(b), "\n")
		if filepath.IsAbs(ws) && WorkspaceID(ws) == e.Name() {
			out = append(out, ws)
		}
	}
	return out, nil
}

// Open opens (creating if needed) the checkpoint store of the workspace
// root. It refuses a store that the workspace or a path the jail binds
// would contain (ErrExposed).
func Open(root *workspace.Root, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	if o.StateDir == "" || !filepath.IsAbs(o.StateDir) {
		return nil, errors.New("failed to open the checkpoint store: no state directory (set XDG_STATE_HOME or HOME)")
	}
	s := &Store{root: root, opts: o, dir: Dir(o.StateDir, root.Dir())}
	for _, d := range []string{s.dir, s.packDir(), s.recordsDir()} {
		if err := mkdirPrivate(d); err != nil {
			return nil, err
		}
	}
	if err := s.checkExposure(); err != nil {
		return nil, err
	}
	if err := s.claim(); err != nil {
		return nil, err
	}
	s.rules = parseIgnore(strings.Join(s.ignoreList(), "\n"), nil)
	return s, nil
}

// ignoreList is the ignore patterns in force: the built-in ones, then the
// configured ones. A checkpoint records them, and its restore uses them.
func (s *Store) ignoreList() []string {
	return append(append([]string{}, DefaultIgnore...), s.opts.Ignore...)
}

// mkdirPrivate makes dir and its missing parents 0700 and checks that dir
// is a real directory, not a link to elsewhere.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create the checkpoint store: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("failed to create the checkpoint store: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("failed to open the checkpoint store: %s is not a directory", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("failed to make %s private: %w", dir, err)
		}
	}
	return nil
}

// checkExposure refuses a store inside the workspace or inside a path
// the jail binds: what it protects against could read or forge it there.
func (s *Store) checkExposure() error {
	real, err := filepath.EvalSymlinks(s.dir)
	if err != nil {
		return fmt.Errorf("failed to resolve the checkpoint store: %w", err)
	}
	for _, p := range append([]string{s.root.Dir()}, s.opts.Exposed...) {
		rp, err := filepath.EvalSymlinks(p)
		if err != nil {
			rp = filepath.Clean(p)
		}
		if rel, err := filepath.Rel(rp, real); err == nil && filepath.IsLocal(rel) {
			return fmt.Errorf("%w: %s is inside %s; point XDG_STATE_HOME elsewhere", ErrExposed, real, rp)
		}
	}
	return nil
}

// claim records which workspace the store belongs to, and refuses one
// that belongs to another.
func (s *Store) claim() error {
	p := filepath.Join(s.dir, "workspace")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return writeAtomic(p, []byte(s.root.Dir()+"\n"), true)
	}
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", p, err)
	}
	if got := strings.TrimSuffix(string(b), "\n"); got != s.root.Dir() {
		return corrupt("store %s belongs to workspace %q, not %q", s.dir, got, s.root.Dir())
	}
	return nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Workspace returns the workspace the store belongs to.
func (s *Store) Workspace() string { return s.root.Dir() }

// lock takes the store's exclusive lock, waiting for another holder up to
// LockWait or ctx. A lock held by a process that died is released by the
// kernel with the process.
func (s *Store) lock(ctx context.Context) (func(), error) {
	fd, err := unix.Open(filepath.Join(s.dir, "lock"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the checkpoint store's lock: %w", err)
	}
	deadline := time.Now().Add(s.opts.LockWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 10*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			unix.Close(fd)
			return nil, fmt.Errorf("failed to lock the checkpoint store: %w", err)
		}
		if time.Now().After(deadline) {
			unix.Close(fd)
			return nil, fmt.Errorf("%w: another warden held its lock for %s", ErrLocked, s.opts.LockWait)
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
	return func() { unix.Close(fd) }, nil
}

// locked runs f with the store's lock held and its objects loaded: every
// read of trees and every change to the store goes through here.
func locked[T any](ctx context.Context, s *Store, f func(o *objects) (T, error)) (T, error) {
	var zero T
	unlock, err := s.lock(ctx)
	if err != nil {
		return zero, err
	}
	defer unlock()
	o, err := s.objects()
	if err != nil {
		return zero, err
	}
	defer o.close()
	return f(o)
}

// noPending refuses while an interrupted undo waits to be resumed or
// rolled back; the caller holds the lock.
func (s *Store) noPending() error {
	j, err := s.journal()
	if err != nil {
		return err
	}
	if j != nil {
		return fmt.Errorf("%w: an undo to checkpoint %s was interrupted (run `warden undo --resume` or `warden undo --rollback`)", ErrUndoPending, j.Target)
	}
	return nil
}

// writeAtomic writes data to a temporary file next to path and renames it
// over path; with durable, the file and the rename are synced first.
func writeAtomic(path string, data []byte, durable bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	if durable {
		return fsyncPath(filepath.Dir(path))
	}
	return nil
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Store) packDir() string { return filepath.Join(s.dir, "packs") }

// objects loads the object store; the caller holds the lock and closes it.
func (s *Store) objects() (*objects, error) { return loadObjects(s.packDir()) }

// cleanTmp removes temporary files a killed process left behind. It runs
// under the lock, so no live writer owns them.
func (s *Store) cleanTmp(o *objects) {
	o.removeOrphans()
	for _, d := range []string{s.dir, s.recordsDir()} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
}
