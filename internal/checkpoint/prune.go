package checkpoint

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Prune applies keep and max_bytes now and removes every object no
// checkpoint needs, compacting packs that hold any.
func (s *Store) Prune(ctx context.Context) error {
	_, err := locked(ctx, s, func(o *objects) (struct{}, error) { return struct{}{}, s.pruneWith(o, s.pinned(), true) })
	return err
}

// pinned are the checkpoints an interrupted undo needs.
func (s *Store) pinned() []string {
	j, err := s.journal()
	if err != nil || j == nil {
		return nil
	}
	return []string{j.Target, j.Before}
}

// prune is Prune after a checkpoint: cheap unless something must go.
func (s *Store) prune(o *objects, pinned []string) error { return s.pruneWith(o, pinned, false) }

// pruneWith removes the oldest checkpoints beyond keep and, when the store
// is over max_bytes, every checkpoint from the newest one that does not
// fit on; the newest checkpoint and the pinned ones always stay. The
// objects of removed checkpoints are swept when enough checkpoints have
// gone, or at once when the size bound needs it. The caller holds the
// lock.
//
// Order matters for a crash: records go first (a checkpoint is gone as a
// whole), then the index drops entries for objects about to go (so no
// later checkpoint can name an object that was swept), then the objects.
func (s *Store) pruneWith(o *objects, pinned []string, force bool) error {
	rfs, err := s.recordFiles()
	if err != nil {
		return err
	}
	u := s.usage()
	var drop []recordFile
	if over := len(rfs) - s.opts.Keep; over > 0 {
		for _, rf := range rfs[:over] {
			if !slices.Contains(pinned, rf.id) {
				drop = append(drop, rf)
			}
		}
	}
	bySize := u.Bytes > s.opts.MaxBytes
	sweepEvery := max(1, s.opts.Keep/10)
	if len(drop) == 0 && !bySize && !force && u.Dropped < sweepEvery {
		return nil
	}
	if err := s.dropRecords(drop); err != nil {
		return err
	}
	u.Dropped += len(drop)
	if !bySize && !force && u.Dropped < sweepEvery {
		return s.writeUsage(u)
	}
	// Mark what the remaining checkpoints need, newest first, dropping by
	// size from the first that does not fit.
	rfs, err = s.recordFiles()
	if err != nil {
		return err
	}
	m := &marker{objs: o, live: map[hash]bool{}}
	drop = drop[:0]
	full := false
	for i := len(rfs) - 1; i >= 0; i-- {
		rf := rfs[i]
		c, err := s.readRecord(rf)
		if err != nil {
			return fmt.Errorf("failed to prune: %w", err)
		}
		h, _ := parseHash(c.Tree)
		pin := slices.Contains(pinned, rf.id)
		if full && !pin {
			drop = append(drop, rf)
			continue
		}
		need, add, err := m.collect(h)
		if err != nil {
			return fmt.Errorf("failed to prune: checkpoint %s: %w", c.ID, err)
		}
		if i < len(rfs)-1 && !pin && m.total+add > s.opts.MaxBytes {
			full = true
			drop = append(drop, rf)
			continue
		}
		for _, n := range need {
			m.live[n] = true
		}
		m.total += add
	}
	if err := s.dropRecords(drop); err != nil {
		return err
	}
	total, err := s.sweep(o, m.live, bySize || force)
	if err != nil {
		return err
	}
	return s.writeUsage(usageFile{Bytes: total})
}

func (s *Store) dropRecords(drop []recordFile) error {
	if len(drop) == 0 {
		return nil
	}
	for _, rf := range drop {
		if err := os.Remove(filepath.Join(s.recordsDir(), rf.name)); err != nil && !isNotExist(err) {
			return fmt.Errorf("failed to remove checkpoint %s: %w", rf.id, err)
		}
	}
	return fsyncPath(s.recordsDir())
}

// sweep removes every object outside live: a pack with nothing live goes,
// a pack with dead objects is rewritten with only its live ones when
// compact is set or when most of it is dead. It returns the bytes of the
// packs that remain.
func (s *Store) sweep(o *objects, live map[hash]bool, compact bool) (int64, error) {
	ix := s.loadIndex()
	changed := false
	for p, e := range ix {
		if !live[e.hash] {
			delete(ix, p)
			changed = true
		}
	}
	if changed {
		if err := writeAtomic(filepath.Join(s.dir, "index"), encodeIndex(ix), true); err != nil {
			return 0, err
		}
	}
	ids, err := o.packIDs()
	if err != nil {
		return 0, err
	}
	var total int64
	var gone []string
	for _, id := range ids {
		ents, err := o.readIndex(id)
		if err != nil {
			return 0, fmt.Errorf("failed to sweep the checkpoint store: %w", err)
		}
		var keep []idxEntry
		var liveBytes, deadBytes int64
		for _, e := range ents {
			if live[e.hash] && o.loc[e.hash].pack == id {
				keep = append(keep, e)
				liveBytes += e.size
			} else {
				deadBytes += e.size
			}
		}
		switch {
		case len(keep) == 0:
			gone = append(gone, id)
		case deadBytes > 0 && (compact || deadBytes > liveBytes):
			if err := s.repack(o, id, keep); err != nil {
				return 0, err
			}
			gone = append(gone, id)
			total += liveBytes
		default:
			st, err := os.Stat(filepath.Join(o.dir, id+".pack"))
			if err != nil {
				return 0, fmt.Errorf("failed to sweep the checkpoint store: %w", err)
			}
			total += st.Size()
		}
	}
	// Every object still needed is indexed elsewhere now: drop the old
	// indexes (synced), then their packs.
	for _, id := range gone {
		if err := os.Remove(filepath.Join(o.dir, id+".idx")); err != nil && !isNotExist(err) {
			return 0, fmt.Errorf("failed to sweep the checkpoint store: %w", err)
		}
	}
	if len(gone) > 0 {
		if err := fsyncPath(o.dir); err != nil {
			return 0, err
		}
	}
	o.close() // release the old packs before removing them
	for _, id := range gone {
		os.Remove(filepath.Join(o.dir, id+".pack"))
	}
	return total, nil
}

// repack copies the live objects of pack id into a new pack and commits
// it; the caller then removes the old one.
func (s *Store) repack(o *objects, id string, keep []idxEntry) error {
	w := o.newWriter()
	if err := w.open(); err != nil {
		return err
	}
	for _, e := range keep {
		r, n, err := o.open(e.hash)
		if err != nil {
			return fmt.Errorf("failed to compact pack %s: %w", id, err)
		}
		if err := w.copyObject(e.hash, r, n); err != nil {
			return fmt.Errorf("failed to compact pack %s: %w", id, err)
		}
	}
	_, err := o.commit()
	return err
}

// copyObject appends object h (n bytes, from r) as is: repacking moves an
// object that is already indexed.
func (w *packWriter) copyObject(h hash, r io.Reader, n int64) error {
	if _, err := io.Copy(io.NewOffsetWriter(w.f, w.off), r); err != nil {
		return err
	}
	w.ents = append(w.ents, idxEntry{hash: h, off: w.off, size: n})
	w.off += n
	return nil
}

// marker finds the objects checkpoints need and adds up their size. A
// tree that is live has everything below it live already, so shared trees
// are read once.
type marker struct {
	objs  *objects
	live  map[hash]bool
	total int64
}

// collect returns the objects of tree h that are not live yet and their
// total size, reading (and checking) each such tree.
func (m *marker) collect(h hash) ([]hash, int64, error) {
	var need []hash
	var add int64
	seen := map[hash]bool{}
	var walk func(h hash) error
	walk = func(h hash) error {
		if m.live[h] || seen[h] {
			return nil
		}
		data, err := m.objs.read(h, maxTreeBytes)
		if err != nil {
			return err
		}
		ents, err := decodeTree(data)
		if err != nil {
			return fmt.Errorf("tree %s: %w", h, err)
		}
		seen[h] = true
		need = append(need, h)
		add += int64(len(data))
		for _, e := range ents {
			switch {
			case e.kind == kindDir:
				if err := walk(e.hash); err != nil {
					return err
				}
			case e.kind.recorded() && !m.live[e.hash] && !seen[e.hash]:
				if !m.objs.has(e.hash) {
					return corrupt("object %s of %s is missing", e.hash, e.name)
				}
				seen[e.hash] = true
				need = append(need, e.hash)
				add += e.size
			}
		}
		return nil
	}
	err := walk(h)
	return need, add, err
}

// Packs are consolidated when there are more than maxPacks: every pack
// smaller than smallPack is copied into one new pack, so that reading the
// indexes at each checkpoint stays cheap. Copying only small packs keeps
// the cost proportional to what recent checkpoints added.
const (
	maxPacks  = 32
	smallPack = 8 << 20
)

func (s *Store) consolidate(o *objects) error {
	ids, err := o.packIDs()
	if err != nil || len(ids) <= maxPacks {
		return err
	}
	var small []string
	for _, id := range ids {
		if st, err := os.Stat(filepath.Join(o.dir, id+".pack")); err == nil && st.Size() < smallPack {
			small = append(small, id)
		}
	}
	if len(small) < 2 {
		return nil
	}
	w := o.newWriter()
	if err := w.open(); err != nil {
		return err
	}
	moved := map[hash]bool{}
	for _, id := range small {
		ents, err := o.readIndex(id)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if moved[e.hash] || o.loc[e.hash].pack != id {
				continue // another copy is the one in use
			}
			r, n, err := o.open(e.hash)
			if err != nil {
				return err
			}
			if err := w.copyObject(e.hash, r, n); err != nil {
				return err
			}
			moved[e.hash] = true
		}
	}
	if _, err := o.commit(); err != nil {
		return err
	}
	for _, id := range small {
		if err := os.Remove(filepath.Join(o.dir, id+".idx")); err != nil && !isNotExist(err) {
			return err
		}
	}
	if err := fsyncPath(o.dir); err != nil {
		return err
	}
	o.close()
	for _, id := range small {
		os.Remove(filepath.Join(o.dir, id+".pack"))
	}
	return nil
}

// Verify reads every checkpoint and every object it needs, checking each
// against its hash and format. It reports the first problem (ErrCorrupt).
func (s *Store) Verify(ctx context.Context) (int, error) {
	return locked(ctx, s, func(o *objects) (int, error) { return s.verify(ctx, o) })
}

func (s *Store) verify(ctx context.Context, o *objects) (int, error) {
	all, err := s.List()
	if err != nil {
		return 0, err
	}
	m := &marker{objs: o, live: map[hash]bool{}}
	for _, c := range all {
		h, _ := parseHash(c.Tree)
		need, _, err := m.collect(h)
		if err != nil {
			return 0, fmt.Errorf("checkpoint %s: %w", c.ID, err)
		}
		for _, n := range need {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			r, _, err := o.open(n)
			if err == nil {
				_, err = io.Copy(io.Discard, r)
			}
			if err != nil {
				return 0, fmt.Errorf("checkpoint %s: %w", c.ID, err)
			}
			m.live[n] = true
		}
	}
	return len(all), nil
}
