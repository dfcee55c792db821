package shellpolicy

import (
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Literal returns the value bash gives the word w when bash reaches that
// value with no expansion at all, and false for every other word. It is
// the one reader of "is this word plain text" for callers that match words
// against patterns (rules, auto-approval): a word it accepts means the same
// bytes to the matcher and to the shell that runs the line, which is
// bash --noprofile --norc -c (non-interactive). A refusal only means the
// caller cannot vouch for the word and a person is asked, so when bash's
// reading is in doubt the word is refused. The word must come from a line
// parsed as bash by mvdan.cc/sh; see the notes on the line below.
//
// Accepted parts, concatenated:
//
//   - Unquoted text holding none of \ $ ` * ? [ ] { } ( ) ' " and no
//     whitespace or operator byte: no escape (bash would remove the
//     backslash), no parameter, command or arithmetic expansion, no glob
//     (extglob's @( !( +( need a parenthesis) and no brace expansion. A ~
//     is accepted only after another byte of the same unquoted run that is
//     not = or : — bash expands a tilde at the start of a word and after =
//     or : in words that look like assignments (a=~, a[1]=~, x+=~,
//     PATH=a:~), even as arguments, so HEAD~1 is literal while ~, ~user,
//     a=~, x=a:~ and a ~ right after a quoted part are refused.
//   - 'single quotes': every byte is literal in bash.
//   - "double quotes" holding none of $ ` \ (and no "): in double quotes
//     bash removes a backslash before $ ` " \ or a newline and keeps it
//     before anything else; rather than decode that, every backslash is
//     refused, as are $ and ` (expansions, or text that only looks like
//     one such as a lone $).
//
// Refused outright: $'…' (ANSI-C quoting, decoded by bash), $"…" (bash may
// translate it through a message catalog; dash reads a $ and a quoted
// string), every expansion and substitution node, a word with no parts,
// NUL, control bytes other than tab and newline inside quotes (bash marks
// its own quoting internally with bytes 0x01 and 0x7f, and has mishandled
// them in words before), and any word whose source is longer than its
// parts' text: the parser removed something from it (a backslash-newline,
// a CR before a newline), so the value is always the bytes as written.
//
// A ! needs no refusal: history expansion exists only in interactive bash
// (set -H), and warden's bash is never interactive; !( is refused for its
// parenthesis. Invalid UTF-8 is refused, so an accepted word means the
// same bytes under the C locale and UTF-8 ones. Locales whose multibyte
// characters may end in an ASCII byte (GBK, Big5, Shift-JIS) are not
// modelled: there bash could read a character where the parser reads a
// backslash or an operator, in this word or the next.
//
// The line: mvdan.cc/sh reads a CR before a newline as part of the line
// end where bash keeps it in the word, and bash -c cannot receive a NUL, so
// a caller refuses a line failing LiteralLineOK before parsing it.
func Literal(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) == 0 {
		return "", false
	}
	var b strings.Builder
	for i, p := range w.Parts {
		if i > 0 && p.Pos().Offset() != w.Parts[i-1].End().Offset() {
			return "", false // the parser removed a backslash-newline between parts
		}
		switch p := p.(type) {
		case *syntax.Lit:
			if !literalBare(p.Value) || !spans(p.ValuePos, p.ValueEnd, p.Value) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar || !literalQuoted(p.Value) || !spans(p.Left, p.Right, "'"+p.Value) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			n := 0
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.ContainsAny(l.Value, "$`\\\"") || !literalQuoted(l.Value) || !spans(l.ValuePos, l.ValueEnd, l.Value) {
					return "", false
				}
				b.WriteString(l.Value)
				n += len(l.Value)
			}
			if !spans(p.Left, p.Right, "\""+strings.Repeat(" ", n)) {
				return "", false
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// spans reports whether the source between from and to is exactly as long
// as text: the parser removed nothing from it (a backslash-newline, a CR
// before a newline), so the value is the bytes written.
func spans(from, to syntax.Pos, text string) bool {
	return from.IsValid() && to.IsValid() && to.Offset() >= from.Offset() && int(to.Offset()-from.Offset()) == len(text)
}

// LiteralLineOK reports whether a command line may be parsed for Literal
// words at all: no carriage return (the parser drops one before a newline,
// bash keeps it) and no NUL (bash -c cannot receive one; the parser reads
// it as text).
func LiteralLineOK(line string) bool {
	return !strings.ContainsAny(line, "\r\x00")
}

// literalBare reports whether an unquoted run of text is its own value.
func literalBare(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f || c == ' ':
			return false
		case strings.IndexByte("\\$`*?[]{}()'\"<>|&;", c) >= 0:
			return false
		case c == '~' && (i == 0 || s[i-1] == '=' || s[i-1] == ':'):
			return false
		}
	}
	return true
}

// literalQuoted reports whether quoted text holds only bytes Literal
// passes through: valid UTF-8 with no control byte but tab and newline.
func literalQuoted(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return false
		}
	}
	return true
}
