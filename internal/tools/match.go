package tools

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

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
	set, _ := bestSet(analyze(tree))
	if set == nil {
		m.wholeBuffer = true
		m.chunk = 64 << 10
		// regexp backtracks when len(prog)*(len(input)+1) <= 256 Ki bits.
		if prog, err := syntax.Compile(tree); err == nil && len(prog.Inst) > 0 {
			m.chunk = max(256, min(m.chunk, (256<<10)/len(prog.Inst)-2))
		}
		return m, nil
	}
	for _, s := range set {
		f := newSeqFinder(s)
		m.lits = append(m.lits, f)
		m.traps = m.traps || f.traps
	}
	m.finders = groupFinders(m.lits)
	if p, complete := re.LiteralPrefix(); complete && len(set) == 1 && m.lits[0].lit != nil && p == string(m.lits[0].lit) {
		m.pure = true
	}
	return m, nil
}

// matcher finds the lines of a buffer that match a regular expression.
//
// Lines are found without splitting the buffer: when every match must
// contain one of a few strings (found in the parsed expression; see
// prefilter.go),
// those are searched for with memchr-speed scans; when there are none, the
// expression itself runs over the whole buffer in multi-line mode. Either
// way a candidate's line is then confirmed by matching the expression
// against that line alone, so the result is exactly "the lines the
// expression matches", as grep defines it.
type matcher struct {
	re          *regexp.Regexp
	lits        []*seqFinder // one of these occurs in every match; nil if unknown
	finders     []finder     // lits, those scanning for the same byte as one
	traps       bool         // a sequence leaves out KELVIN SIGN or LONG S (see hasFoldTraps)
	pure        bool         // the expression is exactly lits[0]: no confirmation needed
	wholeBuffer bool         // no required sequence: run re over the whole buffer
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
	var next []int // per finder: offset of its next occurrence at or after pos, or len(data)+1
	if useLit {
		next = make([]int, len(m.finders))
		for i := range next {
			next[i] = -1
		}
	}
	line, counted := 1, 0
	for pos := 0; pos <= len(data); {
		at := len(data) + 1
		if useLit {
			for i, f := range m.finders {
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
