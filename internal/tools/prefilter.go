package tools

import (
	"bytes"
	"cmp"
	"math/bits"
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// The prefilter: strings every match must contain, read from the parsed
// expression, so that a file is searched with memchr-speed scans and the
// expression only runs on the few lines that hold one of them.
//
// A required string is a sequence of byte classes rather than a literal:
// [A-Z]{6,}_[0-9]+ requires six capital letters, "_" and a digit in a row,
// which is rare, while its only literal, "_", is everywhere in source code.
// Only classes of ASCII bytes are used, each of which is exactly one byte
// of the text however the rest of it decodes (UTF-8 lead and continuation
// bytes, and the invalid bytes that the expression reads as U+FFFD, are all
// 0x80 or above), and exact non-ASCII runes, whose UTF-8 bytes cannot occur
// in the text as anything else. Case folding equates k and s with KELVIN
// SIGN and LATIN SMALL LETTER LONG S: a sequence that relied on leaving
// those out is marked, and a file holding either is searched without it.

// maxSeq bounds the length of a required sequence: longer ones are cut,
// which keeps them required and already makes them rare.
const maxSeq = 64

// maxLiteralSet bounds the alternatives searched for separately.
const maxLiteralSet = 8

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

func (s *byteSet) len() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}

func (s *byteSet) members() []byte {
	var out []byte
	for c := 0; c < 256; c++ {
		if s.has(byte(c)) {
			out = append(out, byte(c))
		}
	}
	return out
}

// prob estimates how likely a byte of source code is in s.
func (s *byteSet) prob() float64 {
	p := 0.0
	for c := 0; c < 256; c++ {
		if s.has(byte(c)) {
			p += float64(byteFreq[c]) / 1e6
		}
	}
	return min(p, 1)
}

func singleton(c byte) byteSet {
	var s byteSet
	s.add(c)
	return s
}

// classSeq is a string of byte classes: text holds it at i when every byte
// text[i+k] is in pos[k].
type classSeq struct {
	pos   []byteSet
	traps bool // needs a file free of KELVIN SIGN and LONG S (see above)
}

func (a classSeq) concat(b classSeq) classSeq {
	return classSeq{pos: slices.Concat(a.pos, b.pos), traps: a.traps || b.traps}
}

func (a classSeq) repeat(n int) classSeq {
	out := classSeq{traps: a.traps}
	for i := 0; i < n && len(out.pos) <= 2*maxSeq; i++ {
		out.pos = append(out.pos, a.pos...)
	}
	return out
}

// head and tail cut a to at most maxSeq classes.
func (a classSeq) head() classSeq {
	if len(a.pos) > maxSeq {
		a.pos = a.pos[:maxSeq:maxSeq]
	}
	return a
}

func (a classSeq) tail() classSeq {
	if len(a.pos) > maxSeq {
		a.pos = a.pos[len(a.pos)-maxSeq:]
	}
	return a
}

// alts is a set of sequences one of which every match contains.
type alts []classSeq

// facts is what the prefilter knows about the strings a subexpression
// matches.
type facts struct {
	exact  bool     // every match is a string of seq (seq may be empty)
	seq    classSeq // when exact
	prefix classSeq // every match starts with a string of this
	suffix classSeq // every match ends with a string of this
	// rep is set when the node is X{n,m} (n >= 1) of an exact X: then
	// copies of X just before it extend its suffix (X X+ ends with X X).
	rep    *classSeq
	repMin int
	inner  []alts // each of these sets occurs in every match
}

func exactFacts(s classSeq) facts {
	if len(s.pos) > maxSeq {
		h := s.head()
		return facts{prefix: h, suffix: s.tail(), inner: []alts{{h}}}
	}
	return facts{exact: true, seq: s, prefix: s, suffix: s}
}

// analyze returns the facts of re (simplified, not using \A or \z).
func analyze(re *syntax.Regexp) facts {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return exactFacts(classSeq{}) // zero width
	case syntax.OpLiteral:
		return concatFacts(literalPieces(re.Rune, re.Flags&syntax.FoldCase != 0))
	case syntax.OpCharClass:
		if s, ok := classSet(re.Rune); ok {
			return exactFacts(s)
		}
	case syntax.OpCapture:
		return analyze(re.Sub[0])
	case syntax.OpPlus:
		return repeatFacts(analyze(re.Sub[0]), 1, -1)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return repeatFacts(analyze(re.Sub[0]), re.Min, re.Max)
		}
	case syntax.OpConcat:
		subs := make([]facts, len(re.Sub))
		for i, s := range re.Sub {
			subs[i] = analyze(s)
		}
		return concatFacts(subs)
	case syntax.OpAlternate:
		var set alts
		for _, s := range re.Sub {
			best, _ := bestSet(analyze(s))
			if best == nil || len(set)+len(best) > maxLiteralSet {
				return facts{}
			}
			set = append(set, best...)
		}
		return facts{inner: []alts{set}}
	}
	return facts{} // nothing known: any character, a star, a question mark
}

// repeatFacts is for sub repeated at least lo (>= 1) and at most hi times
// (hi < 0: no limit).
func repeatFacts(sub facts, lo, hi int) facts {
	if !sub.exact {
		return facts{prefix: sub.prefix, suffix: sub.suffix, inner: sub.inner}
	}
	if len(sub.seq.pos) == 0 {
		return sub
	}
	if lo == hi {
		return exactFacts(sub.seq.repeat(lo))
	}
	r := sub.seq.repeat(lo)
	x := sub.seq
	return facts{prefix: r.head(), suffix: r.tail(), rep: &x, repMin: lo}
}

// concatFacts combines the facts of a concatenation's parts: exact parts
// next to each other make one longer sequence, and an inexact part
// contributes its prefix to the sequence before it and starts the next one
// with its suffix.
func concatFacts(subs []facts) facts {
	var out facts
	var cur, head classSeq // cur: the sequence ending here; head: the start's
	whole := true          // cur runs from the start of the concatenation
	exact := true
	for _, f := range subs {
		if f.exact {
			cur = cur.concat(f.seq)
			if len(cur.pos) > maxSeq {
				if whole {
					head = cur.head()
					out.inner = append(out.inner, alts{head})
				}
				cur, whole = cur.tail(), false
			}
			continue
		}
		exact = false
		cand := cur.concat(f.prefix)
		if whole {
			head = cand.head()
		}
		if len(cand.pos) > 0 {
			out.inner = append(out.inner, alts{cand.head()})
		}
		out.inner = append(out.inner, f.inner...)
		if f.rep != nil {
			cur = trailing(cur, *f.rep).concat(f.rep.repeat(f.repMin)).tail()
		} else {
			cur = f.suffix
		}
		whole = false
	}
	if exact && whole {
		return exactFacts(cur)
	}
	out.prefix, out.suffix = head, cur
	if len(cur.pos) > 0 {
		out.inner = append(out.inner, alts{cur})
	}
	return out
}

// trailing returns the copies of x that end s.
func trailing(s, x classSeq) classSeq {
	n, k := len(x.pos), 0
	for (k+1)*n <= len(s.pos) && slices.Equal(s.pos[len(s.pos)-(k+1)*n:len(s.pos)-k*n], x.pos) {
		k++
	}
	return classSeq{pos: s.pos[len(s.pos)-k*n:], traps: s.traps}
}

// literalPieces turns the runes of a literal into exact parts, with an
// inexact one for each rune the prefilter cannot place on bytes.
func literalPieces(runes []rune, fold bool) []facts {
	var out []facts
	var buf [utf8.UTFMax]byte
	for _, r := range runes {
		var s classSeq
		switch {
		case r == '\n':
			s.pos = []byteSet{{}} // no line holds it: an empty class
		case r < utf8.RuneSelf && fold && isASCIILetter(byte(r)):
			c := byte(r) | 0x20
			set := singleton(c)
			set.add(c - 'a' + 'A')
			s.pos, s.traps = []byteSet{set}, c == 'k' || c == 's'
		case r < utf8.RuneSelf:
			s.pos = []byteSet{singleton(byte(r))}
		case fold || r == utf8.RuneError || !utf8.ValidRune(r):
			// A folded non-ASCII letter has spellings of other lengths, and
			// U+FFFD also matches any invalid byte.
			out = append(out, facts{})
			continue
		default:
			for _, c := range buf[:utf8.EncodeRune(buf[:], r)] {
				s.pos = append(s.pos, singleton(c))
			}
		}
		out = append(out, exactFacts(s))
	}
	return out
}

// classSet returns the bytes a character class (as rune ranges) matches,
// when all of them are ASCII, as a one-class sequence. KELVIN SIGN and
// LONG S, which a folded class holds, are left out and the result marked:
// a file holding either is searched without it.
func classSet(ranges []rune) (classSeq, bool) {
	var set byteSet
	traps := false
	for i := 0; i < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
			if r != '\n' {
				set.add(byte(r))
			}
		}
		if hi < utf8.RuneSelf {
			continue
		}
		for r := max(lo, utf8.RuneSelf); r <= hi; r++ {
			if r != '\u212A' && r != '\u017F' {
				return classSeq{}, false
			}
			traps = true
		}
	}
	return classSeq{pos: []byteSet{set}, traps: traps}, true
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// Costs, in nanoseconds, that choose between required sets and their
// anchors, measured with BenchmarkScan over the Go tree (only their ratios
// matter): memchr's pass over a byte of text, per byte searched for; a
// table lookup per byte, for anchors of more than three bytes; a stop of
// memchr at a candidate byte, or of the table loop; and running the
// expression on a line that holds a required sequence.
const (
	costPass      = 0.1
	costTable     = 0.7
	costStop      = 14
	costTableStop = 4
	costConfirm   = 500
	// costRegexp is the cost per byte of running the expression over the
	// whole buffer: a set that costs more is not worth searching for.
	costRegexp = 20
	// maxMemchr is the largest anchor class searched with memchr, once per byte.
	maxMemchr = 3
)

// bestSet returns the cheapest set to search for among f's, with its
// estimated cost per byte of text, or nil when f has none worth it.
func bestSet(f facts) (alts, float64) {
	cands := f.inner
	for _, s := range []classSeq{f.seq, f.prefix, f.suffix} {
		if len(s.pos) > 0 {
			cands = append(cands, alts{s})
		}
	}
	var best alts
	bestCost := float64(costRegexp)
	for _, set := range cands {
		if c := setCost(set); c < bestCost {
			best, bestCost = set, c
		}
	}
	return best, bestCost
}

// setCost estimates the cost per byte of searching for set.
func setCost(set alts) float64 {
	total := 0.0
	for _, s := range set {
		a, cost := chooseAnchor(s)
		if a < 0 {
			return costRegexp
		}
		p := 1.0
		for i := range s.pos {
			p *= s.pos[i].prob()
		}
		total += cost + p*costConfirm
	}
	return total
}

// chooseAnchor returns the class of s to scan for, the cheapest by the
// costs above, and its cost per byte; -1 for an empty s.
func chooseAnchor(s classSeq) (int, float64) {
	best, bestCost := -1, 0.0
	for i := range s.pos {
		n := s.pos[i].len()
		if n == 0 {
			return i, 0 // s never occurs: any byte rules it out
		}
		cost := costTable + s.pos[i].prob()*costTableStop
		if n <= maxMemchr {
			cost = float64(n)*costPass + s.pos[i].prob()*costStop
		}
		if best < 0 || cost < bestCost {
			best, bestCost = i, cost
		}
	}
	return best, bestCost
}

// seqFinder searches text for a classSeq: for the bytes of its anchor
// class with memchr (or a table when there are many), then the other
// classes checked rarest first.
type seqFinder struct {
	pos     []byteSet
	anchor  int
	members []byte     // the anchor class's bytes; none when s never occurs
	table   *[256]bool // the anchor class, when it has more than maxMemchr bytes
	check   []int      // the other classes, rarest first
	lit     []byte     // all classes single bytes: the literal they spell
	traps   bool
}

func newSeqFinder(s classSeq) *seqFinder {
	f := &seqFinder{pos: s.pos, traps: s.traps}
	f.anchor, _ = chooseAnchor(s)
	f.members = f.pos[f.anchor].members()
	if len(f.members) > maxMemchr {
		f.table = new([256]bool)
		for _, c := range f.members {
			f.table[c] = true
		}
	}
	for i := range f.pos {
		if i != f.anchor {
			f.check = append(f.check, i)
		}
	}
	slices.SortStableFunc(f.check, func(a, b int) int {
		return cmp.Compare(f.pos[a].prob(), f.pos[b].prob())
	})
	f.lit = make([]byte, 0, len(f.pos))
	for i := range f.pos {
		if f.pos[i].len() != 1 {
			f.lit = nil
			break
		}
		f.lit = append(f.lit, f.pos[i].members()[0])
	}
	return f
}

// index returns the offset of the first occurrence of the sequence in s,
// or -1.
func (f *seqFinder) index(s []byte) int {
	n := len(f.pos)
	switch {
	case len(f.members) == 0:
		return -1
	case f.table != nil:
		for i := f.anchor; i < len(s); i++ {
			if !f.table[s[i]] {
				continue
			}
			start := i - f.anchor
			if start+n > len(s) {
				return -1
			}
			if f.matchAt(s[start : start+n]) {
				return start
			}
		}
		return -1
	case len(f.members) == 1:
		c := f.members[0]
		for off := f.anchor; off < len(s); {
			i := bytes.IndexByte(s[off:], c)
			if i < 0 {
				return -1
			}
			start := off + i - f.anchor
			if start+n > len(s) {
				return -1
			}
			if f.matchAt(s[start : start+n]) {
				return start
			}
			off += i + 1
		}
		return -1
	}
	if len(f.members) == 2 {
		return f.index2(s)
	}
	var next [maxMemchr]int
	for i := range next {
		next[i] = -1
	}
	for off := f.anchor; ; {
		at := len(s)
		for i, c := range f.members {
			if next[i] < off {
				next[i] = indexByteFrom(s, off, c)
			}
			at = min(at, next[i])
		}
		start := at - f.anchor
		if start+n > len(s) {
			return -1
		}
		if f.matchAt(s[start : start+n]) {
			return start
		}
		off = at + 1
	}
}

// index2 is index for an anchor of two bytes, as a letter folded is: the
// next offset of each is kept, and the nearer taken.
func (f *seqFinder) index2(s []byte) int {
	c0, c1, n := f.members[0], f.members[1], len(f.pos)
	n0, n1 := -1, -1
	for off := f.anchor; ; {
		if n0 < off {
			n0 = indexByteFrom(s, off, c0)
		}
		if n1 < off {
			n1 = indexByteFrom(s, off, c1)
		}
		at := min(n0, n1)
		start := at - f.anchor
		if start+n > len(s) {
			return -1
		}
		if f.matchAt(s[start : start+n]) {
			return start
		}
		off = at + 1
	}
}

func (f *seqFinder) matchAt(s []byte) bool {
	for _, k := range f.check {
		if !f.pos[k].has(s[k]) {
			return false
		}
	}
	return true
}

// finder finds the first occurrence of one of its sequences.
type finder interface {
	index(s []byte) int
}

// groupFinders returns fs with those that scan for the same single byte
// joined into one seqGroup, so that TODO|FIXME|XXX, whose last two are
// both found by their X, makes two passes over the text rather than three.
func groupFinders(fs []*seqFinder) []finder {
	var out []finder
	groups := map[byte]*seqGroup{}
	for _, f := range fs {
		if f.table != nil || len(f.members) != 1 {
			out = append(out, f)
			continue
		}
		c := f.members[0]
		g := groups[c]
		if g == nil {
			g = &seqGroup{c: c, minAnchor: f.anchor, maxAnchor: f.anchor}
			groups[c] = g
			out = append(out, g)
		}
		g.fs = append(g.fs, f)
		g.minAnchor, g.maxAnchor = min(g.minAnchor, f.anchor), max(g.maxAnchor, f.anchor)
	}
	for i, f := range out {
		if g, ok := f.(*seqGroup); ok && len(g.fs) == 1 {
			out[i] = g.fs[0]
		}
	}
	return out
}

// seqGroup is sequences whose anchor is the same byte c, found in one
// memchr pass: at each c, every sequence is checked with c at its anchor.
type seqGroup struct {
	c                    byte
	fs                   []*seqFinder
	minAnchor, maxAnchor int
}

// index returns the first offset where one of the sequences starts, or
// -1. A stop at p is a start at p minus an anchor offset, so stops are
// taken until none can start before the best found.
func (g *seqGroup) index(s []byte) int {
	best := -1
	for off := g.minAnchor; off < len(s); {
		i := bytes.IndexByte(s[off:], g.c)
		if i < 0 {
			break
		}
		p := off + i
		if best >= 0 && p-g.maxAnchor >= best {
			break
		}
		for _, f := range g.fs {
			start, n := p-f.anchor, len(f.pos)
			if start < 0 || start+n > len(s) || (best >= 0 && start >= best) {
				continue
			}
			if f.matchAt(s[start : start+n]) {
				best = start
			}
		}
		off = p + 1
	}
	return best
}

// hasFoldTraps reports whether data holds KELVIN SIGN or LATIN SMALL
// LETTER LONG S, which Go's case folding equates with k and s.
func hasFoldTraps(data []byte) bool {
	return bytes.Contains(data, []byte("\u212A")) || bytes.Contains(data, []byte("\u017F"))
}
