package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/workspace"
)

// Journal is the record of an undo in progress, written (and synced)
// before the first change to the workspace and removed after the last
// one is durable. Finding one means an undo was interrupted: the
// workspace may be half restored, and stays so until Resume restores
// Target or Rollback restores Before.
type Journal struct {
	Version int       `json:"version"`
	Target  string    `json:"target"` // the checkpoint being restored
	Before  string    `json:"before"` // the checkpoint taken just before
	Digest  string    `json:"digest"` // of the plan being applied
	Ops     int       `json:"ops"`
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
}

const journalVersion = 1

func (s *Store) journalPath() string { return filepath.Join(s.dir, "undo.json") }

// Pending returns the interrupted undo of the workspace at wsDir, or nil,
// without opening the store: warden checks it at start.
func Pending(stateDir, wsDir string) (*Journal, error) {
	return readJournal(filepath.Join(Dir(stateDir, wsDir), "undo.json"))
}

// Pending returns the interrupted undo, or nil.
func (s *Store) Pending() (*Journal, error) { return s.journal() }

func (s *Store) journal() (*Journal, error) { return readJournal(s.journalPath()) }

func readJournal(p string) (*Journal, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read the undo journal: %w", err)
	}
	j, err := decodeJournal(data)
	if err != nil {
		return nil, fmt.Errorf("undo journal %s: %w", p, err)
	}
	return j, nil
}

func decodeJournal(data []byte) (*Journal, error) {
	if len(data) > maxRecord {
		return nil, corrupt("journal larger than %d bytes", maxRecord)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j Journal
	if err := dec.Decode(&j); err != nil {
		return nil, corrupt("journal: %v", err)
	}
	if dec.More() {
		return nil, corrupt("journal: data after the record")
	}
	switch {
	case j.Version != journalVersion:
		return nil, corrupt("journal version %d (this warden reads %d)", j.Version, journalVersion)
	case !idPattern.MatchString(j.Target) || !idPattern.MatchString(j.Before):
		return nil, corrupt("journal names bad checkpoints %q and %q", j.Target, j.Before)
	case j.Ops < 0:
		return nil, corrupt("journal has %d ops", j.Ops)
	}
	return &j, nil
}

// UndoOptions control Undo. The zero value applies whatever the plan is
// at the time.
type UndoOptions struct {
	// Expect is the Digest of the plan shown to the person who decided;
	// when set, Undo applies nothing if the plan is different now.
	Expect string
	// testOnlyAfterOp, when set, runs after each applied op (crash tests).
	testOnlyAfterOp func(i int)
}

// UndoResult says what an undo did.
type UndoResult struct {
	Plan *Plan
	// Before is the checkpoint taken just before the undo: restoring it
	// undoes the undo. Nil when the plan was empty.
	Before *Checkpoint
}

// Undo restores the workspace to checkpoint c. It takes a checkpoint of
// the workspace first (so the undo can be undone), writes a journal,
// applies the plan through the workspace's confinement (never writing a
// masked or protected path, never following a link), syncs, checks that
// the workspace now matches c, and removes the journal.
func (s *Store) Undo(ctx context.Context, c *Checkpoint, opts *UndoOptions) (*UndoResult, error) {
	if opts == nil {
		opts = &UndoOptions{}
	}
	return locked(ctx, s, func(o *objects) (*UndoResult, error) { return s.undo(ctx, o, c, opts) })
}

func (s *Store) undo(ctx context.Context, o *objects, c *Checkpoint, opts *UndoOptions) (*UndoResult, error) {
	if err := s.noPending(); err != nil {
		return nil, err
	}
	p, err := s.plan(ctx, o, c)
	if err != nil {
		return nil, err
	}
	if opts.Expect != "" && p.Digest != opts.Expect {
		return nil, fmt.Errorf("%w (plan %s, now %s); nothing was changed: look at the plan again", ErrPlanChanged, opts.Expect, p.Digest)
	}
	res := &UndoResult{Plan: p}
	if p.Empty() {
		return res, nil
	}
	// Every object the plan writes is read and checked first: a damaged
	// store fails here, before anything changed.
	if err := verifyPlan(o, p); err != nil {
		return nil, fmt.Errorf("nothing was changed: %w", err)
	}
	before, err := s.take(ctx, o, ReasonUndo, nil, c.ID)
	if err != nil {
		return nil, fmt.Errorf("nothing was changed: %w", err)
	}
	res.Before = before
	j := &Journal{Version: journalVersion, Target: c.ID, Before: before.ID, Digest: p.Digest, Ops: len(p.Ops), Started: time.Now().UTC(), PID: os.Getpid()}
	data, _ := json.MarshalIndent(j, "", "  ")
	if err := writeAtomic(s.journalPath(), data, true); err != nil {
		return nil, fmt.Errorf("nothing was changed: %w", err)
	}
	if err := s.finish(ctx, o, c, p, opts.testOnlyAfterOp); err != nil {
		return res, err
	}
	if err := s.prune(o, nil); err != nil {
		before.Warnings = append(before.Warnings, "pruning old checkpoints failed: "+err.Error())
	}
	return res, nil
}

// finish applies p (a plan to restore c), syncs, checks the result and
// removes the journal. On an error the journal stays: the undo is
// pending.
func (s *Store) finish(ctx context.Context, o *objects, c *Checkpoint, p *Plan, afterOp func(int)) error {
	if err := s.apply(o, p, afterOp); err != nil {
		return s.interrupted(c, err)
	}
	if err := s.root.Sync(); err != nil {
		return s.interrupted(c, err)
	}
	check, err := s.plan(ctx, o, c)
	if err != nil {
		return s.interrupted(c, err)
	}
	if !check.Empty() {
		ch := check.Ops[0]
		return s.interrupted(c, fmt.Errorf("%s (%s) differs from the checkpoint after the restore: something else is writing the workspace", ch.Path, ch.Op))
	}
	if err := os.Remove(s.journalPath()); err != nil {
		return s.interrupted(c, err)
	}
	return fsyncPath(s.dir)
}

func (s *Store) interrupted(c *Checkpoint, err error) error {
	return fmt.Errorf("the undo to checkpoint %s did not finish: %w; run `warden undo --resume` to finish it or `warden undo --rollback` to go back", c.ID, err)
}

// Resume finishes an interrupted undo: it restores the checkpoint the undo
// was restoring.
func (s *Store) Resume(ctx context.Context) (*UndoResult, error) { return s.recover(ctx, false) }

// Rollback abandons an interrupted undo: it restores the checkpoint taken
// just before it, so the workspace is as it was before the undo began.
func (s *Store) Rollback(ctx context.Context) (*UndoResult, error) { return s.recover(ctx, true) }

func (s *Store) recover(ctx context.Context, back bool) (*UndoResult, error) {
	return locked(ctx, s, func(o *objects) (*UndoResult, error) { return s.recoverWith(ctx, o, back) })
}

func (s *Store) recoverWith(ctx context.Context, o *objects, back bool) (*UndoResult, error) {
	j, err := s.journal()
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, ErrNoUndoPending
	}
	id := j.Target
	if back {
		id = j.Before
	}
	c, err := s.Get(id)
	if err != nil {
		return nil, fmt.Errorf("the interrupted undo needs checkpoint %s: %w", id, err)
	}
	p, err := s.plan(ctx, o, c)
	if err != nil {
		return nil, err
	}
	if err := verifyPlan(o, p); err != nil {
		return nil, err
	}
	before, _ := s.Get(j.Before)
	res := &UndoResult{Plan: p, Before: before}
	if err := s.finish(ctx, o, c, p, nil); err != nil {
		return res, err
	}
	if err := s.prune(o, nil); err != nil && before != nil {
		before.Warnings = append(before.Warnings, "pruning old checkpoints failed: "+err.Error())
	}
	return res, nil
}

// apply runs the ops of p in order through the workspace's confinement,
// the files and links among them in parallel. It goes on past a failed op
// (a later one may not depend on it) and reports the failures; the plan
// is idempotent, so running it again (Resume) is safe.
func (s *Store) apply(o *objects, p *Plan, afterOp func(int)) error {
	var (
		mu   sync.Mutex
		errs []error
		done int
	)
	run := func(op Op) {
		err := s.applyOp(o, op)
		mu.Lock()
		defer mu.Unlock()
		if err != nil && len(errs) < 20 {
			errs = append(errs, fmt.Errorf("%s %s: %w", op.Op, op.Path, err))
		}
		if afterOp != nil {
			afterOp(done)
		}
		done++
	}
	ops := p.Ops
	for len(ops) > 0 {
		n := 0
		for n < len(ops) && parallel(ops[n]) {
			n++
		}
		if n == 0 {
			run(ops[0])
			ops = ops[1:]
			continue
		}
		next := make(chan Op)
		var wg sync.WaitGroup
		for range min(runtime.GOMAXPROCS(0), n) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for op := range next {
					run(op)
				}
			}()
		}
		for _, op := range ops[:n] {
			next <- op
		}
		close(next)
		wg.Wait()
		ops = ops[n:]
	}
	return errors.Join(errs...)
}

// parallel reports whether op touches one file whose directory exists by
// the time it runs, so it may run beside others of its kind.
func parallel(op Op) bool {
	return !op.Dir && (op.Op == OpWrite || op.Op == OpLink || op.Op == OpChmod)
}

func (s *Store) applyOp(o *objects, op Op) error {
	w := s.root
	switch op.Op {
	case OpPrep, OpChmod:
		return w.Chmod(op.Path, op.Perm)
	case OpRemove:
		err := w.Remove(op.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // already gone (a resumed undo)
		}
		return err
	case OpMkdir:
		if err := w.MkdirAll(op.Path, 0o700); err != nil {
			return err
		}
		return w.Chmod(op.Path, 0o700)
	case OpWrite, OpLink:
		h, err := parseHash(op.Hash)
		if err != nil {
			return corrupt("%v", err)
		}
		if op.Op == OpLink {
			target, err := o.read(h, maxLinkTarget)
			if err != nil {
				return err
			}
			return w.Symlink(string(target), op.Path)
		}
		r, _, err := o.open(h)
		if err != nil {
			return err
		}
		err = w.PutFile(op.Path, r, op.Perm, false)
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, workspace.ErrSymlink) {
			// Something new is in the way (a resumed undo, or a change
			// since the plan): the plan's removals ran already.
			return fmt.Errorf("%w (the workspace changed during the undo)", err)
		}
		return err
	}
	return fmt.Errorf("unknown op %q", op.Op)
}

const maxLinkTarget = 4096

// verifyPlan reads every object p would write and checks its hash.
func verifyPlan(o *objects, p *Plan) error {
	for _, op := range p.Ops {
		if op.Op != OpWrite && op.Op != OpLink {
			continue
		}
		h, err := parseHash(op.Hash)
		if err != nil {
			return corrupt("%v", err)
		}
		r, n, err := o.open(h)
		if err != nil {
			return fmt.Errorf("%s: %w", op.Path, err)
		}
		if n != op.Size {
			return corrupt("%s: object %s has %d bytes, the checkpoint says %d", op.Path, h, n, op.Size)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			return fmt.Errorf("%s: %w", op.Path, err)
		}
	}
	return nil
}
