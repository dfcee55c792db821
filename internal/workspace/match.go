package workspace

import (
	"strings"

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
	return pattern{src: src, kind: patGlob}
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
	ok, _ := doublestar.Match(p.src, l)
	return ok
}

// matchEntry reports the first pattern matching rel, an entry of a
// directory that no pattern matches.
func matchEntry(patterns []pattern, rel string) (string, bool) {
	l := strings.ToLower(rel)
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
	l := strings.ToLower(rel)
	for i := range patterns {
		if patterns[i].match(l) {
			return patterns[i].src, true
		}
	}
	return "", false
}
