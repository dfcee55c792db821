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
