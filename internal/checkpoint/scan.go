package checkpoint

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/workspace"
)

// dirNode is a directory held in memory: a scan of the workspace, or a
// tree loaded from the store.
type dirNode struct {
	hash hash
	ents []entry             // sorted by name
	sub  map[string]*dirNode // the directories among ents
	// hidden says that a scan left entries of this directory out (ignored
	// by the rules it ran with), so a restore may not remove it whole.
	hidden bool
}

func (d *dirNode) lookup(name string) (entry, bool) {
	i, ok := slices.BinarySearchFunc(d.ents, name, func(e entry, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return entry{}, false
	}
	return d.ents[i], true
}

// Skip is a path a checkpoint saw but did not record.
type Skip struct {
	Path string `json:"path"`
	Size int64  `json:"size,omitempty"`
	Why  string `json:"why"`
}

// scanner walks the workspace below a directory handle from the
// confinement layer, one component at a time with O_NOFOLLOW relative to
// the parent's descriptor: it never follows a symbolic link and never
// leaves the tree. Masked names are recorded as such and never opened;
// ignored directories are not entered. Regular files are hashed (and, with
// objs set, stored) unless the index shows them unchanged.
type scanner struct {
	root    *workspace.Root
	ix      index    // from the last checkpoint; read only
	objs    *objects // nil: hash only, store nothing
	w0      *packWriter
	wmu     sync.Mutex // guards w0 during the walk
	maxFile int64
	// rules are the ignore rules of the workspace root: the configured
	// ones, then .git/info/exclude.
	rules     []ignoreRule
	gitignore bool
	// readRules returns the text of the ignore file at rel (a .gitignore
	// or .git/info/exclude); present says whether this scan saw a regular
	// file there.
	readRules func(rel string, present bool) (string, bool)
	// maxNew, when set, bounds the bytes of new objects: past it the scan
	// stops with tooMuch's error.
	maxNew  int64
	tooMuch func(n int64) error

	start time.Time
	newIx index
	mu    sync.Mutex
	jobs  []*hashJob
	skips []Skip
	files int
	bytes int64
}

// hashJob is a regular file whose content must be read.
type hashJob struct {
	rel  string
	dir  *dirNode
	i    int // index in dir.ents
	st   fileStat
	gone bool // vanished before it could be read
}

// racy reports whether a file whose newest timestamp is ts (ns) could
// still change within the same file-system clock tick after a scan that
// started at start read it: then its stat cannot vouch for its content
// next time. Linux file systems keep times in jiffies (at most 10 ms); a
// time with no sub-second part suggests one that keeps whole seconds
// (FAT: two).
func racy(ts int64, start time.Time) bool {
	window := 100 * time.Millisecond
	if ts%int64(time.Second) == 0 {
		window = 2 * time.Second
	}
	return time.Unix(0, ts).After(start.Add(-window))
}

func (s *scanner) run(ctx context.Context) (*dirNode, error) {
	s.start = time.Now()
	s.newIx = make(index, len(s.ix))
	if s.objs != nil {
		s.w0 = s.objs.newWriter()
	}
	f, err := s.root.OpenDir(".")
	if err != nil {
		return nil, fmt.Errorf("failed to open the workspace: %w", err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("failed to open the workspace: %w", err)
	}
	if s.gitignore {
		if text, ok := s.readRules(".git/info/exclude", true); ok {
			s.rules = append(s.rules[:len(s.rules):len(s.rules)], parseIgnore(text, nil)...)
		}
	}
	top := &dirNode{}
	if err := s.walk(ctx, &dirJob{fd: fd, node: top, rules: s.rules}); err != nil {
		return nil, err
	}
	if err := s.hashAll(ctx); err != nil {
		return nil, err
	}
	if err := s.seal(top); err != nil {
		return nil, err
	}
	return top, nil
}

// dirJob is a directory to list: its descriptor (owned by the job), its
// path and the ignore rules in force above it.
type dirJob struct {
	fd    int
	rel   string
	comps []string
	rules []ignoreRule
	node  *dirNode
}

// walk lists the tree from the first job on, one directory per job, on
// every CPU: a stat per entry is most of a checkpoint's cost.
func (s *scanner) walk(ctx context.Context, first *dirJob) error {
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   = []*dirJob{first}
		active  int
		walkErr error
	)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for len(queue) == 0 && active > 0 {
					cond.Wait()
				}
				if len(queue) == 0 {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				stop := walkErr != nil
				active++
				mu.Unlock()
				var subs []*dirJob
				var err error
				if stop {
					err = walkErr
				} else if err = ctx.Err(); err == nil {
					subs, err = s.dir(j)
				}
				unix.Close(j.fd)
				mu.Lock()
				active--
				if err != nil {
					if walkErr == nil {
						walkErr = err
					}
					for _, sj := range subs {
						unix.Close(sj.fd)
					}
				} else {
					queue = append(queue, subs...)
				}
				mu.Unlock()
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	return walkErr
}

// readNames lists the directory open at fd, sorted.
func readNames(fd int) ([]string, error) {
	var names []string
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	slices.Sort(names)
	return names, nil
}

// dir lists the directory of job j into j.node and returns its
// subdirectories as new jobs, each with its descriptor open.
func (s *scanner) dir(j *dirJob) (subs []*dirJob, err error) {
	defer func() {
		if err != nil {
			for _, sj := range subs {
				unix.Close(sj.fd)
			}
			subs = nil
		}
	}()
	fd, rel, comps, rules, d := j.fd, j.rel, j.comps, j.rules, j.node
	names, err := readNames(fd)
	if err != nil {
		return nil, fmt.Errorf("failed to list %s: %w", display(rel), err)
	}
	if s.gitignore {
		gi := path.Join(rel, ".gitignore")
		present := false
		if _, found := slices.BinarySearch(names, ".gitignore"); found {
			var st unix.Stat_t
			present = unix.Fstatat(fd, ".gitignore", &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
		}
		if _, masked := s.root.MaskedEntry(gi); !masked {
			if text, ok := s.readRules(gi, present); ok {
				rules = append(rules[:len(rules):len(rules)], parseIgnore(text, comps)...)
			}
		}
	}
	var (
		jobs  []*hashJob
		skips []Skip
		hits  []string // paths whose index entry still holds
		files int
		bytes int64
	)
	d.ents = make([]entry, 0, len(names))
	skip := func(rel string, size int64, why string) { skips = append(skips, Skip{Path: rel, Size: size, Why: why}) }
	for _, name := range names {
		crel := name
		if rel != "" {
			crel = rel + "/" + name
		}
		if _, masked := s.root.MaskedEntry(crel); masked {
			d.ents = append(d.ents, entry{name: name, kind: kindMasked})
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // removed since it was listed
			}
			return subs, fmt.Errorf("failed to stat %s: %w", crel, err)
		}
		e := entry{name: name, perm: fs.FileMode(st.Mode & 0o777)}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if ignored(rules, comps, name, true) {
				d.hidden = true
				continue
			}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				// Replaced since it was listed, or unreadable: leave it alone.
				skip(crel, 0, "directory could not be read")
				e.kind, e.perm = kindOther, 0
				break
			}
			sub := &dirNode{}
			subs = append(subs, &dirJob{fd: cfd, rel: crel, comps: append(comps[:len(comps):len(comps)], name), rules: rules, node: sub})
			e.kind = kindDir
			if d.sub == nil {
				d.sub = map[string]*dirNode{}
			}
			d.sub[name] = sub
		case unix.S_IFREG:
			if ignored(rules, comps, name, false) {
				d.hidden = true
				continue
			}
			e.size = st.Size
			switch {
			case st.Nlink > 1:
				e.kind, e.perm = kindHardLink, 0
				skip(crel, st.Size, "has other hard links")
			case st.Size > s.maxFile:
				e.kind, e.perm = kindTooBig, 0
				skip(crel, st.Size, fmt.Sprintf("larger than max_file_bytes (%d)", s.maxFile))
			default:
				e.kind = kindFile
				fst := statOf(&st)
				if old, ok := s.ix[crel]; ok && old.st == fst {
					e.hash = old.hash
					hits = append(hits, crel)
				} else {
					jobs = append(jobs, &hashJob{rel: crel, dir: d, i: len(d.ents), st: fst})
				}
				files++
				bytes += st.Size
			}
		case unix.S_IFLNK:
			if ignored(rules, comps, name, false) {
				d.hidden = true
				continue
			}
			target, err := readlinkat(fd, name)
			if err != nil {
				if err == unix.ENOENT || err == unix.EINVAL {
					continue // replaced since it was listed
				}
				return subs, fmt.Errorf("failed to read link %s: %w", crel, err)
			}
			e.kind, e.perm, e.size = kindLink, 0o777, int64(len(target))
			if e.hash, err = s.putBytes([]byte(target)); err != nil {
				return subs, err
			}
		default:
			if ignored(rules, comps, name, false) {
				d.hidden = true
				continue
			}
			e.kind, e.perm = kindOther, 0
		}
		d.ents = append(d.ents, e)
	}
	s.mu.Lock()
	s.jobs = append(s.jobs, jobs...)
	s.skips = append(s.skips, skips...)
	for _, p := range hits {
		s.newIx[p] = s.ix[p]
	}
	s.files += files
	s.bytes += bytes
	s.mu.Unlock()
	return subs, nil
}

func readlinkat(fd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size > 1<<16 {
			return "", unix.ENAMETOOLONG
		}
	}
}

func (s *scanner) skip(rel string, size int64, why string) {
	s.mu.Lock()
	s.skips = append(s.skips, Skip{Path: rel, Size: size, Why: why})
	s.mu.Unlock()
}

// putBytes stores a small object (a link target, a tree) in the scan's own
// pack.
func (s *scanner) putBytes(data []byte) (hash, error) {
	if s.objs == nil {
		return hashOf(data), nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.w0.put(data)
}

// hashAll reads every file the index could not vouch for, in parallel.
func (s *scanner) hashAll(ctx context.Context) error {
	if len(s.jobs) == 0 {
		return nil
	}
	// A worker per CPU, but not for a handful of files: each writes its
	// own pack, and each pack costs two syncs.
	workers := min(runtime.GOMAXPROCS(0), (len(s.jobs)+63)/64)
	next := make(chan *hashJob)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		var w *packWriter
		if s.objs != nil {
			w = s.w0 // idle until the workers are done
			if i > 0 {
				w = s.objs.newWriter()
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				if err := s.hashFile(w, j); err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, j := range s.jobs {
		select {
		case next <- j:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// hashFile reads one file through the confinement layer (which refuses a
// masked real path, a link, a hard link), stores or hashes it, and checks
// that it did not change while it was read; a file rewritten meanwhile is
// read again, a few times.
func (s *scanner) hashFile(w *packWriter, j *hashJob) error {
	for try := 0; ; try++ {
		h, st, err := s.readFile(w, j.rel)
		e := &j.dir.ents[j.i]
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, workspace.ErrSymlink), errors.Is(err, syscall.ELOOP),
			errors.Is(err, workspace.ErrNotRegular), errors.Is(err, syscall.EISDIR):
			j.gone = true // removed or replaced since the walk: not recorded
			return nil
		case errors.Is(err, workspace.ErrHardLink):
			e.kind, e.perm, e.hash = kindHardLink, 0, hash{}
			s.skip(j.rel, e.size, "has other hard links")
			return nil
		case errors.Is(err, fs.ErrPermission):
			// An unreadable file must not stop every call: note it.
			e.kind, e.perm, e.hash = kindOther, 0, hash{}
			s.skip(j.rel, e.size, "could not be read (permission denied)")
			return nil
		}
		var changed *changedError
		if errors.As(err, &changed) {
			if try < 3 {
				continue
			}
			// What was read may mix two versions: record that the file
			// exists, not a content that never was.
			e.kind, e.perm, e.hash, e.size = kindBusy, 0, hash{}, st.size
			s.skip(j.rel, st.size, "kept changing while it was read")
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to record %s: %w", j.rel, err)
		}
		if s.maxNew > 0 {
			if n := s.objs.pendingBytes(); n > s.maxNew {
				return s.tooMuch(n)
			}
		}
		e.hash, e.size = h, st.size
		if !racy(max(st.mtime, st.ctime), s.start) {
			s.mu.Lock()
			s.newIx[j.rel] = indexEntry{st: st, hash: h}
			s.mu.Unlock()
		}
		return nil
	}
}

type changedError struct{ rel string }

func (e *changedError) Error() string { return e.rel + " changed while it was read" }

func (s *scanner) readFile(w *packWriter, rel string) (hash, fileStat, error) {
	var h hash
	r, err := s.root.Open(rel)
	if err != nil {
		return h, fileStat{}, err
	}
	defer r.Close()
	sf := r.(fs.File)
	before, err := fstat(sf)
	if err != nil {
		return h, fileStat{}, err
	}
	if before.size > s.maxFile {
		return h, before, &changedError{rel}
	}
	if w != nil {
		h, _, err = w.putStream(r, s.maxFile)
	} else {
		sum := sha256.New()
		_, err = io.Copy(sum, io.LimitReader(r, s.maxFile+1))
		sum.Sum(h[:0])
	}
	if err != nil {
		return h, before, err
	}
	after, err := fstat(sf)
	if err != nil {
		return h, before, err
	}
	if after != before {
		return h, after, &changedError{rel}
	}
	return h, after, nil
}

func fstat(f fs.File) (fileStat, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileStat{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, errors.New("no stat")
	}
	return fileStat{
		dev: st.Dev, ino: st.Ino, size: st.Size, mode: st.Mode,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, nil
}

// seal drops the files that vanished before they were read and computes
// every directory's tree, bottom up, storing the trees when objs is set.
func (s *scanner) seal(d *dirNode) error {
	gone := map[*dirNode][]int{}
	for _, j := range s.jobs {
		if j.gone {
			gone[j.dir] = append(gone[j.dir], j.i)
		}
	}
	var walk func(d *dirNode) error
	walk = func(d *dirNode) error {
		if idx := gone[d]; len(idx) > 0 {
			keep := d.ents[:0:0]
			for i, e := range d.ents {
				if !slices.Contains(idx, i) {
					keep = append(keep, e)
				}
			}
			d.ents = keep
		}
		for i := range d.ents {
			e := &d.ents[i]
			if e.kind != kindDir {
				continue
			}
			sub := d.sub[e.name]
			if err := walk(sub); err != nil {
				return err
			}
			e.hash = sub.hash
		}
		var err error
		d.hash, err = s.putBytes(encodeTree(d.ents))
		return err
	}
	return walk(d)
}

func display(rel string) string {
	if rel == "" {
		return "the workspace"
	}
	return rel
}

// loadTree reads the tree h and every tree below it from the store,
// checking each object's hash and format. Trees shared between
// directories are read once.
func loadTree(o *objects, h hash) (*dirNode, error) { return loadTreeCached(o, h, map[hash]*dirNode{}) }

// loadTreeCached is loadTree sharing seen with other loads: trees that
// several checkpoints share are read once.
func loadTreeCached(o *objects, h hash, seen map[hash]*dirNode) (*dirNode, error) {
	var load func(h hash, depth int) (*dirNode, error)
	load = func(h hash, depth int) (*dirNode, error) {
		if d, ok := seen[h]; ok {
			return d, nil
		}
		if depth > maxDepth {
			return nil, corrupt("trees nest deeper than %d", maxDepth)
		}
		data, err := o.read(h, maxTreeBytes)
		if err != nil {
			return nil, err
		}
		ents, err := decodeTree(data)
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", h, err)
		}
		d := &dirNode{hash: h, ents: ents}
		for _, e := range ents {
			if e.kind != kindDir {
				continue
			}
			sub, err := load(e.hash, depth+1)
			if err != nil {
				return nil, err
			}
			if d.sub == nil {
				d.sub = map[string]*dirNode{}
			}
			d.sub[e.name] = sub
		}
		seen[h] = d
		return d, nil
	}
	return load(h, 0)
}

// Bounds on what the store may hold, so that a damaged store cannot make a
// load run away: a path has at most 4096 bytes, so at most 2048 levels.
const (
	maxDepth     = 2048
	maxTreeBytes = 256 << 20
)

// walkFiles calls fn for every entry below d, depth first in name order,
// with its workspace-relative path.
func walkFiles(d *dirNode, prefix string, fn func(rel string, e entry)) {
	for _, e := range d.ents {
		rel := path.Join(prefix, e.name)
		fn(rel, e)
		if e.kind == kindDir {
			walkFiles(d.sub[e.name], rel, fn)
		}
	}
}
