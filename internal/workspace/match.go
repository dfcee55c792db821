package workspace

import (
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// A pattern is a mask or protected pattern compiled for the rule "a pattern
// that matches a directory covers everything below it": it matches a
// lowercased path when the doublestar pattern matches the path or one of
// its parent directories. Under that rule most patterns need no ancestor
// loop: "X/**" is X, "**/G" (G one component) is "some component matches
// G", and a pattern without metacharacters is a prefix test.
type pattern struct {
	src  string // as configured, lowercased; reported as the rule
	kind patternKind
	arg  string // the literal, or the component pattern
	comp compKind
	lit  string // for compPrefix and compSuffix, arg without its "*"
	// need are literal pieces of a patGlob pattern that every path it
	// matches contains, tested before the glob engine runs: most paths
	// lack ".git/modules", and the test costs far less than the match.
	need []string
}

// compKind says how a component pattern is matched: most are literal
// names, "*.ext" or "name.*", which need no glob engine.
type compKind uint8

const (
	compGlob compKind = iota
	compEqual
	compPrefix
	compSuffix
)

type patternKind uint8

const (
	patAll       patternKind = iota // "**"
	patLiteral                      // arg, or anything below it
	patComponent                    // some path component matches arg
	patGlob                         // src matches the path or a parent
)

const meta = `*?[{\`

func compile(src string) pattern {
	p := src
	for strings.HasSuffix(p, "/**") {
		p = strings.TrimSuffix(p, "/**")
	}
	switch rest, ok := strings.CutPrefix(p, "**/"); {
	case p == "**":
		return pattern{src: src, kind: patAll}
	case ok && rest != "" && !strings.Contains(rest, "/") && !strings.Contains(rest, "**"):
		c := pattern{src: src, kind: patComponent, arg: rest}
		switch {
		case !strings.ContainsAny(rest, meta):
			c.comp, c.lit = compEqual, rest
		case rest[0] == '*' && !strings.ContainsAny(rest[1:], meta):
			c.comp, c.lit = compSuffix, rest[1:]
		case rest[len(rest)-1] == '*' && !strings.ContainsAny(rest[:len(rest)-1], meta):
			c.comp, c.lit = compPrefix, rest[:len(rest)-1]
		}
		return c
	case !strings.ContainsAny(p, meta):
		return pattern{src: src, kind: patLiteral, arg: p}
	}
	return pattern{src: src, kind: patGlob, need: literals(src)}
}

// literals returns the pieces of a glob pattern between its "*" and "?"
// wildcards, without their slashes ("**/" may match nothing, so "a/**/b"
// matches "a/b": only "a" and "b" are certain). A pattern with classes,
// alternatives or escapes gets none.
func literals(src string) []string {
	if strings.ContainsAny(src, `[{\`) {
		return nil
	}
	var out []string
	for _, piece := range strings.FieldsFunc(src, func(r rune) bool { return r == '*' || r == '?' }) {
		if piece = strings.Trim(piece, "/"); piece != "" {
			out = append(out, piece)
		}
	}
	return out
}

// hasNeeded reports whether l contains every piece p needs.
func (p *pattern) hasNeeded(l string) bool {
	for _, n := range p.need {
		if !strings.Contains(l, n) {
			return false
		}
	}
	return true
}

// match reports whether p matches l (lowercased, cleaned, relative) or one
// of its parents.
func (p *pattern) match(l string) bool {
	switch p.kind {
	case patAll:
		return true
	case patLiteral:
		return l == p.arg || (strings.HasPrefix(l, p.arg) && l[len(p.arg)] == '/')
	case patComponent:
		for rest := l; ; {
			c, next, more := strings.Cut(rest, "/")
			if p.matchComponent(c) {
				return true
			}
			if !more {
				return false
			}
			rest = next
		}
	}
	if !p.hasNeeded(l) {
		return false // no parent of l has them either
	}
	for d := l; ; {
		if ok, _ := doublestar.Match(p.src, d); ok {
			return true
		}
		i := strings.LastIndexByte(d, '/')
		if i < 0 {
			return false
		}
		d = d[:i]
	}
}

func (p *pattern) matchComponent(c string) bool {
	switch p.comp {
	case compEqual:
		return c == p.lit
	case compPrefix:
		return strings.HasPrefix(c, p.lit)
	case compSuffix:
		return strings.HasSuffix(c, p.lit)
	}
	ok, _ := doublestar.Match(p.arg, c)
	return ok
}

// matchEntry is match for an entry of a directory known not to match:
// since no parent matches, only the entry itself needs testing.
func (p *pattern) matchEntry(l string) bool {
	switch p.kind {
	case patAll:
		return true
	case patLiteral:
		return l == p.arg
	case patComponent:
		return p.matchComponent(l[strings.LastIndexByte(l, '/')+1:])
	}
	if !p.hasNeeded(l) {
		return false
	}
	ok, _ := doublestar.Match(p.src, l)
	return ok
}

// matchEntry reports the first pattern matching rel, an entry of a
// directory that no pattern matches.
func matchEntry(patterns []pattern, rel string) (string, bool) {
	l := fold(rel)
	for i := range patterns {
		if patterns[i].matchEntry(l) {
			return patterns[i].src, true
		}
	}
	return "", false
}

// match reports the first pattern matching rel or one of its parent
// directories, case-insensitively.
func match(patterns []pattern, rel string) (string, bool) {
	if rel == "." || rel == "" {
		return "", false
	}
	l := fold(rel)
	for i := range patterns {
		if patterns[i].match(l) {
			return patterns[i].src, true
		}
	}
	return "", false
}

// fold lowercases a name for matching. A case-folding directory (ext4 or
// tmpfs with casefold) compares names by their Unicode case folding, under
// which a few non-ASCII letters equal ASCII ones: ".ſsh" and ".ßh" name
// .ssh there, "hoo\u212as" (a Kelvin sign) names hooks. Lowercasing maps the
// Kelvin sign; the rest are the full foldings of CaseFolding.txt whose
// result is ASCII, applied here so a mask or protected pattern written in
// ASCII covers every spelling such a directory would open.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return asciiFolds.Replace(strings.ToLower(s))
		}
	}
	return strings.ToLower(s)
}

var asciiFolds = strings.NewReplacer(
	"\u017f", "s", // ſ LATIN SMALL LETTER LONG S
	"\u00df", "ss", // ß (ẞ lowercases to it)
	"\ufb00", "ff", "\ufb01", "fi", "\ufb02", "fl", "\ufb03", "ffi", "\ufb04", "ffl",
	"\ufb05", "st", "\ufb06", "st",
)
