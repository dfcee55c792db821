package shellpolicy

// Where bash reads a word differently from the parser and the expander,
// the judge reads it bash's way.

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// paramBeforeBrace reports a word where an unbraced $name is followed by a
// brace expansion ($A{0,}): bash expands braces first, on the text, so the
// name grows ($A0 and $A); the parser takes $A first. Such a word is
// expanded the way bash does (bashBraces).
func paramBeforeBrace(w *syntax.Word) bool {
	for i, p := range w.Parts {
		pe, ok := p.(*syntax.ParamExp)
		if !ok || !pe.Short || pe.Param == nil || !isName(pe.Param.Value) || i+1 >= len(w.Parts) {
			continue
		}
		if l, ok := w.Parts[i+1].(*syntax.Lit); ok && strings.HasPrefix(l.Value, "{") {
			return true
		}
	}
	return false
}

// bashBraces brace-expands word text the way bash does, before any other
// expansion: quotes, backslashes, ${…} and $(…) are skipped. ok is false
// for what it does not read (sequences, more than maxBraceFields words).
func bashBraces(s string) (out []string, ok bool) {
	// skip returns the index after the construct starting at i, or i+1.
	skip := func(i int) int {
		switch {
		case s[i] == '\\':
			return min(i+2, len(s))
		case s[i] == '\'':
			if k := strings.IndexByte(s[i+1:], '\''); k >= 0 {
				return i + k + 2
			}
			return len(s)
		case s[i] == '"':
			for k := i + 1; k < len(s); k++ {
				if s[k] == '\\' {
					k++
					continue
				}
				if s[k] == '"' {
					return k + 1
				}
			}
			return len(s)
		case s[i] == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '('):
			open, shut := s[i+1], byte('}')
			if open == '(' {
				shut = ')'
			}
			depth := 0
			for k := i + 1; k < len(s); k++ {
				switch s[k] {
				case '\\':
					k++
				case open:
					depth++
				case shut:
					depth--
					if depth == 0 {
						return k + 1
					}
				}
			}
			return len(s)
		}
		return i + 1
	}
	for i := 0; i < len(s); {
		if s[i] != '{' {
			i = skip(i)
			continue
		}
		// a group: alternatives at depth 0, separated by commas
		var alts []string
		depth, start, end := 0, i+1, -1
		for k := i + 1; k < len(s) && end < 0; {
			switch s[k] {
			case '{':
				depth++
			case '}':
				if depth == 0 {
					alts = append(alts, s[start:k])
					end = k
					continue
				}
				depth--
			case ',':
				if depth == 0 {
					alts = append(alts, s[start:k])
					start = k + 1
				}
			}
			k = skip(k)
		}
		if end < 0 || len(alts) < 2 {
			if end < 0 {
				i++ // an unmatched {: later groups may still expand
				continue
			}
			if strings.Contains(s[i+1:end], "..") {
				return nil, false
			}
			i = skip(i)
			continue
		}
		for _, a := range alts {
			rest, ok := bashBraces(s[:i] + a + s[end+1:])
			if !ok {
				return nil, false
			}
			out = append(out, rest...)
			if len(out) > maxBraceFields {
				return nil, false
			}
		}
		return out, true
	}
	return []string{s}, true
}

// bashOrderWords re-reads a word that paramBeforeBrace reports as the
// words bash's brace expansion makes of its text; nil when it cannot.
func (j *judge) bashOrderWords(w *syntax.Word) []*syntax.Word {
	texts, ok := bashBraces(j.text(w))
	if !ok {
		return nil
	}
	var out []*syntax.Word
	for _, t := range texts {
		var ws []*syntax.Word
		for x, err := range newParser(syntax.LangBash).WordsSeq(strings.NewReader(t)) {
			if err != nil {
				return nil
			}
			ws = append(ws, x)
		}
		if len(ws) > 1 {
			return nil
		}
		out = append(out, ws...)
	}
	return out
}

// ctrlEscapes rewrites the escapes of $'…' parts that bash reads and the
// expander does not as \xHH: \cX ($'/\c@etc' is "/" in bash, the NUL
// ending the string) and \x{H…} (any number of hex digits, the value's
// low byte, the } optional: $'\x{2f}etc' is /etc, which the expander kept
// as a relative word).
func ctrlEscapes(w *syntax.Word) *syntax.Word {
	var cp *syntax.Word
	for i, p := range w.Parts {
		sq, ok := p.(*syntax.SglQuoted)
		if !ok || !sq.Dollar || !strings.Contains(sq.Value, `\c`) && !strings.Contains(sq.Value, `\x{`) {
			continue
		}
		if cp == nil {
			c := *w
			c.Parts = slices.Clone(w.Parts)
			cp = &c
		}
		nq := *sq
		nq.Value = bashEscapes(sq.Value)
		cp.Parts[i] = &nq
	}
	if cp == nil {
		return w
	}
	return cp
}

// bashEscapes is ctrlEscapes on the text of one $'…'.
func bashEscapes(v string) string {
	var b strings.Builder
	for k := 0; k < len(v); k++ {
		if v[k] != '\\' || k+1 >= len(v) {
			b.WriteByte(v[k])
			continue
		}
		switch {
		case v[k+1] == 'x' && k+2 < len(v) && v[k+2] == '{':
			c, n := 0, k+3
			for ; n < len(v) && isHex(v[n]); n++ {
				c = (c*16 + hexVal(v[n])) & 0xff
			}
			if n < len(v) && v[n] == '}' {
				n++
			}
			fmt.Fprintf(&b, `\x%02x`, c)
			k = n - 1
		case v[k+1] == 'c' && k+2 < len(v):
			c := v[k+2]
			n := 3
			switch {
			case c == 0x01 || c == 0x7f:
				// bash's lexer marks these bytes with a \x01 before
				// them, and \c takes that mark: \x01 then the byte.
				b.WriteString(`\x01`)
				k += 1
				continue
			case c == '\\' && k+3 < len(v) && v[k+3] == '\\':
				n = 4
			}
			x := c & 0x1f
			if c == '?' {
				x = 0x7f
			}
			fmt.Fprintf(&b, `\x%02x`, x)
			k += n - 1
		default:
			b.WriteString(v[k : k+2])
			k++
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c <= '9':
		return int(c - '0')
	case c >= 'a':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// promptHoles returns w with every ${x@P} replaced by text the judge cannot
// see. Bash expands x's value as a prompt: backslash escapes (\u the user,
// \h the host, \W the working directory's name — which a line can choose
// with mkdir and cd), $0, $(…) and history numbers, none of which the
// judge reads. Taken literally, `x='\W'; ${x@P} id` after `cd sudo` was a
// command named \W, not sudo. The substitutions inside the value are
// judged separately (promptCtx).
func promptHoles(w *syntax.Word) *syntax.Word {
	if !hasPromptExp(w.Parts) {
		return w
	}
	cp := *w
	cp.Parts = promptHoleParts(w.Parts)
	return &cp
}

func isPromptExp(p *syntax.ParamExp) bool {
	return p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && p.Exp.Word.Lit() == "P"
}

func hasPromptExp(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.ParamExp:
			if isPromptExp(x) {
				return true
			}
		case *syntax.DblQuoted:
			if hasPromptExp(x.Parts) {
				return true
			}
		}
	}
	return false
}

func promptHoleParts(parts []syntax.WordPart) []syntax.WordPart {
	out := make([]syntax.WordPart, len(parts))
	for i, p := range parts {
		switch x := p.(type) {
		case *syntax.ParamExp:
			if isPromptExp(x) {
				// A substitution no reading knows: empty under one
				// reading, a hole under the other.
				out[i] = &syntax.CmdSubst{Left: x.Pos(), Right: x.End()}
				continue
			}
		case *syntax.DblQuoted:
			if hasPromptExp(x.Parts) {
				dq := *x
				dq.Parts = promptHoleParts(x.Parts)
				out[i] = &dq
				continue
			}
		}
		out[i] = p
	}
	return out
}
