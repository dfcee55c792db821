package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

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
				bufs[w], rootErr = searchFile(env.FS, m, e.rel, bufs[w], context, limit, c)
				return
			}
			if glob != nil && !glob(e, root) {
				return
			}
			bufs[w], _ = searchFile(env.FS, m, e.rel, bufs[w], context, limit, c)
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
func searchFile(fsys workspace.FS, m *matcher, rel string, buf []byte, context, limit int, c *collector) ([]byte, error) {
	data, buf, skip, err := readForSearch(fsys, rel, buf)
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

// readForSearch reads rel through fsys into buf (grown as needed).
func readForSearch(fsys workspace.FS, rel string, buf []byte) ([]byte, []byte, skipReason, error) {
	f, err := fsys.Open(rel)
	if err != nil {
		return nil, buf, skipUnreadable, err
	}
	defer f.Close()
	if cap(buf) < 64<<10 {
		buf = make([]byte, 0, 64<<10)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > searchMaxFileSize {
				return nil, buf, skipLarge, nil
			}
			buf = slices.Grow(buf, len(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, buf, skipUnreadable, err
		}
	}
	if len(buf) > searchMaxFileSize {
		return nil, buf, skipLarge, nil
	}
	probe := buf
	if len(probe) > searchBinaryProbe {
		probe = probe[:searchBinaryProbe]
	}
	if indexByteFrom(probe, 0, 0) < len(probe) {
		return nil, buf, skipBinary, nil
	}
	return buf, buf, skipNone, nil
}

// cutLine renders a line for output: invalid UTF-8 replaced, cut to
// searchMaxLine bytes around the first match when it is longer.
func (m *matcher) cutLine(line []byte) string {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) <= searchMaxLine {
		return strings.ToValidUTF8(string(line), "\uFFFD")
	}
	start := 0
	if loc := m.re.FindIndex(line); loc != nil && loc[1] > searchMaxLine {
		start = max(0, loc[0]-searchMaxLine/4)
	}
	// Move the cuts back to rune starts, but not far: in invalid UTF-8
	// there may be none.
	for i := 0; i < utf8.UTFMax && start > 0 && !utf8.RuneStart(line[start]); i++ {
		start--
	}
	end := min(start+searchMaxLine, len(line))
	for i := 0; i < utf8.UTFMax && end < len(line) && !utf8.RuneStart(line[end]); i++ {
		end--
	}
	s := strings.ToValidUTF8(string(line[start:end]), "\uFFFD")
	if start > 0 {
		s = "…" + s
	}
	return s + fmt.Sprintf("… [line cut, %d bytes]", len(line))
}

// compileMatcher compiles pattern (RE2) for line-oriented search.
func compileMatcher(pattern string, ignoreCase bool) (*matcher, error) {
	if len(pattern) > searchMaxPattern {
		return nil, fmt.Errorf("pattern is too long (%d bytes, at most %d)", len(pattern), searchMaxPattern)
	}
	flags := syntax.Perl
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not a valid RE2 regular expression: %v", pattern, err)
	}
	prefix := "(?m)"
	if ignoreCase {
		prefix = "(?mi)"
	}
	re, err := regexp.Compile(prefix + pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not a valid RE2 regular expression: %v", pattern, err)
	}
	m := &matcher{re: re}
	tree = tree.Simplify()
	if usesTextAnchors(tree) {
		return m, nil // \A and \z mean line start and end here: search line by line.
	}
	lits := requiredLiterals(tree)
	if len(lits) == 0 {
		m.wholeBuffer = true
		m.chunk = 64 << 10
		// regexp backtracks when len(prog)*(len(input)+1) <= 256 Ki bits.
		if prog, err := syntax.Compile(tree); err == nil && len(prog.Inst) > 0 {
			m.chunk = max(256, min(m.chunk, (256<<10)/len(prog.Inst)-2))
		}
		return m, nil
	}
	for _, l := range lits {
		f := newLitFinder(l)
		m.lits = append(m.lits, f)
		m.traps = m.traps || f.traps
	}
	if p, complete := re.LiteralPrefix(); complete && len(lits) == 1 && !lits[0].fold && p == lits[0].s {
		m.pure = true
	}
	return m, nil
}

// matcher finds the lines of a buffer that match a regular expression.
//
// Lines are found without splitting the buffer: when every match must
// contain one of a few literal strings (found in the parsed expression),
// those are searched for with memchr-speed scans; when there are none, the
// expression itself runs over the whole buffer in multi-line mode. Either
// way a candidate's line is then confirmed by matching the expression
// against that line alone, so the result is exactly "the lines the
// expression matches", as grep defines it.
type matcher struct {
	re          *regexp.Regexp
	lits        []*litFinder // one of these occurs in every match; nil if unknown
	traps       bool         // a folded literal holds k or s (see hasFoldTraps)
	pure        bool         // the expression is exactly lits[0]: no confirmation needed
	wholeBuffer bool         // no literal: run re over the whole buffer
	chunk       int          // wholeBuffer: bytes per call of re (see nextMatch)
}

// scan calls fn with the 1-based number and the byte range (without the
// newline) of every matching line of data, in order.
func (m *matcher) scan(data []byte, fn func(n, start, end int)) {
	useLit := m.lits != nil && !(m.traps && hasFoldTraps(data))
	if !useLit && !m.wholeBuffer {
		m.scanLines(data, fn)
		return
	}
	var next []int // per literal: offset of its next occurrence at or after pos, or len(data)+1
	if useLit {
		next = make([]int, len(m.lits))
		for i := range next {
			next[i] = -1
		}
	}
	line, counted := 1, 0
	for pos := 0; pos <= len(data); {
		at := len(data) + 1
		if useLit {
			for i, f := range m.lits {
				if next[i] < pos {
					next[i] = len(data) + 1
					if j := f.index(data[pos:]); j >= 0 {
						next[i] = pos + j
					}
				}
				at = min(at, next[i])
			}
		} else {
			at = m.nextMatch(data, pos)
		}
		if at > len(data) {
			return
		}
		ls := bytes.LastIndexByte(data[pos:at], '\n') + 1 + pos
		if ls == len(data) && (ls == 0 || data[ls-1] == '\n') {
			return // the empty "line" after the final newline is no line
		}
		le := indexByteFrom(data, at, '\n')
		if m.pure || m.re.Match(data[ls:le]) {
			line += bytes.Count(data[counted:ls], newline)
			counted = ls
			fn(line, ls, le)
		}
		pos = le + 1
	}
}

// nextMatch returns the offset at or after pos where the next match of
// re in data begins, or len(data)+1. It runs re over chunks of whole lines
// small enough for regexp's backtracking engine, which is several times
// faster than the engine it uses on large inputs.
func (m *matcher) nextMatch(data []byte, pos int) int {
	for s := pos; s <= len(data); {
		e := s + m.chunk
		if e >= len(data) {
			e = len(data)
		} else {
			e = indexByteFrom(data, e, '\n')
		}
		if m.re.Match(data[s:e]) {
			if loc := m.re.FindIndex(data[s:e]); loc != nil {
				return s + loc[0]
			}
		}
		s = e + 1
	}
	return len(data) + 1
}

// scanLines matches line by line, for expressions that use \A or \z, and
// for folded literals in files holding the Unicode folds of k or s.
func (m *matcher) scanLines(data []byte, fn func(n, start, end int)) {
	n := 0
	for s := 0; s < len(data); {
		e := indexByteFrom(data, s, '\n')
		n++
		if m.re.Match(data[s:e]) {
			fn(n, s, e)
		}
		s = e + 1
	}
}

// literal is a string every match (or, in a set, one of the set) contains.
type literal struct {
	s    string
	fold bool // ASCII case-insensitive; s is lower-case
}

// litFinder searches for one literal by its rarest byte.
type litFinder struct {
	lit    []byte
	fold   bool
	anchor int  // offset in lit of the byte searched for with memchr
	lo, up byte // that byte, in both cases when folded
	traps  bool // folded and holds k or s
}

func newLitFinder(l literal) *litFinder {
	f := &litFinder{lit: []byte(l.s), fold: l.fold}
	best := 1 << 30
	for i, c := range f.lit {
		score := byteRank(c)
		if f.fold && isASCIILetter(c) {
			score += byteRank(c - 'a' + 'A')
		}
		if score < best {
			best, f.anchor = score, i
		}
		if f.fold && (c == 'k' || c == 's') {
			f.traps = true
		}
	}
	f.lo, f.up = f.lit[f.anchor], f.lit[f.anchor]
	if f.fold && isASCIILetter(f.lo) {
		f.up = f.lo - 'a' + 'A'
	}
	return f
}

// index returns the offset of the first occurrence of the literal in s, or -1.
func (f *litFinder) index(s []byte) int {
	n := len(f.lit)
	if !f.fold && (n == 1 || f.anchor == 0) {
		return bytes.Index(s, f.lit)
	}
	nextLo, nextUp := -1, -1
	for off := f.anchor; ; {
		if nextLo < off {
			nextLo = indexByteFrom(s, off, f.lo)
		}
		if f.up == f.lo {
			nextUp = nextLo
		} else if nextUp < off {
			nextUp = indexByteFrom(s, off, f.up)
		}
		start := min(nextLo, nextUp) - f.anchor
		if start+n > len(s) {
			return -1
		}
		if f.fold {
			if equalFoldASCII(s[start:start+n], f.lit) {
				return start
			}
		} else if bytes.Equal(s[start:start+n], f.lit) {
			return start
		}
		off = start + f.anchor + 1
	}
}

// byteRank estimates how common c is in source code (higher: more common),
// so that the rarest byte of a literal is the one scanned for.
func byteRank(c byte) int {
	const common = " \n\te\tt\ta\to\ti\tn\ts\tr\tl\tc\td\tu\th\tp\tm\tf\tg\t.\t(\t)\t,\t\"\t_\t/\t=\tb\tv\tw\ty\t*\t;\t:\t{\t}\tk\t0\t1\tx\t-\tE\tS\tT\tR\tI\tN\tA"
	if i := strings.IndexByte(common, c); i >= 0 && c != '\t' {
		return 256 - i
	}
	if c == '\t' {
		return 250
	}
	return 0
}

// hasFoldTraps reports whether data holds KELVIN SIGN or LATIN SMALL
// LETTER LONG S, which Go's case folding equates with k and s.
func hasFoldTraps(data []byte) bool {
	return bytes.Contains(data, []byte("\u212A")) || bytes.Contains(data, []byte("\u017F"))
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// equalFoldASCII compares s with the lower-case ASCII lit.
func equalFoldASCII(s, lit []byte) bool {
	for i, c := range lit {
		d := s[i]
		if isASCIILetter(d) {
			d |= 0x20
		}
		if d != c {
			return false
		}
	}
	return true
}

// usesTextAnchors reports whether re uses \A or \z.
func usesTextAnchors(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, s := range re.Sub {
		if usesTextAnchors(s) {
			return true
		}
	}
	return false
}

// maxLiteralSet bounds the alternatives searched for separately.
const maxLiteralSet = 8

// requiredLiterals returns a small set of literals one of which every match
// of re contains, or nil when none is known. Folded literals are ASCII and
// lower-cased; no literal holds U+FFFD (the expression matches invalid
// UTF-8 with it) or is empty.
func requiredLiterals(re *syntax.Regexp) []literal {
	switch re.Op {
	case syntax.OpLiteral:
		return usableLiteral(re.Rune, re.Flags&syntax.FoldCase != 0)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpAlternate:
		var set []literal
		for _, sub := range re.Sub {
			s := requiredLiterals(sub)
			if s == nil || len(set)+len(s) > maxLiteralSet {
				return nil
			}
			set = append(set, s...)
		}
		return set
	case syntax.OpConcat:
		var best []literal
		consider := func(set []literal) {
			if set != nil && (best == nil || setScore(set) > setScore(best)) {
				best = set
			}
		}
		var run []rune
		runFold := false
		flush := func() {
			if len(run) > 0 {
				consider(usableLiteral(run, runFold))
			}
			run = nil
		}
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral {
				f := sub.Flags&syntax.FoldCase != 0
				if len(run) > 0 && f != runFold {
					flush()
				}
				run, runFold = append(run, sub.Rune...), f
				continue
			}
			flush()
			consider(requiredLiterals(sub))
		}
		flush()
		return best
	}
	return nil
}

// setScore prefers sets whose shortest literal is longest, then smaller sets.
func setScore(set []literal) int {
	short := 1 << 20
	for _, l := range set {
		short = min(short, len(l.s))
	}
	return short*16 - len(set)
}

func usableLiteral(runes []rune, fold bool) []literal {
	s := string(runes)
	if s == "" || strings.ContainsRune(s, utf8.RuneError) {
		return nil
	}
	if fold {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				return nil
			}
		}
		s = strings.ToLower(s)
	}
	return []literal{{s: s, fold: fold}}
}

var newline = []byte{'\n'}

// indexByteFrom returns the offset of the first c in b at or after from,
// or len(b) when there is none.
func indexByteFrom(b []byte, from int, c byte) int {
	if from >= len(b) {
		return len(b)
	}
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return len(b)
}
