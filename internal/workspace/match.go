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
}

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
		return pattern{src: src, kind: patComponent, arg: rest}
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
		literal := !strings.ContainsAny(p.arg, meta)
		for rest := l; ; {
			c, next, more := strings.Cut(rest, "/")
			if literal && c == p.arg {
				return true
			}
			if !literal {
				if ok, _ := doublestar.Match(p.arg, c); ok {
					return true
				}
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
