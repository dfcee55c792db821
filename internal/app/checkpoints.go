package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/workspace"
)

// Checkpoints are taken on the host side of the workspace directory,
// whatever runs the workspace's commands: unsandboxed, in the local jail or
// in a docker container (both bind the host directory). The ssh backend's
// workspace is on the remote host, which this process cannot read: it gets
// no checkpoints, and says so once (the policy then treats every call as
// one that cannot be undone).

// ErrNoCheckpoints says why a workspace has no checkpoints.
var ErrNoCheckpoints = errors.New("this workspace has no checkpoints")

// CheckpointOptions are the checkpoint store options of the workspace at
// dir under cfg, with the state directory stateDir ("" for
// config.StateDir). It fails (wrapping ErrNoCheckpoints) for a workspace
// whose files are not on this host.
func CheckpointOptions(cfg *config.Config, dir, stateDir string) (*checkpoint.Options, error) {
	if sandbox.Enabled(cfg.Sandbox) && cfg.Sandbox.Backend == "ssh" {
		return nil, fmt.Errorf("%w: the ssh backend's workspace is on %s, not on this host", ErrNoCheckpoints, cfg.Sandbox.RemoteHost)
	}
	if stateDir == "" {
		stateDir = config.StateDir()
	}
	o := checkpoint.OptionsFrom(cfg.Checkpoints, stateDir)
	if sandbox.Enabled(cfg.Sandbox) {
		// What the jail binds besides the workspace: the store may not be
		// in any of it.
		for _, p := range append(append([]string(nil), cfg.Sandbox.RWPaths...), cfg.Sandbox.ROPaths...) {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			o.Exposed = append(o.Exposed, filepath.Clean(p))
		}
	}
	return o, nil
}

// checkpointRootOptions are the guards of the workspace a checkpoint store
// reads and restores: the file tools' masks and protected paths, except
// that a restore reaches inside .git (refs, the index, objects) as git
// does; .git itself and git's control files stay protected.
func checkpointRootOptions(cfg *config.Config) *workspace.Options {
	return &workspace.Options{Mask: cfg.Security.Mask, Protected: cfg.Security.Protected, GitDirContents: true}
}

// openCheckpoints opens the checkpoint store the engine records into
// before each call that may change the workspace, and reports an undo left
// interrupted. Checkpoints turned off in the configuration give nil. A
// store that cannot be opened does not stop calls that only read: it
// refuses, with its reason, each call that would need a checkpoint.
func openCheckpoints(cfg *config.Config, dir, stateDir string, log *slog.Logger, closeWith func(func() error)) (*checkpoint.Store, engineCheckpointer) {
	if !cfg.Checkpoints.Enabled {
		return nil, nil
	}
	o, err := CheckpointOptions(cfg, dir, stateDir)
	if errors.Is(err, ErrNoCheckpoints) {
		log.Info("checkpoints are off", "why", err)
		return nil, nil
	}
	var s *checkpoint.Store
	if err == nil {
		var cr *workspace.Root
		if cr, err = workspace.Open(dir, checkpointRootOptions(cfg)); err == nil {
			if s, err = checkpoint.Open(cr, o); err != nil {
				cr.Close()
			} else {
				closeWith(cr.Close)
			}
		}
	}
	if err != nil {
		return nil, failedCheckpoints{fmt.Errorf("%w (turn them off with [checkpoints] enabled = false in the user config)", err)}
	}
	if j, err := s.Pending(); err != nil {
		log.Error("cannot read the checkpoint store's undo journal", "error", err)
	} else if j != nil {
		log.Warn(fmt.Sprintf("an undo to checkpoint %s was interrupted (started %s): calls that change the workspace are refused until `warden undo --resume` finishes it or `warden undo --rollback` goes back", j.Target, j.Started.Local().Format("2006-01-02 15:04:05")))
	}
	return s, s
}

// engineCheckpointer is engine.Checkpointer, named here so that a nil
// store is a nil interface, not an interface holding a nil pointer.
type engineCheckpointer interface {
	Checkpoint(ctx context.Context, call checkpoint.Call) (*checkpoint.Checkpoint, error)
}

// failedCheckpoints refuses every checkpoint with why the store could not
// be opened.
type failedCheckpoints struct{ err error }

func (f failedCheckpoints) Checkpoint(context.Context, checkpoint.Call) (*checkpoint.Checkpoint, error) {
	return nil, f.err
}

// OpenCheckpoints opens the checkpoint store of the workspace f names,
// with its configuration's masks and protected paths, for warden undo and
// warden checkpoints: no jail, no engine. Close releases it.
func OpenCheckpoints(f Flags, stateDir string, log *slog.Logger) (*Checkpoints, error) {
	cfg, err := LoadConfig(f, log)
	if err != nil {
		return nil, err
	}
	root, err := workspace.Open(WorkspaceDir(f, cfg), checkpointRootOptions(cfg))
	if err != nil {
		return nil, err
	}
	o, err := CheckpointOptions(cfg, root.Dir(), stateDir)
	if err != nil {
		root.Close()
		return nil, err
	}
	s, err := checkpoint.Open(root, o)
	if err != nil {
		root.Close()
		return nil, err
	}
	return &Checkpoints{Store: s, Config: cfg, root: root}, nil
}

// Checkpoints is a workspace's checkpoint store, opened alone.
type Checkpoints struct {
	*checkpoint.Store
	Config *config.Config
	root   *workspace.Root
}

// Close releases the workspace.
func (c *Checkpoints) Close() error { return c.root.Close() }

// CheckpointSource serves the supervisor page the checkpoint stores under
// stateDir ("" for config.StateDir), each opened with its own workspace's
// configuration.
type CheckpointSource struct {
	StateDir string
	Log      *slog.Logger
}

func (c CheckpointSource) state() string {
	if c.StateDir == "" {
		return config.StateDir()
	}
	return c.StateDir
}

// Workspaces lists the workspaces with checkpoints.
func (c CheckpointSource) Workspaces() ([]string, error) { return checkpoint.Workspaces(c.state()) }

// Open opens the store of workspace ws.
func (c CheckpointSource) Open(_ context.Context, ws string) (*checkpoint.Store, func(), error) {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cp, err := OpenCheckpoints(Flags{Workspace: ws}, c.state(), log)
	if err != nil {
		return nil, nil, err
	}
	return cp.Store, func() { cp.Close() }, nil
}

// LazyCheckpoints is the checkpoint store of a process that decides calls
// an agent host runs itself (warden hook): most of its calls only read, so
// the store is opened on the first checkpoint. It is nil (no checkpoints)
// when they are off or the workspace's files are not on this host.
func LazyCheckpoints(cfg *config.Config, dir string, log *slog.Logger) (engine Checkpointer, closeFn func() error) {
	if !cfg.Checkpoints.Enabled {
		return nil, func() error { return nil }
	}
	if _, err := CheckpointOptions(cfg, dir, ""); err != nil {
		return nil, func() error { return nil }
	}
	l := &lazyCheckpoints{cfg: cfg, dir: dir, log: log}
	return l, l.close
}

// Checkpointer is engine.Checkpointer (app does not name the engine's
// interface in its exported API to keep the dependency one way).
type Checkpointer = engineCheckpointer

type lazyCheckpoints struct {
	cfg     *config.Config
	dir     string
	log     *slog.Logger
	once    sync.Once
	s       engineCheckpointer
	closers closers
}

func (l *lazyCheckpoints) Checkpoint(ctx context.Context, call checkpoint.Call) (*checkpoint.Checkpoint, error) {
	l.once.Do(func() {
		_, l.s = openCheckpoints(l.cfg, l.dir, "", l.log, l.closers.add)
	})
	if l.s == nil {
		return nil, ErrNoCheckpoints
	}
	return l.s.Checkpoint(ctx, call)
}

func (l *lazyCheckpoints) close() error { return l.closers.close() }
