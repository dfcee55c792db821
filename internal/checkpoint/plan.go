package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Op is one step of a restore. Ops run in order: removals (deepest
// first), then directories (parents first), then files and links (in
// parallel: their directories exist by then), then the final permission
// bits of directories (deepest first).
type Op struct {
	Op   string      `json:"op"` // one of the Op* constants
	Path string      `json:"path"`
	Dir  bool        `json:"dir,omitempty"` // Path is (or becomes) a directory
	Perm fs.FileMode `json:"perm,omitempty"`
	Hash string      `json:"hash,omitempty"` // content (write) or target (link)
	Size int64       `json:"size,omitempty"`
	// Change says what happened to Path since the checkpoint, which the
	// op takes back: added, deleted, modified, mode or type.
	Change string `json:"change,omitempty"`
	// Was describes what is at Path now ("file 120 B, 0644").
	Was string `json:"was,omitempty"`
	// Added and Removed count the lines the change added and removed,
	// for a modified text file (-1: not counted).
	Added   int `json:"added,omitempty"`
	Removed int `json:"removed,omitempty"`
}

// Ops.
const (
	OpPrep   = "prep"   // make a directory writable for the restore
	OpRemove = "remove" // remove a file, link or (empty by then) directory
	OpMkdir  = "mkdir"
	OpWrite  = "write"
	OpLink   = "link"
	OpChmod  = "chmod"
)

// Changes, as seen from the checkpoint: what the restore takes back.
const (
	ChangeAdded    = "added"
	ChangeDeleted  = "deleted"
	ChangeModified = "modified"
	ChangeMode     = "mode"
	ChangeType     = "type"
)

// Plan is what restoring a checkpoint would do to the workspace now.
type Plan struct {
	Target *Checkpoint `json:"target"`
	Ops    []Op        `json:"ops"`
	// Notes say what the restore leaves alone and why (masked or
	// protected paths, files the checkpoint did not record).
	Notes []string `json:"notes,omitempty"`
	// Digest identifies the plan, so that what is applied is what was
	// shown (UndoOptions.Expect).
	Digest string `json:"digest"`
}

// Empty reports whether the workspace already is as recorded.
func (p *Plan) Empty() bool { return len(p.Ops) == 0 }

// Files counts the changes to paths that are not directories.
func Files(changes []Op) int {
	n := 0
	for _, op := range changes {
		if !op.Dir {
			n++
		}
	}
	return n
}

// Changes returns the ops that a person would call changes (one per
// path), without the directory bookkeeping, in path order.
func (p *Plan) Changes() []Op {
	var out []Op
	for _, op := range p.Ops {
		if op.Change != "" {
			out = append(out, op)
		}
	}
	slices.SortStableFunc(out, func(a, b Op) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func (p *Plan) seal() {
	b, _ := json.Marshal(struct {
		Target string
		Ops    []Op
	}{p.Target.ID, p.Ops})
	sum := sha256.Sum256(b)
	p.Digest = hex.EncodeToString(sum[:8])
}

// Plan computes what restoring checkpoint c would change, without
// changing anything.
func (s *Store) Plan(ctx context.Context, c *Checkpoint) (*Plan, error) {
	return locked(ctx, s, func(o *objects) (*Plan, error) { return s.plan(ctx, o, c) })
}

// plan scans the workspace with the rules c was taken with (so what c
// left out is left alone) and compares it with c's tree. The caller holds
// the lock.
func (s *Store) plan(ctx context.Context, o *objects, c *Checkpoint) (*Plan, error) {
	// c may have been pruned since the caller read it.
	if _, err := s.Get(c.ID); err != nil {
		return nil, err
	}
	th, err := parseHash(c.Tree)
	if err != nil {
		return nil, corrupt("checkpoint %s: %v", c.ID, err)
	}
	target, err := loadTree(o, th)
	if err != nil {
		return nil, fmt.Errorf("failed to read checkpoint %s: %w", c.ID, err)
	}
	cur, err := s.scanAs(ctx, o, c, target)
	if err != nil {
		return nil, fmt.Errorf("failed to read the workspace: %w", err)
	}
	pl := &planner{s: s}
	pl.dir(target, cur, "")
	p := &Plan{Target: c, Notes: pl.notes}
	p.Ops = slices.Concat(pl.prep, pl.removes, pl.mkdirs, pl.creates, pl.finals)
	s.countLines(o, p)
	p.seal()
	return p, nil
}

// scanAs scans the workspace (hashing only, storing nothing) with the
// ignore rules checkpoint c was taken with, reading .gitignore files from
// c's tree rather than from the workspace.
func (s *Store) scanAs(ctx context.Context, o *objects, c *Checkpoint, target *dirNode) (*dirNode, error) {
	sc := &scanner{
		root: s.root, ix: s.loadIndex(), maxFile: s.opts.MaxFileBytes,
		rules: parseIgnore(strings.Join(c.Ignore, "\n"), nil), gitignore: c.Gitignore,
		readRules: func(rel string, _ bool) (string, bool) {
			e, ok := lookupPath(target, rel)
			if !ok || e.kind != kindFile || e.size > maxIgnoreFile {
				return "", false
			}
			b, err := o.read(e.hash, maxIgnoreFile)
			return string(b), err == nil
		},
	}
	return sc.run(ctx)
}

// lookupPath finds the entry at rel in the tree d.
func lookupPath(d *dirNode, rel string) (entry, bool) {
	comps := strings.Split(rel, "/")
	for i, c := range comps {
		e, ok := d.lookup(c)
		if !ok {
			return entry{}, false
		}
		if i == len(comps)-1 {
			return e, true
		}
		if e.kind != kindDir {
			return entry{}, false
		}
		d = d.sub[e.name]
	}
	return entry{}, false
}

// planner compares a checkpoint's tree (t) with a scan of the workspace
// (c), directory by directory, and collects the ops that make c into t.
type planner struct {
	s                                      *Store
	prep, removes, mkdirs, creates, finals []Op
	notes                                  []string
	// report lists every change, protected paths included, for a
	// description rather than a restore.
	report bool
}

func (pl *planner) note(format string, a ...any) {
	pl.notes = append(pl.notes, fmt.Sprintf(format, a...))
}

func (pl *planner) protected(rel string) bool {
	if pl.report {
		return false
	}
	_, ok := pl.s.root.ProtectRule(rel)
	return ok
}

// gitObjects reports whether rel is inside a git object store, whose files
// are named by their content: a restore adds missing ones but never
// removes one (a repack may have moved the only copy of what the
// checkpoint's refs need into a new pack).
func gitObjects(rel string) bool {
	comps := strings.Split(rel, "/")
	for i := 0; i+1 < len(comps); i++ {
		if comps[i] == ".git" && comps[i+1] == "objects" && i+2 < len(comps) {
			return true
		}
	}
	return false
}

func describeEntry(e entry) string {
	switch e.kind {
	case kindFile:
		return fmt.Sprintf("file %s, %04o", HumanBytes(e.size), uint32(e.perm))
	case kindDir:
		return fmt.Sprintf("directory, %04o", uint32(e.perm))
	case kindLink:
		return "symbolic link"
	}
	return e.kind.String()
}

// dir plans directory rel: t is the checkpoint's (nil: absent there), c
// the workspace's (nil: absent now).
func (pl *planner) dir(t, c *dirNode, rel string) {
	var tents, cents []entry
	if t != nil {
		tents = t.ents
	}
	if c != nil {
		cents = c.ents
	}
	i, j := 0, 0
	for i < len(tents) || j < len(cents) {
		var te, ce *entry
		switch {
		case j >= len(cents) || (i < len(tents) && tents[i].name < cents[j].name):
			te = &tents[i]
			i++
		case i >= len(tents) || cents[j].name < tents[i].name:
			ce = &cents[j]
			j++
		default:
			te, ce = &tents[i], &cents[j]
			i, j = i+1, j+1
		}
		name := ""
		if te != nil {
			name = te.name
		} else {
			name = ce.name
		}
		var tsub, csub *dirNode
		if te != nil && te.kind == kindDir {
			tsub = t.sub[name]
		}
		if ce != nil && ce.kind == kindDir {
			csub = c.sub[name]
		}
		pl.entry(path.Join(rel, name), te, ce, tsub, csub)
	}
}

func (pl *planner) entry(rel string, te, ce *entry, tsub, csub *dirNode) {
	switch {
	case te != nil && !te.kind.recorded():
		// Seen but not recorded: leave whatever is there alone.
		if te.kind == kindMasked {
			if ce == nil {
				pl.note("%s was masked, so it was never recorded; it is gone and cannot be restored", rel)
			}
			return
		}
		if ce == nil || ce.kind != kindFile || ce.size != te.size {
			pl.note("%s cannot be restored: the checkpoint did not record it (%s)", rel, te.kind)
		}
		return
	case ce != nil && ce.kind == kindMasked:
		if te != nil {
			pl.note("%s is left alone: it is masked now", rel)
		}
		return
	case te != nil && ce != nil && te.kind == ce.kind && te.hash == ce.hash && te.perm == ce.perm:
		return // unchanged (a directory: the whole tree)
	}
	if pl.protected(rel) {
		if te != nil && ce != nil && te.kind == kindDir && ce.kind == kindDir && ce.perm&0o700 == 0o700 {
			// A directory protected as itself (.git: never renamed,
			// replaced or removed) keeps its own mode; what is under it
			// is planned path by path, each checked on its own.
			if te.perm != ce.perm {
				pl.note("%s is protected: its mode is not restored", rel)
			}
			pl.dir(tsub, csub, rel)
			return
		}
		pl.note("%s is protected: its changes are not restored", rel)
		return
	}
	switch {
	case te == nil:
		pl.remove(rel, ce, csub, ChangeAdded)
	case ce == nil:
		pl.create(rel, te, tsub, ChangeDeleted, "")
	case te.kind == kindDir && ce.kind == kindDir:
		if ce.perm&0o700 != 0o700 {
			pl.prep = append(pl.prep, Op{Dir: true, Op: OpPrep, Path: rel, Perm: ce.perm | 0o700})
		}
		pl.dir(tsub, csub, rel)
		if te.perm != ce.perm || ce.perm&0o700 != 0o700 {
			op := Op{Dir: true, Op: OpChmod, Path: rel, Perm: te.perm}
			if te.perm != ce.perm {
				op.Change, op.Was = ChangeMode, describeEntry(*ce)
			}
			pl.finals = append(pl.finals, op)
		}
	case te.kind == ce.kind && te.kind == kindFile && te.hash == ce.hash:
		pl.creates = append(pl.creates, Op{Op: OpChmod, Path: rel, Perm: te.perm, Change: ChangeMode, Was: describeEntry(*ce)})
	case te.kind == ce.kind && te.kind != kindDir:
		pl.create(rel, te, nil, ChangeModified, describeEntry(*ce))
	default:
		if !pl.remove(rel, ce, csub, ChangeAdded) {
			pl.note("%s cannot be restored as a %s: the directory there holds files the checkpoint leaves alone", rel, te.kind)
			return
		}
		pl.removes[len(pl.removes)-1].Change = "" // reported by the create below
		pl.create(rel, te, tsub, ChangeType, describeEntry(*ce))
	}
}

// remove plans the removal of rel (and, for a directory, everything the
// scan saw below it). It reports whether rel itself will be gone: a
// directory that holds masked, ignored or unrecorded entries stays.
func (pl *planner) remove(rel string, ce *entry, csub *dirNode, change string) bool {
	if !pl.report && gitObjects(rel) {
		return false
	}
	if pl.protected(rel) {
		pl.note("%s is protected: it is not removed", rel)
		return false
	}
	gone := true
	if ce.kind == kindDir {
		if ce.perm&0o700 != 0o700 {
			pl.prep = append(pl.prep, Op{Dir: true, Op: OpPrep, Path: rel, Perm: ce.perm | 0o700})
		}
		for i := range csub.ents {
			e := &csub.ents[i]
			if e.kind == kindMasked {
				gone = false
				continue
			}
			var sub *dirNode
			if e.kind == kindDir {
				sub = csub.sub[e.name]
			}
			if !pl.remove(path.Join(rel, e.name), e, sub, change) {
				gone = false
			}
		}
		if csub.hidden {
			gone = false
		}
		if !gone {
			if change != "" {
				pl.note("%s/ is kept: it holds files the checkpoint leaves alone", rel)
			}
			return false
		}
		pl.removes = append(pl.removes, Op{Dir: true, Op: OpRemove, Path: rel, Change: change, Was: describeEntry(*ce)})
		return true
	}
	pl.removes = append(pl.removes, Op{Op: OpRemove, Path: rel, Change: change, Was: describeEntry(*ce)})
	return true
}

// create plans making rel as the checkpoint recorded it.
func (pl *planner) create(rel string, te *entry, tsub *dirNode, change, was string) {
	switch te.kind {
	case kindFile:
		pl.creates = append(pl.creates, Op{Op: OpWrite, Path: rel, Perm: te.perm, Hash: te.hash.String(), Size: te.size, Change: change, Was: was, Added: -1, Removed: -1})
	case kindLink:
		pl.creates = append(pl.creates, Op{Op: OpLink, Path: rel, Hash: te.hash.String(), Size: te.size, Change: change, Was: was})
	case kindDir:
		pl.mkdirs = append(pl.mkdirs, Op{Dir: true, Op: OpMkdir, Path: rel, Perm: 0o700, Change: change, Was: was})
		for i := range tsub.ents {
			e := &tsub.ents[i]
			crel := path.Join(rel, e.name)
			if !e.kind.recorded() {
				if e.kind != kindMasked {
					pl.note("%s cannot be restored: the checkpoint did not record it (%s)", crel, e.kind)
				}
				continue
			}
			if pl.protected(crel) {
				pl.note("%s is protected: it is not restored", crel)
				continue
			}
			var sub *dirNode
			if e.kind == kindDir {
				sub = tsub.sub[e.name]
			}
			pl.create(crel, e, sub, ChangeDeleted, "")
		}
		pl.finals = append(pl.finals, Op{Dir: true, Op: OpChmod, Path: rel, Perm: te.perm})
	}
}

// HumanBytes writes a size the way a person reads it (12 B, 3.4 MiB).
func HumanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
