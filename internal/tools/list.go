package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wardenhq/warden/internal/workspace"
)

// Limits of list_files.
const (
	listDefaultDepth = 2
	listMaxDepth     = 10
	listMaxEntries   = 500
)

// noExtra is the JSON Schema "false": it rejects any value, so as
// additionalProperties it rejects every field the schema does not name.
func noExtra() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

type listArgs struct {
	Path  string `json:"path"`
	Depth *int   `json:"depth"`
}

// ListFiles returns the list_files tool.
func ListFiles() *Tool {
	return &Tool{
		Name: "list_files",
		Description: "List the files and directories under a workspace directory, as workspace-relative paths " +
			"in tree order, one per line. Directories end with \"/\", symbolic links with \"@\" (they are not followed). " +
			"Entries ignored by .gitignore files, the .git directory and hidden secrets (such as .env) are left out. " +
			fmt.Sprintf("depth counts levels below path (default %d, at most %d). At most %d entries are shown; ", listDefaultDepth, listMaxDepth, listMaxEntries) +
			"a last line says how many more there were. Use find_files to look for names across the whole tree.",
		Group:       GroupFSRead,
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		Schema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"path":  {Type: "string", Description: "workspace-relative directory to list (default: the workspace root)"},
				"depth": {Type: "integer", Description: "how many levels to descend (default 2)", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(listMaxDepth))},
			},
			AdditionalProperties: noExtra(),
		},
		Guard: guardPathArg[listArgs]("list", func(a listArgs) string { return a.Path }),
		Run:   runListFiles,
	}
}

// guardPathArg returns a Guard that decodes the arguments and checks the
// path they name (masks, escapes) before policy runs; the walk itself goes
// through the confined file system again.
func guardPathArg[T any](op string, get func(T) string) func(*Env, json.RawMessage) (Facts, error) {
	return func(env *Env, raw json.RawMessage) (Facts, error) {
		a, err := decodeArgs[T](raw)
		if err != nil {
			return Facts{}, err
		}
		return Facts{}, checkPath(env, op, get(a), false)
	}
}

func runListFiles(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	a, err := decodeArgs[listArgs](raw)
	if err != nil {
		return "", err
	}
	depth := listDefaultDepth
	if a.Depth != nil {
		depth = *a.Depth
		if depth < 1 || depth > listMaxDepth {
			return "", fmt.Errorf("list_files: depth must be between 1 and %d, got %d", listMaxDepth, depth)
		}
	}
	var mu sync.Mutex
	var found []string
	st, err := walkTree(ctx, env.FS, a.Path, walkOptions{
		maxDepth: depth,
		onEntry: func(e *entry) {
			name := e.rel
			switch {
			case e.typ.IsDir():
				name += "/"
			case e.typ&fs.ModeSymlink != 0:
				name += "@"
			}
			mu.Lock()
			found = append(found, name)
			mu.Unlock()
		},
	})
	if err != nil {
		return "", fmt.Errorf("list_files: %w", err)
	}
	if st.rootIsFile {
		return st.root + "\n", nil
	}
	slices.SortFunc(found, comparePaths)
	var b strings.Builder
	for i, p := range found {
		if i == listMaxEntries {
			break
		}
		b.WriteString(p)
		b.WriteByte('\n')
	}
	if len(found) == 0 {
		fmt.Fprintf(&b, "(%s is empty)\n", displayDir(st.root))
	}
	if n := len(found) - listMaxEntries; n > 0 {
		fmt.Fprintf(&b, "[%d more entries not shown; list a subdirectory or lower depth]\n", n)
	}
	b.WriteString(st.notes())
	return b.String(), nil
}

func displayDir(rel string) string {
	if rel == "." {
		return "the workspace root"
	}
	return rel
}

// comparePaths orders slash-separated paths as a tree: a directory's
// entries come right after it, before its next sibling.
func comparePaths(a, b string) int {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		ah, bh := a, b
		if ai >= 0 {
			ah = a[:ai]
		}
		if bi >= 0 {
			bh = b[:bi]
		}
		if c := strings.Compare(ah, bh); c != 0 {
			return c
		}
		if ai < 0 || bi < 0 {
			return strings.Compare(a, b)
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}

// entry is one thing found by walkTree.
type entry struct {
	rel   string   // workspace-relative, slash-separated
	comps []string // rel split on "/"
	typ   fs.FileMode
	depth int // 1 for the children of the walk's root; 0 for a root that is a file
	rules []gitignore.Pattern
	d     fs.DirEntry // as listed; nil for the walk's root
}

type walkOptions struct {
	maxDepth int // 0: no limit
	// onEntry is called for every visible entry, from several goroutines.
	onEntry func(e *entry)
	// onFile is called for every regular file, each as its own job so that
	// the work spreads over the workers; worker is in [0, workers).
	onFile func(worker int, e *entry)
	// workers defaults to GOMAXPROCS.
	workers int
}

// walkStats says what a walk saw besides the entries.
type walkStats struct {
	root       string // cleaned root of the walk
	rootIsFile bool
	ignored    int // entries left out because of .gitignore rules
	unreadable int // directories that could not be listed
	mu         sync.Mutex
}

func (s *walkStats) notes() string {
	var parts []string
	if s.ignored > 0 {
		parts = append(parts, fmt.Sprintf("%d entries ignored by .gitignore not shown", s.ignored))
	}
	if s.unreadable > 0 {
		parts = append(parts, fmt.Sprintf("%d directories could not be read", s.unreadable))
	}
	if len(parts) == 0 {
		return ""
	}
	return "[" + strings.Join(parts, "; ") + "]\n"
}

// walkYieldEvery is how many jobs a walk worker runs between trips through
// the scheduler. A worker that only opens, reads and searches files never
// parks, so to the runtime it looks like one goroutine running for as long
// as the walk lasts: every 10 ms its monitor preempts it, or takes its
// processor away while it is in a read and wakes a spare thread to run it,
// and keeps itself polling every 20 µs meanwhile. Yielding at a job
// boundary now and then shows the monitor that the workers are taking
// turns. Measured (BenchmarkGrep over GOROOT/src, "func main", 10 searches
// under perf stat): context switches 14–18 k → 8.5–11 k, the monitor's
// sleeps 5.4–6.7 k → 2.7–3.3 k, and about 7 % less CPU time.
const walkYieldEvery = 16

// walkTree walks the workspace tree under root through fsys (so masks and
// confinement hold), in parallel, honouring .git/info/exclude and every
// .gitignore from the workspace root down. It never follows symbolic links
// and never enters .git. A root that is a file is visited alone.
func walkTree(ctx context.Context, fsys workspace.FS, root string, o walkOptions) (*walkStats, error) {
	rel, err := cleanRel(root)
	if err != nil {
		return nil, err
	}
	st := &walkStats{root: rel}
	info, err := fsys.Stat(rel)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		st.rootIsFile = true
		e := &entry{rel: rel, comps: strings.Split(rel, "/"), typ: info.Mode().Type()}
		if o.onEntry != nil {
			o.onEntry(e)
		}
		if o.onFile != nil && info.Mode().IsRegular() {
			o.onFile(0, e)
		}
		return st, nil
	}
	rules, err := rulesFor(fsys, rel)
	if err != nil {
		return nil, err
	}
	var comps []string
	if rel != "." {
		comps = strings.Split(rel, "/")
	}
	// The root's own listing errors are the caller's errors.
	ents, err := fsys.ReadDir(rel)
	if err != nil {
		return nil, err
	}
	workers := o.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	q := &jobQueue{}
	q.cond = sync.NewCond(&q.mu)
	q.push(expand(fsys, st, o, &entry{rel: rel, comps: comps, typ: fs.ModeDir, rules: rules}, ents)...)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; ; n++ {
				if n%walkYieldEvery == 0 {
					runtime.Gosched()
				}
				e, ok := q.pop()
				if !ok {
					return
				}
				if ctx.Err() == nil {
					if e.typ.IsDir() {
						sub, err := fsys.ReadDir(e.rel)
						if err != nil {
							st.mu.Lock()
							st.unreadable++
							st.mu.Unlock()
						} else {
							q.push(expand(fsys, st, o, e, sub)...)
						}
					} else {
						o.onFile(w, e)
					}
				}
				q.done()
			}
		}()
	}
	wg.Wait()
	return st, ctx.Err()
}

// expand turns the listing of dir into entries, reporting the visible ones
// and returning the jobs to queue: subdirectories to descend into and, when
// onFile is set, regular files.
func expand(fsys workspace.FS, st *walkStats, o walkOptions, dir *entry, ents []fs.DirEntry) []*entry {
	rules := dir.rules
	for _, d := range ents {
		if d.Name() == ".gitignore" && d.Type().IsRegular() {
			rules = appendIgnoreFile(fsys, rules, path.Join(dir.rel, ".gitignore"), dir.comps)
			break
		}
	}
	var jobs []*entry
	ignored := 0
	for _, d := range ents {
		name := d.Name()
		typ := d.Type()
		if name == ".git" {
			continue
		}
		comps := append(dir.comps[:len(dir.comps):len(dir.comps)], name)
		if ignoredBy(rules, comps, typ.IsDir()) {
			ignored++
			continue
		}
		e := &entry{rel: strings.Join(comps, "/"), comps: comps, typ: typ, depth: dir.depth + 1, rules: rules, d: d}
		if o.onEntry != nil {
			o.onEntry(e)
		}
		switch {
		case typ.IsDir():
			if o.maxDepth == 0 || e.depth < o.maxDepth {
				jobs = append(jobs, e)
			}
		case typ.IsRegular():
			if o.onFile != nil {
				jobs = append(jobs, e)
			}
		}
	}
	if ignored > 0 {
		st.mu.Lock()
		st.ignored += ignored
		st.mu.Unlock()
	}
	return jobs
}

func cleanRel(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", &workspace.PathError{Op: "list", Path: p, Err: workspace.ErrInvalid}
	}
	if p == "" {
		return ".", nil
	}
	if strings.HasPrefix(p, "/") {
		return "", &workspace.PathError{Op: "list", Path: p, Err: workspace.ErrEscapes}
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", &workspace.PathError{Op: "list", Path: p, Err: workspace.ErrEscapes}
	}
	return c, nil
}

// rulesFor returns the ignore rules in force inside dir: .git/info/exclude
// and the .gitignore files of the workspace root and of every directory
// from there down to dir, in that order (later rules win). When dir itself
// is ignored by its ancestors' rules, the caller asked for it by name: the
// ancestors' rules are dropped and only dir's own .gitignore applies.
func rulesFor(fsys workspace.FS, dir string) ([]gitignore.Pattern, error) {
	rules := appendIgnoreFile(fsys, nil, ".git/info/exclude", nil)
	var comps []string
	if dir != "." {
		comps = strings.Split(dir, "/")
	}
	for i := 0; i <= len(comps); i++ {
		if i > 0 && ignoredBy(rules, comps[:i], true) {
			rules = nil
		}
		rules = appendIgnoreFile(fsys, rules, path.Join(path.Join(comps[:i]...), ".gitignore"), comps[:i])
	}
	return rules, nil
}

// appendIgnoreFile adds the patterns of the ignore file name (if it exists
// and can be read) to rules, without touching rules' backing array.
func appendIgnoreFile(fsys workspace.FS, rules []gitignore.Pattern, name string, domain []string) []gitignore.Pattern {
	data, err := fsys.ReadFile(name, 1<<20)
	if err != nil {
		return rules
	}
	rules = rules[:len(rules):len(rules)]
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, `\#`) || strings.HasPrefix(line, `\!`) {
			line = line[1:]
		}
		rules = append(rules, gitignore.ParsePattern(line, domain))
	}
	return rules
}

// ignoredBy applies rules to comps; the last matching rule wins.
func ignoredBy(rules []gitignore.Pattern, comps []string, isDir bool) bool {
	for i := len(rules) - 1; i >= 0; i-- {
		switch rules[i].Match(comps, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		}
	}
	return false
}

// jobQueue is a LIFO work list (depth first, so memory stays small) that
// knows when no job is queued or running.
type jobQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	jobs    []*entry
	pending int // queued or running
	waiting int // workers blocked in pop
}

func (q *jobQueue) push(es ...*entry) {
	if len(es) == 0 {
		return
	}
	q.mu.Lock()
	// Reverse so that pops come out in lexical order within a directory.
	for i := len(es) - 1; i >= 0; i-- {
		q.jobs = append(q.jobs, es[i])
	}
	q.pending += len(es)
	wake := q.waiting > 0
	q.mu.Unlock()
	if wake {
		q.cond.Broadcast()
	}
}

func (q *jobQueue) pop() (*entry, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.jobs) == 0 {
		if q.pending == 0 {
			return nil, false
		}
		q.waiting++
		q.cond.Wait()
		q.waiting--
	}
	e := q.jobs[len(q.jobs)-1]
	q.jobs = q.jobs[:len(q.jobs)-1]
	return e, true
}

func (q *jobQueue) done() {
	q.mu.Lock()
	q.pending--
	wake := q.pending == 0 && q.waiting > 0
	q.mu.Unlock()
	if wake {
		q.cond.Broadcast()
	}
}
