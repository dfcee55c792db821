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
