package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// In double quotes (and in a heredoc body) bash reads a single quote in
// the word of ${x:-word} (and -, +, :+, =, :=, ?, :?) as a character, not
// as a quote: "${x:-'$(touch y)'}" runs touch and gives '' around its
// output. mvdan.cc/sh parses a single-quoted string there, so the judge saw
// neither the substitution nor the quotes. Such a word is unknown, and
// where the quoted text holds $ or ` the command runs code the judge does
// not see.

// dqSingleQuotes reports single-quoted text in the word of a ${x:-word}
// that bash reads in double quotes, and whether it holds $ or `.
func dqSingleQuotes(w *syntax.Word) (found, code bool) {
	var inWord func(parts []syntax.WordPart)
	inParam := func(p *syntax.ParamExp) {
		if p.Exp != nil && defaultOp(p.Exp.Op) && p.Exp.Word != nil {
			inWord(p.Exp.Word.Parts)
		}
	}
	inWord = func(parts []syntax.WordPart) {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.SglQuoted:
				if !p.Dollar {
					found = true
					code = code || strings.ContainsAny(p.Value, "$`")
				}
			case *syntax.ParamExp:
				inParam(p)
			case *syntax.DblQuoted:
				inWord(p.Parts)
			}
		}
	}
	var outer func(parts []syntax.WordPart, quoted bool)
	outer = func(parts []syntax.WordPart, quoted bool) {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.DblQuoted:
				outer(p.Parts, true)
			case *syntax.ParamExp:
				if quoted {
					inParam(p)
				}
			}
		}
	}
	outer(w.Parts, false)
	return found, code
}

// heredocSingleQuotes is dqSingleQuotes for a heredoc body, which bash
// reads as if in double quotes.
func heredocSingleQuotes(w *syntax.Word) (found, code bool) {
	return dqSingleQuotes(&syntax.Word{Parts: []syntax.WordPart{&syntax.DblQuoted{Parts: w.Parts}}})
}
