package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wardenhq/warden/internal/workspace"
)

// Limits of search_code and grep.
const (
	searchDefaultResults = 100
	searchMaxResults     = 1000
	searchMaxFileSize    = 10 << 20 // larger files are skipped
	searchMaxLine        = 240      // longer lines are cut around the match
	searchBinaryProbe    = 8 << 10  // a NUL in this many first bytes marks a binary file
	searchFirstRead      = 64 << 10 // the first read of a file, before it is known not to be binary
	searchContext        = 2        // lines of context search_code shows around a match
	searchMaxPattern     = 4096
)

type searchArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignore_case"`
	MaxResults *int   `json:"max_results"`
}

func searchSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"pattern":     {Type: "string", Description: "RE2 regular expression (Go syntax), matched against each line", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(searchMaxPattern)},
			"path":        {Type: "string", Description: "workspace-relative file or directory to search (default: the workspace root)"},
			"glob":        {Type: "string", Description: "only search files matching this glob: \"*.go\" matches names, \"cmd/**/*.go\" paths relative to path"},
			"ignore_case": {Type: "boolean", Description: "match case-insensitively (default false)"},
			"max_results": {Type: "integer", Description: fmt.Sprintf("matching lines to show (default %d, at most %d)", searchDefaultResults, searchMaxResults), Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(searchMaxResults))},
		},
		Required:             []string{"pattern"},
		AdditionalProperties: noExtra(),
	}
}

const searchCommonDoc = "The pattern is an RE2 regular expression (Go syntax: no backreferences or lookaround) matched line by line. " +
	"Files ignored by .gitignore, the .git directory, hidden secrets (such as .env), binary files and files over 10 MiB are skipped; " +
	"symbolic links are not followed. Results are sorted by path and line number. "

// SearchCode returns the search_code tool: grep with context lines.
func SearchCode() *Tool {
	return &Tool{
		Name: "search_code",
		Description: "Search the workspace's files for a regular expression and show each match with " +
			fmt.Sprintf("%d lines of context before and after. ", searchContext) +
			"Matching lines are shown as \"path:line: text\", context lines as \"path-line- text\", and groups are separated by \"--\". " +
			searchCommonDoc +
			fmt.Sprintf("At most max_results matching lines are shown (default %d); a last line counts the rest. ", searchDefaultResults) +
			"Use grep instead for a compact list of matching lines only.",
		Group:       GroupFSRead,
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		Schema:      searchSchema(),
		Guard:       guardPathArg[searchArgs]("search", func(a searchArgs) string { return a.Path }),
		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			return runSearch(ctx, env, "search_code", raw, searchContext)
		},
	}
}

// Grep returns the grep tool: matching lines only.
func Grep() *Tool {
	return &Tool{
		Name: "grep",
		Description: "Search the workspace's files for a regular expression and list the matching lines as \"path:line: text\" " +
			"(long lines are cut around the match). " + searchCommonDoc +
			fmt.Sprintf("At most max_results lines are shown (default %d, at most %d); a last line counts the rest. ", searchDefaultResults, searchMaxResults) +
			"Use search_code to see the lines around each match.",
		Group:       GroupFSRead,
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		Schema:      searchSchema(),
		Guard:       guardPathArg[searchArgs]("search", func(a searchArgs) string { return a.Path }),
		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			return runSearch(ctx, env, "grep", raw, 0)
		},
	}
}

// outLine is one line of output: a match, or context around one.
type outLine struct {
	n     int
	text  string
	match bool
	sep   bool // a "--" separator goes before this line
}

type fileResult struct {
	path  string
	lines []outLine
	kept  int // matching lines kept in lines
	total int // matching lines in the file
}

// collector gathers per-file results from the workers and keeps only the
// first max matching lines in (path, line) order, however the files arrive.
type collector struct {
	mu                                  sync.Mutex
	max                                 int
	files                               []fileResult
	kept                                int
	total                               int
	matched                             int  // files with a match
	context                             bool // context lines shown: files are separated by "--"
	searched, binary, large, unreadable int
}

func (c *collector) add(r fileResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.searched++
	if r.total == 0 {
		return
	}
	c.matched++
	c.total += r.total
	c.files = append(c.files, r)
	c.kept += r.kept
	if c.kept > 2*c.max+searchMaxResults {
		c.trim()
	}
}

func (c *collector) skip(binary, large, unreadable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case binary:
		c.binary++
	case large:
		c.large++
	case unreadable:
		c.unreadable++
	}
}

// trim sorts the files by path and drops matching lines past max.
func (c *collector) trim() {
	slices.SortFunc(c.files, func(a, b fileResult) int { return strings.Compare(a.path, b.path) })
	kept := 0
	for i := range c.files {
		f := &c.files[i]
		if kept+f.kept > c.max {
			f.cut(c.max - kept)
		}
		kept += f.kept
		if kept >= c.max {
			for j := i + 1; j < len(c.files); j++ {
				c.files[j].lines, c.files[j].kept = nil, 0
			}
			break
		}
	}
	c.kept = kept
}

// cut keeps the first n matching lines (and the context before them).
func (f *fileResult) cut(n int) {
	seen := 0
	for i, l := range f.lines {
		if l.match {
			if seen == n {
				f.lines = f.lines[:i]
				break
			}
			seen++
		}
	}
	f.kept = n
}

func runSearch(ctx context.Context, env *Env, tool string, raw json.RawMessage, context int) (string, error) {
	a, err := decodeArgs[searchArgs](raw)
	if err != nil {
		return "", err
	}
	limit := searchDefaultResults
	if a.MaxResults != nil {
		limit = *a.MaxResults
		if limit < 1 || limit > searchMaxResults {
			return "", fmt.Errorf("%s: max_results must be between 1 and %d, got %d", tool, searchMaxResults, limit)
		}
	}
	m, err := compileMatcher(a.Pattern, a.IgnoreCase)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	var glob func(e *entry, root string) bool
	if a.Glob != "" {
		if glob, err = compileGlob(a.Glob); err != nil {
			return "", fmt.Errorf("%s: %w", tool, err)
		}
	}
	root, err := cleanRel(a.Path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	c := &collector{max: limit, context: context > 0}
	workers := runtime.GOMAXPROCS(0)
	bufs := make([][]byte, workers)
	var rootErr error
	st, err := walkTree(ctx, env.FS, root, walkOptions{
		workers: workers,
		onFile: func(w int, e *entry) {
			if e.depth == 0 {
				// A file named as the path: its errors are the caller's.
				bufs[w], rootErr = searchFile(env.FS, m, e, bufs[w], context, limit, c)
				return
			}
			if glob != nil && !glob(e, root) {
				return
			}
			bufs[w], _ = searchFile(env.FS, m, e, bufs[w], context, limit, c)
		},
	})
	if err == nil {
		err = rootErr
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	c.trim()
	return c.render(a.Pattern, st, limit), nil
}

func (c *collector) render(pattern string, st *walkStats, limit int) string {
	var b strings.Builder
	for _, f := range c.files {
		for i, l := range f.lines {
			if l.sep || (i == 0 && b.Len() > 0 && c.context) {
				b.WriteString("--\n")
			}
			sep := "-"
			if l.match {
				sep = ":"
			}
			fmt.Fprintf(&b, "%s%s%d%s %s\n", f.path, sep, l.n, sep, l.text)
		}
	}
	if c.total == 0 {
		fmt.Fprintf(&b, "No matches for %q in %s (%d files searched).\n", pattern, displayDir(st.root), c.searched)
	}
	if cut := c.total - c.kept; cut > 0 {
		fmt.Fprintf(&b, "[%d more matching lines not shown (%d matching lines in %d files); narrow the pattern, path or glob", cut, c.total, c.matched)
		if limit < searchMaxResults {
			fmt.Fprintf(&b, ", or raise max_results (at most %d)", searchMaxResults)
		}
		b.WriteString("]\n")
	}
	var skipped []string
	if c.binary > 0 {
		skipped = append(skipped, fmt.Sprintf("%d binary", c.binary))
	}
	if c.large > 0 {
		skipped = append(skipped, fmt.Sprintf("%d over %d MiB", c.large, searchMaxFileSize>>20))
	}
	if c.unreadable > 0 {
		skipped = append(skipped, fmt.Sprintf("%d unreadable", c.unreadable))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "[skipped files: %s]\n", strings.Join(skipped, ", "))
	}
	b.WriteString(st.notes())
	return b.String()
}

// compileGlob returns a filter for glob: a pattern without "/" matches
// file names, one with "/" matches paths relative to the search root.
func compileGlob(glob string) (func(e *entry, root string) bool, error) {
	if !doublestar.ValidatePattern(glob) {
		return nil, fmt.Errorf("glob %q is not a valid pattern", glob)
	}
	if !strings.Contains(glob, "/") {
		return func(e *entry, _ string) bool {
			ok, _ := doublestar.Match(glob, path.Base(e.rel))
			return ok
		}, nil
	}
	glob = strings.TrimPrefix(glob, "./")
	return func(e *entry, root string) bool {
		rel := e.rel
		if root != "." {
			rel = strings.TrimPrefix(rel, root+"/")
		}
		ok, _ := doublestar.Match(glob, rel)
		return ok
	}, nil
}

// searchFile searches one file and hands its result to c. buf is the
// worker's reusable read buffer; the possibly grown buffer is returned,
// with the error that made the file unreadable, if any.
func searchFile(fsys workspace.FS, m *matcher, e *entry, buf []byte, context, limit int, c *collector) ([]byte, error) {
	rel := e.rel
	data, buf, skip, err := readForSearch(fsys, e, buf)
	if skip != skipNone {
		c.skip(skip == skipBinary, skip == skipLarge, skip == skipUnreadable)
		return buf, err
	}
	r := fileResult{path: rel}
	type hit struct{ n, start, end int }
	var hits []hit
	m.scan(data, func(n, start, end int) {
		r.total++
		if len(hits) < limit {
			hits = append(hits, hit{n, start, end})
		}
	})
	r.kept = len(hits)
	if context == 0 {
		for _, h := range hits {
			r.lines = append(r.lines, outLine{n: h.n, text: m.cutLine(data[h.start:h.end]), match: true})
		}
	} else {
		last := 0 // number of the last line emitted
		for i, h := range hits {
			from := max(h.n-context, last+1, 1)
			sep := last > 0 && from > last+1 // a gap since the previous group
			for j, l := range linesBefore(data, h.start, h.n-from) {
				r.lines = append(r.lines, outLine{n: from + j, text: m.cutLine(l), sep: sep && j == 0})
			}
			r.lines = append(r.lines, outLine{n: h.n, text: m.cutLine(data[h.start:h.end]), match: true, sep: sep && from == h.n})
			last = h.n
			// Context after, up to the next match.
			after := context
			if i+1 < len(hits) {
				after = min(after, hits[i+1].n-h.n-1)
			}
			for _, l := range linesAfter(data, h.end, after) {
				last++
				r.lines = append(r.lines, outLine{n: last, text: m.cutLine(l)})
			}
		}
	}
	c.add(r)
	return buf, nil
}

// linesBefore returns the k lines that end just before offset start.
func linesBefore(data []byte, start, k int) [][]byte {
	out := make([][]byte, 0, k)
	end := start - 1 // the '\n' ending the previous line
	for ; k > 0 && end >= 0; k-- {
		s := bytes.LastIndexByte(data[:end], '\n') + 1
		out = append(out, data[s:end])
		end = s - 1
	}
	slices.Reverse(out)
	return out
}

// linesAfter returns up to k lines that start after offset end (a '\n' or EOF).
func linesAfter(data []byte, end, k int) [][]byte {
	var out [][]byte
	for s := end + 1; k > 0 && s < len(data); k-- {
		e := indexByteFrom(data, s, '\n')
		out = append(out, data[s:e])
		s = e + 1
	}
	return out
}

type skipReason int

const (
	skipNone skipReason = iota
	skipBinary
	skipLarge
	skipUnreadable
)

// entryOpener is implemented by a file system that opens the entries of
// its own listings without checking their names again (workspace.Root).
type entryOpener interface {
	OpenEntry(e fs.DirEntry) (io.ReadCloser, error)
}

// readForSearch reads e through fsys into buf (grown as needed). A
// file is known to be binary from its first bytes: a large one is read
// in two steps so that the rest of a binary file is never read.
func readForSearch(fsys workspace.FS, e *entry, buf []byte) ([]byte, []byte, skipReason, error) {
	var f io.ReadCloser
	var err error
	if o, ok := fsys.(entryOpener); ok && e.d != nil {
		f, err = o.OpenEntry(e.d)
	} else {
		f, err = fsys.Open(e.rel)
	}
	if err != nil {
		return nil, buf, skipUnreadable, err
	}
	defer f.Close()
	if cap(buf) < searchFirstRead {
		buf = make([]byte, 0, searchFirstRead)
	}
	buf = buf[:0]
	// With the size known at open, read exactly that much: a file that
	// changes while it is searched is read as it was, and a small file
	// costs one read instead of two (the second only to see EOF).
	want := int64(-1)
	if sz, ok := f.(interface{ Size() int64 }); ok {
		want = sz.Size()
		if want > searchMaxFileSize {
			return nil, buf, skipLarge, nil
		}
	}
	probed := false
	for want < 0 || int64(len(buf)) < want {
		if len(buf) == cap(buf) {
			if len(buf) > searchMaxFileSize {
				return nil, buf, skipLarge, nil
			}
			buf = grow(buf, 2*len(buf))
		}
		end := cap(buf)
		if !probed {
			end = min(end, searchFirstRead)
		}
		n, err := f.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, buf, skipUnreadable, err
		}
		if !probed && len(buf) >= searchBinaryProbe {
			if hasNUL(buf) {
				return nil, buf, skipBinary, nil
			}
			probed = true
			buf = grow(buf, int(want)) // the rest in one more read
		}
	}
	if len(buf) > searchMaxFileSize {
		return nil, buf, skipLarge, nil
	}
	if !probed && hasNUL(buf) {
		return nil, buf, skipBinary, nil
	}
	return buf, buf, skipNone, nil
}

// grow returns buf with room for n bytes, at least doubling its capacity
// when it has to move it: a worker's buffer is then replaced a few times per
// search, not at every larger file.
func grow(buf []byte, n int) []byte {
	if n <= cap(buf) {
		return buf
	}
	return append(make([]byte, 0, max(n, 2*cap(buf))), buf...)
}

// hasNUL reports whether the first searchBinaryProbe bytes of b hold a NUL.
func hasNUL(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), searchBinaryProbe)], 0) >= 0
}
