package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/wardenhq/warden/internal/workspace"
)

// Checkpoint records the workspace as it is now, before call runs. It
// returns only once the checkpoint is complete and durable; on an error
// nothing was committed and the call must not run. While an interrupted
// undo waits to be resumed or rolled back it fails with ErrUndoPending.
func (s *Store) Checkpoint(ctx context.Context, call Call) (*Checkpoint, error) {
	return locked(ctx, s, func(o *objects) (*Checkpoint, error) { return s.checkpoint(ctx, o, call) })
}

func (s *Store) checkpoint(ctx context.Context, o *objects, call Call) (*Checkpoint, error) {
	if err := s.noPending(); err != nil {
		return nil, err
	}
	c, err := s.take(ctx, o, ReasonCall, &call, "")
	if err != nil {
		return nil, err
	}
	if err := s.prune(o, nil); err != nil {
		c.Warnings = append(c.Warnings, "pruning old checkpoints failed: "+err.Error())
	}
	// Read the packs afresh: pruning may have removed some of what o knew.
	if fresh, err := s.objects(); err != nil {
		c.Warnings = append(c.Warnings, "consolidating the checkpoint store failed: "+err.Error())
	} else {
		if err := s.consolidate(fresh); err != nil {
			c.Warnings = append(c.Warnings, "consolidating the checkpoint store failed: "+err.Error())
		}
		fresh.close()
	}
	return c, nil
}

// take records a checkpoint; the caller holds the lock.
func (s *Store) take(ctx context.Context, o *objects, reason string, call *Call, undoTo string) (*Checkpoint, error) {
	start := time.Now()
	s.cleanTmp(o)
	rfs, err := s.recordFiles()
	if err != nil {
		return nil, err
	}
	seq := int64(1)
	if n := len(rfs); n > 0 {
		seq = rfs[n-1].seq + 1
	}
	sc := &scanner{
		root: s.root, ix: s.loadIndex(), objs: o, maxFile: s.opts.MaxFileBytes,
		rules: s.rules, gitignore: !s.opts.NoGitignore,
		readRules: func(rel string, present bool) (string, bool) {
			if !present {
				return "", false
			}
			b, err := s.root.ReadFile(rel, maxIgnoreFile)
			return string(b), err == nil
		},
		maxNew: s.opts.MaxBytes, tooMuch: s.tooMuch,
	}
	top, err := sc.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to take a checkpoint: %w", err)
	}
	newBytes, err := o.commit()
	if err != nil {
		return nil, fmt.Errorf("failed to take a checkpoint: %w", err)
	}
	c := &Checkpoint{
		Version: recordVersion, ID: newID(), Seq: seq, Time: start.UTC(), Tree: top.hash.String(),
		Reason: reason, Call: call, UndoTo: undoTo,
		Ignore: s.ignoreList(), Gitignore: !s.opts.NoGitignore,
		Files: sc.files, Bytes: sc.bytes, NewBytes: newBytes, SkippedCount: len(sc.skips),
	}
	c.Skipped = sc.skips[:min(len(sc.skips), maxSkips)]
	c.DurationMS = time.Since(start).Milliseconds()
	if err := s.writeRecord(c); err != nil {
		return nil, fmt.Errorf("failed to take a checkpoint: %w", err)
	}
	// Committed. The index and the usage count are caches: losing them
	// costs time, never correctness.
	if err := writeAtomic(filepath.Join(s.dir, "index"), encodeIndex(sc.newIx), false); err != nil {
		c.Warnings = append(c.Warnings, err.Error())
	}
	u := s.usage()
	u.Bytes += newBytes
	if err := s.writeUsage(u); err != nil {
		c.Warnings = append(c.Warnings, err.Error())
	}
	return c, nil
}

// maxIgnoreFile bounds the size of a .gitignore that is honoured.
const maxIgnoreFile = 1 << 20

// tooMuch is the error of a checkpoint whose new content alone does not
// fit in max_bytes; what it wrote is dropped.
func (s *Store) tooMuch(n int64) error {
	return fmt.Errorf("%w: more than %d bytes of changed files to record, max_bytes is %d; raise [checkpoints] max_bytes or add the large trees to [checkpoints] ignore",
		ErrTooLarge, n, s.opts.MaxBytes)
}

func (s *Store) loadIndex() index {
	data, err := os.ReadFile(filepath.Join(s.dir, "index"))
	if err != nil {
		return index{}
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return index{} // a cache: start over
	}
	return ix
}

// usageFile counts the bytes of the object store, so that pruning by size
// does not have to walk it every time.
type usageFile struct {
	Bytes int64 `json:"bytes"`
	// Dropped counts checkpoints removed since unreferenced objects were
	// last swept.
	Dropped int `json:"dropped"`
}

func (s *Store) usage() usageFile {
	data, err := os.ReadFile(filepath.Join(s.dir, "usage"))
	var u usageFile
	if err != nil || json.Unmarshal(data, &u) != nil || u.Bytes < 0 {
		return usageFile{Bytes: s.opts.MaxBytes + 1} // unknown: make the next prune count
	}
	return u
}

func (s *Store) writeUsage(u usageFile) error {
	data, _ := json.Marshal(u)
	return writeAtomic(filepath.Join(s.dir, "usage"), data, false)
}

// Root returns the workspace the store restores into.
func (s *Store) Root() *workspace.Root { return s.root }

// Latest returns the newest checkpoint taken before a call (not before an
// undo): what `warden undo` restores by default. It is nil when there is
// none.
func (s *Store) Latest() (*Checkpoint, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Reason == ReasonCall {
			return all[i], nil
		}
	}
	return nil, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
