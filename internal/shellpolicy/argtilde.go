package shellpolicy

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Outside POSIX mode bash expands a tilde in an argument that looks like an
// assignment — `cat x=~/a`, `ls p=a:~:~/b` — right after its first = and
// after every unquoted :, as it would in a real assignment (dash and
// mvdan.cc/sh leave such arguments alone). argTilde gives the judge bash's
// reading of such a word.

// assignLike is the start of an argument bash takes for an assignment: a
// name, then = or +=. A subscript (a[1]=~) is matched separately.
var assignLike = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\+?=`)
var subscriptLike = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\[`)

// argTilde returns w with each tilde bash expands in it replaced by its
// value under e (the same value a tilde at the start of a word gets), or w
// itself when bash expands none. unknown reports a word whose tildes the
// judge does not follow exactly (a subscript, a backslash, a tilde prefix
// followed by quotes or an expansion): the caller reads it as unknown.
func argTilde(w *syntax.Word, e *readEnv) (_ *syntax.Word, unknown bool) {
	first, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return w, false
	}
	hasTilde := false
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "~") {
			hasTilde = true
		}
	}
	if !hasTilde {
		return w, false
	}
	// The parser splits a[1]=~ into the literals a and [1]=~.
	var lead strings.Builder
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			break
		}
		lead.WriteString(l.Value)
	}
	if subscriptLike.MatchString(lead.String()) {
		return w, true
	}
	m := assignLike.FindStringIndex(first.Value)
	if m == nil {
		return w, false
	}
	for _, p := range w.Parts {
		// A backslash or a brace changes which tildes bash sees (\:~,
		// x={~+,y}): not followed.
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, `\{}`) {
			return w, true
		}
	}
	var parts []syntax.WordPart
	changed := false
	for k, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			parts = append(parts, p)
			continue
		}
		s, from := l.Value, 0
		i := 0
		if k == 0 {
			i = m[1]
		}
		for ; i < len(s); i++ {
			if s[i] != '~' || !(k == 0 && i == m[1] || i > 0 && s[i-1] == ':') {
				continue
			}
			end := strings.IndexAny(s[i:], "/:")
			switch {
			case end >= 0:
				end += i
			case k == len(w.Parts)-1:
				end = len(s)
			default:
				return w, true // ~ then quotes or an expansion
			}
			val, known := tildeValue(s[i+1:end], e)
			if !known {
				return w, true
			}
			if i > from {
				parts = append(parts, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: l.ValueEnd, Value: s[from:i]})
			}
			// Quoted: what a tilde gives is not split or globbed.
			parts = append(parts, &syntax.SglQuoted{Left: l.ValuePos, Right: l.ValueEnd, Value: val})
			from, i, changed = end, end-1, true
		}
		switch {
		case from == 0:
			parts = append(parts, p)
		case from < len(s):
			parts = append(parts, &syntax.Lit{ValuePos: l.ValuePos, ValueEnd: l.ValueEnd, Value: s[from:]})
		}
	}
	if !changed {
		return w, false
	}
	return &syntax.Word{Parts: parts}, false
}

// tildeValue is what ~user gives under e, as a tilde at the start of a
// word: ~ is HOME, ~+ the working directory, anything else unknown.
func tildeValue(user string, e *readEnv) (string, bool) {
	switch user {
	case "":
		v := e.Get("HOME")
		return v.String(), v.IsSet()
	case "+":
		v := e.Get("PWD")
		return v.String(), v.IsSet()
	}
	return "", false
}
