package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/workspace"
)

// doer sends one request to a live worker.
type doer func(ctx context.Context, req *proto.Request, timeout time.Duration) (*proto.Response, error)

// FS is workspace.FS over a jailed worker: every access happens inside the
// jail, through the worker's own *workspace.Root, so masks bind even a read.
type FS struct {
	do      doer
	timeout time.Duration
}

var _ workspace.FS = (*FS)(nil)

// Runner is command.Runner over a jailed worker.
type Runner struct {
	do    doer
	allow []string
}

var _ command.Runner = (*Runner)(nil)

// FS returns the worker's file system.
func (w *Worker) FS() *FS { return &FS{do: w.call, timeout: w.opts.RequestTimeout} }

// Runner returns the worker's command runner.
func (w *Worker) Runner() *Runner { return &Runner{do: w.call, allow: w.opts.EnvAllowlist} }

func (f *FS) call(req *proto.Request) (*proto.Response, error) {
	return f.do(context.Background(), req, f.timeout)
}

// ReadFile implements workspace.FS. A limit of 0 still stops at proto.MaxFileBytes.
func (f *FS) ReadFile(name string, limit int64) ([]byte, error) {
	resp, err := f.call(&proto.Request{Op: proto.OpReadFile, Path: name, Limit: limit})
	if err != nil {
		return nil, err
	}
	if resp.Data == nil {
		return []byte{}, nil
	}
	return resp.Data, nil
}

// Open implements workspace.FS by reading the whole file (up to proto.MaxFileBytes).
func (f *FS) Open(name string) (io.ReadCloser, error) {
	data, err := f.ReadFile(name, 0)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (f *FS) stat(op, name string) (fs.FileInfo, error) {
	resp, err := f.call(&proto.Request{Op: op, Path: name})
	if err != nil {
		return nil, err
	}
	if resp.Info == nil {
		return nil, errors.New("worker answered stat without file information")
	}
	return proto.FileInfo{W: *resp.Info}, nil
}

// Stat implements workspace.FS.
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.stat(proto.OpStat, name) }

// Lstat implements workspace.FS.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return f.stat(proto.OpLstat, name) }

// ReadDir implements workspace.FS.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	resp, err := f.call(&proto.Request{Op: proto.OpList, Path: name})
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(resp.Entries))
	for i, e := range resp.Entries {
		out[i] = proto.FileInfo{W: e}
	}
	return out, nil
}

// WriteFile implements workspace.FS.
func (f *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if len(data) > proto.MaxFileBytes {
		return &workspace.PathError{Op: "write", Path: name, Err: workspace.ErrTooLarge}
	}
	_, err := f.call(&proto.Request{Op: proto.OpWriteFile, Path: name, Data: data, Perm: uint32(perm.Perm())})
	return err
}

// Remove implements workspace.FS.
func (f *FS) Remove(name string) error {
	_, err := f.call(&proto.Request{Op: proto.OpRemove, Path: name})
	return err
}

// MkdirAll implements workspace.FS.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	_, err := f.call(&proto.Request{Op: proto.OpMkdir, Path: name, Perm: uint32(perm.Perm())})
	return err
}

// Rename implements workspace.FS.
func (f *FS) Rename(oldname, newname string) error {
	_, err := f.call(&proto.Request{Op: proto.OpRename, Path: oldname, NewPath: newname})
	return err
}

// DirPath implements workspace.FS: the directory's path in the jail, which
// is its host path too.
func (f *FS) DirPath(name string) (string, error) {
	resp, err := f.call(&proto.Request{Op: proto.OpDirPath, Path: name})
	if err != nil {
		return "", err
	}
	return resp.Path, nil
}

// Walk implements workspace.FS: the worker walks the tree (masked entries
// are never sent) and fn is called here, in the same order and with the
// same arguments as a local walk.
func (f *FS) Walk(name string, fn fs.WalkDirFunc) error {
	resp, err := f.call(&proto.Request{Op: proto.OpWalk, Path: name})
	if err != nil {
		return err
	}
	skip := "" // a directory whose subtree is skipped
	skipParent := ""
	for _, e := range resp.Entries {
		if skip != "" && (e.Path == skip || strings.HasPrefix(e.Path, skip+"/")) {
			continue
		}
		if skipParent != "" && path.Dir(e.Path) == skipParent {
			continue
		}
		var d fs.DirEntry
		if !e.NoEntry {
			d = proto.FileInfo{W: e}
		}
		var eerr error
		if e.Err != nil {
			eerr = proto.DecodeError(e.Err)
		}
		err := fn(e.Path, d, eerr)
		switch {
		case err == nil:
		case errors.Is(err, fs.SkipAll):
			return nil
		case errors.Is(err, fs.SkipDir):
			if d != nil && d.IsDir() {
				if e.Path == resp.Entries[0].Path {
					return nil
				}
				skip = e.Path
			} else {
				skipParent = path.Dir(e.Path)
			}
		default:
			return err
		}
	}
	return nil
}

// Run implements command.Runner: the command runs in the jail. Spec.Env is
// filtered through the environment allowlist (nothing secret-looking gets
// in); an empty Env means the jail's own environment.
func (r *Runner) Run(ctx context.Context, spec command.Spec) (command.Result, error) {
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = proto.DefaultExecTimeout
	}
	timeout = min(timeout, proto.MaxExecTimeout)
	req := &proto.Request{
		Op: proto.OpExec, Argv: spec.Argv, Shell: spec.Shell, Cwd: spec.Dir,
		Env: jail.FilterEnv(spec.Env, r.allow), TimeoutMS: timeout.Milliseconds(),
		MaxOutputLines: spec.MaxOutputLines,
	}
	// The worker enforces the timeout; the grace covers killing the group.
	resp, err := r.do(ctx, req, timeout+10*time.Second)
	if err != nil {
		return command.Result{}, err
	}
	if resp.Exec == nil {
		return command.Result{}, errors.New("worker answered exec without a result")
	}
	return *resp.Exec, nil
}
