package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// braceDisagrees reports a word whose brace expansion bash and
// mvdan.cc/sh read differently. When a {…} holds no comma and no .., bash
// does not close the group there but looks further for a } that makes one:
// `{/etc/passwd},x}` is the words /etc/passwd} and x to bash and one
// relative word to mvdan.cc/sh. Such a word is read as unknown: any brace
// group without a comma or .. that is followed by another unquoted } (a
// few words both read alike, such as {{a},b}, are caught too).
func braceDisagrees(w *syntax.Word) bool {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		} else {
			b.WriteByte(0) // quoted or expanded text: no brace of bash's
		}
	}
	s := b.String()
	if !strings.Contains(s, "{") {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // an escaped character is not a brace
		case '{':
			end, comma := closeBrace(s, i)
			if end < 0 {
				return false
			}
			if !comma && !strings.Contains(s[i:end], "..") && strings.Contains(s[end+1:], "}") {
				return true
			}
		}
	}
	return false
}

// closeBrace finds the } that closes the { at s[open] by nesting, and
// whether a comma sits at the group's own level.
func closeBrace(s string, open int) (end int, comma bool) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i, comma
			}
		case ',':
			if depth == 1 {
				comma = true
			}
		}
	}
	return -1, false
}

// braceRangeQuotes reports a letter sequence that crosses from upper to
// lower case ({Z..a}, {a..Z..2}). Between Z and a lie \ and `, and bash
// expands what brace expansion made as if written: the \ quotes the next
// character (cat {Z..a}/etc/passwd is cat /etc/passwd among others, the
// expander's words were all relative) and a ` starts a command
// substitution.
func braceRangeQuotes(w *syntax.Word) bool {
	if !hasLitDots(w) {
		return false
	}
	cp := *w
	if !syntax.SplitBraces(&cp) {
		return false
	}
	return rangeQuotes(cp.Parts)
}

func rangeQuotes(parts []syntax.WordPart) bool {
	for _, p := range parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		if !b.Sequence {
			for _, e := range b.Elems {
				if rangeQuotes(e.Parts) {
					return true
				}
			}
			continue
		}
		if len(b.Elems) < 2 {
			continue
		}
		from, to := b.Elems[0].Lit(), b.Elems[1].Lit()
		if len(from) == 1 && len(to) == 1 && min(from[0], to[0]) <= '`' && max(from[0], to[0]) >= '\\' {
			return true
		}
	}
	return false
}

func hasLitDots(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "..") {
			return true
		}
	}
	return false
}
