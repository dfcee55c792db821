package tools

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/wardenhq/warden/internal/workspace"
)

// Location is where a path a call changes leads: the path as the call
// names it, and the real workspace-relative path the change touches (see
// workspace.Locate). They differ when a directory on the way is a link.
type Location struct {
	Path string `json:"path"`
	Real string `json:"real"`
}

// Moved reports whether the change lands somewhere else than its name says.
func (l Location) Moved() bool { return l.Path != l.Real }

// locate resolves name for a change, through the file system the call
// will use when it can (the jail's, whose worker resolves inside the jail),
// else through the workspace on the host.
func locate(env *Env, op, name string) (Location, error) {
	var real string
	var err error
	switch {
	case pinnedFS(env) != nil:
		real, err = pinnedFS(env).Locate(op, name)
	case env.Root != nil:
		real, err = env.Root.Locate(op, name)
	default:
		return Location{Path: name, Real: name}, nil
	}
	if err != nil {
		return Location{}, err
	}
	return Location{Path: name, Real: real}, nil
}

func pinnedFS(env *Env) workspace.PinnedFS {
	p, _ := env.FS.(workspace.PinnedFS)
	return p
}

// MovedNote is what a person deciding is told when a change lands
// elsewhere than its name says: a line per such change ("" when none does).
func MovedNote(locs []Location) string {
	var b strings.Builder
	for _, l := range locs {
		if l.Moved() {
			fmt.Fprintf(&b, "%s leads to %s: the change is made there\n", l.Path, l.Real)
		}
	}
	return b.String()
}

type pinsKey struct{}

// WithPins returns a context that binds the changes of a call to the
// locations found when it was judged and approved: a file tool then
// changes a path only if it still leads there (workspace.ErrMoved
// otherwise).
func WithPins(ctx context.Context, locs []Location) context.Context {
	if len(locs) == 0 {
		return ctx
	}
	m := make(map[string]string, len(locs))
	for _, l := range locs {
		m[l.Path] = l.Real
	}
	return context.WithValue(ctx, pinsKey{}, m)
}

func pinOf(ctx context.Context, name string) (string, bool) {
	m, _ := ctx.Value(pinsKey{}).(map[string]string)
	real, ok := m[name]
	return real, ok
}

// writeFile writes name through env.FS, at its pinned location when the
// call has one.
func writeFile(ctx context.Context, env *Env, name string, data []byte, perm fs.FileMode) error {
	real, ok := pinOf(ctx, name)
	if !ok {
		return env.FS.WriteFile(name, data, perm)
	}
	p := pinnedFS(env)
	if p == nil {
		return fmt.Errorf("cannot bind the write of %s to the location approved: the file system does not support it", name)
	}
	return p.WriteFileAt(name, real, data, perm)
}

// removeFile removes name through env.FS, at its pinned location when the
// call has one.
func removeFile(ctx context.Context, env *Env, name string) error {
	real, ok := pinOf(ctx, name)
	if !ok {
		return env.FS.Remove(name)
	}
	p := pinnedFS(env)
	if p == nil {
		return fmt.Errorf("cannot bind the removal of %s to the location approved: the file system does not support it", name)
	}
	return p.RemoveAt(name, real)
}
