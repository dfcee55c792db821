package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/aymanbagabas/go-udiff"
)

// Line counts are a summary for a person deciding: they are computed for
// text files up to diffMaxBytes, for at most diffMaxFiles files of a plan.
const (
	diffMaxBytes = 1 << 20
	diffMaxFiles = 200
)

// lineCounts returns how many lines after adds to before and removes from
// it, or false for binary content.
func lineCounts(before, after []byte) (added, removed int, ok bool) {
	if bytes.IndexByte(before, 0) >= 0 || bytes.IndexByte(after, 0) >= 0 {
		return 0, 0, false
	}
	edits := udiff.Lines(string(before), string(after))
	d, err := udiff.ToUnifiedDiff("a", "b", string(before), edits, 0)
	if err != nil {
		return 0, 0, false
	}
	for _, h := range d.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Insert:
				added++
			case udiff.Delete:
				removed++
			}
		}
	}
	return added, removed, true
}

// countLines fills Added and Removed of a plan's modified files: the lines
// the change since the checkpoint added and removed.
func (s *Store) countLines(o *objects, p *Plan) {
	n := 0
	for i := range p.Ops {
		op := &p.Ops[i]
		if op.Op != OpWrite || op.Change != ChangeModified || n == diffMaxFiles || op.Size > diffMaxBytes {
			continue
		}
		n++
		h, err := parseHash(op.Hash)
		if err != nil {
			continue
		}
		before, err := o.read(h, diffMaxBytes)
		if err != nil {
			continue
		}
		after, err := s.root.ReadFile(op.Path, diffMaxBytes)
		if err != nil {
			continue
		}
		if a, r, ok := lineCounts(before, after); ok {
			op.Added, op.Removed = a, r
		}
	}
}

// Changes lists what changed in the workspace after checkpoint c: up to
// the next checkpoint, or up to now when c is the newest. These are the
// changes of the call c was taken for (and of anything else that wrote the
// workspace meanwhile).
func (s *Store) Changes(ctx context.Context, c *Checkpoint) ([]Op, error) {
	return locked(ctx, s, func(o *objects) ([]Op, error) {
		next, err := s.next(c)
		if err != nil {
			return nil, err
		}
		return s.changes(ctx, o, c, next, map[hash]*dirNode{}, true)
	})
}

// changes compares c with next (nil: the workspace now); lines counts the
// lines of modified text files.
func (s *Store) changes(ctx context.Context, o *objects, c, next *Checkpoint, cache map[hash]*dirNode, lines bool) ([]Op, error) {
	if next == nil {
		p, err := s.plan(ctx, o, c)
		if err != nil {
			return nil, err
		}
		return p.Changes(), nil
	}
	before, err := s.loadRecordTree(o, c, cache)
	if err != nil {
		return nil, err
	}
	after, err := s.loadRecordTree(o, next, cache)
	if err != nil {
		return nil, err
	}
	pl := &planner{s: s, report: true}
	pl.dir(before, after, "")
	p := &Plan{Target: c, Ops: slices.Concat(pl.removes, pl.mkdirs, pl.creates, pl.finals)}
	for i := range p.Ops {
		op := &p.Ops[i]
		if !lines || op.Op != OpWrite || op.Change != ChangeModified {
			continue
		}
		if a, r, ok := treeLines(o, after, op); ok {
			op.Added, op.Removed = a, r
		}
	}
	return p.Changes(), nil
}

// Entry is one checkpoint in History: the record, and how many files
// (paths other than directories) changed after it, until the next
// checkpoint or until now.
type Entry struct {
	*Checkpoint
	Changed int `json:"changed"`
	// Error says why Changed could not be counted.
	Error string `json:"error,omitempty"`
}

// History lists the checkpoints, oldest first, each with the number of
// paths changed after it. Trees shared between checkpoints are read once.
func (s *Store) History(ctx context.Context) ([]Entry, error) {
	return locked(ctx, s, func(o *objects) ([]Entry, error) { return s.history(ctx, o) })
}

func (s *Store) history(ctx context.Context, o *objects) ([]Entry, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	cache := map[hash]*dirNode{}
	out := make([]Entry, len(all))
	for i, c := range all {
		var next *Checkpoint
		if i+1 < len(all) {
			next = all[i+1]
		}
		out[i].Checkpoint = c
		ch, err := s.changes(ctx, o, c, next, cache, false)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		out[i].Changed = Files(ch)
	}
	return out, nil
}

func (s *Store) loadRecordTree(o *objects, c *Checkpoint, cache map[hash]*dirNode) (*dirNode, error) {
	h, err := parseHash(c.Tree)
	if err != nil {
		return nil, corrupt("checkpoint %s: %v", c.ID, err)
	}
	d, err := loadTreeCached(o, h, cache)
	if err != nil {
		return nil, fmt.Errorf("failed to read checkpoint %s: %w", c.ID, err)
	}
	return d, nil
}

// treeLines counts the lines of a modified file between the op's recorded
// content and the same path in tree after.
func treeLines(o *objects, after *dirNode, op *Op) (int, int, bool) {
	e, ok := lookupPath(after, op.Path)
	if !ok || e.kind != kindFile || e.size > diffMaxBytes || op.Size > diffMaxBytes {
		return 0, 0, false
	}
	h, err := parseHash(op.Hash)
	if err != nil {
		return 0, 0, false
	}
	b, err1 := o.read(h, diffMaxBytes)
	a, err2 := o.read(e.hash, diffMaxBytes)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return lineCounts(b, a)
}
