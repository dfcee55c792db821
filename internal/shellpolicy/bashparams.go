package shellpolicy

import (
	"io"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Parameter expansions whose value bash computes differently from
// mvdan.cc/sh's expander. A word holding one is read as unknown text.
//
//   - ${x/pat/rep}: bash 5.2 (patsub_replacement, on by default) puts the
//     matched text where rep holds an unquoted &, and removes the
//     backslashes in rep: x=/etc/passwd; cat ${x/*/&} is cat /etc/passwd,
//     and x=aetc; cat ${x/a/\/} is cat /etc. The expander keeps both as
//     written (a relative word). A replacement that holds a & or a
//     backslash, written or in a variable's value, is not followed.
//   - ${s:off:len} and ${a[i]}: the offset, length and subscript are
//     arithmetic. bash evaluates a variable's value as an expression
//     (o='1+1' is 2) where the expander reads a non-number as 0, and a
//     number the judge cannot see ($RANDOM, ${#TERM}, $(wc -l)) is 0 to
//     the expander: s=ab/etc/passwd; cat ${s:RANDOM%3} may be
//     cat /etc/passwd. Arithmetic there that is not made of numbers and
//     variables holding known numbers is not followed.

//   - ${x:-word} (and -, +, :+, =, :=, ?, :?): bash removes the
//     backslashes that quote in word; the expander keeps them. Written in
//     eval "${x:-echo \`touch y\`}" the expander's string was one echo, bash
//     runs touch. A word with a backslash there is not followed.

//   - A pattern with an equivalence class or a collating symbol
//     ([[=a=]], [[.a.]]) matches in bash and not in the expander:
//     x=a/etc/passwd; cat ${x#[[=a=]]} is cat /etc/passwd. ${!prefix@}
//     lists variable names the expander does not give.

// paramDisagrees reports a word with a parameter expansion whose value
// bash and the expander may compute differently under e.
func (j *judge) paramDisagrees(w *syntax.Word, e *readEnv) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false // judged on their own; their output is text
		case *syntax.ParamExp:
			if n.Excl && n.Names != 0 {
				found = true // ${!prefix@}: names the expander does not list
			}
			if n.Index != nil && n.Param != nil && j.lookup(n.Param.Value).unknown {
				// An unknown value is one string to the expander; as an
				// array (a[1]=/etc/passwd, a+=(…)) its elements are lost.
				found = true
			}
			if n.Param != nil && j.lookup(n.Param.Value).nameref &&
				valueHas(e.Get(n.Param.Value), func(s string) bool { return strings.Contains(s, "[") || hasHole(s) }) {
				// declare -n r='a[0]': $r is the element to bash.
				found = true
			}
			if n.Excl && n.Names == 0 && n.Index == nil && n.Param != nil &&
				valueHas(e.Get(n.Param.Value), func(s string) bool { return strings.Contains(s, "[") || hasHole(s) }) {
				// ${!x} with x='a[0]': bash expands the element, the
				// expander gives nothing.
				found = true
			}
			if n.Exp != nil && !defaultOp(n.Exp.Op) && n.Exp.Op != syntax.OtherParamOps && j.patternClasses(n.Exp.Word, e) ||
				n.Repl != nil && j.patternClasses(n.Repl.Orig, e) {
				found = true
			}
			if n.Exp != nil && defaultOp(n.Exp.Op) && backslashLit(n.Exp.Word) {
				found = true
			}
			if n.Repl != nil && n.Repl.With != nil && j.replDisagrees(n.Repl.With, e) {
				found = true
			}
			if n.Slice != nil && (!j.arithKnown(n.Slice.Offset, e, 0) || !j.arithKnown(n.Slice.Length, e, 0)) {
				found = true
			}
			if n.Index != nil {
				if x, ok := n.Index.(*syntax.Word); !ok || (x.Lit() != "@" && x.Lit() != "*") {
					if !j.arithKnown(n.Index, e, 0) {
						found = true
					}
				}
			}
		}
		return !found
	})
	return found
}

// replDisagrees reports a replacement of ${x/pat/rep} that holds an
// unquoted & or backslash, written or in what it expands (a variable, the
// known output of a substitution). What rep holds in quotes ('&', "\\",
// "$r") bash and the expander read alike.
func (j *judge) replDisagrees(w *syntax.Word, e *readEnv) bool {
	bad := func(s string) bool { return strings.ContainsAny(s, `&\`) }
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if bad(p.Value) {
				return true
			}
		case *syntax.CmdSubst:
			if o := j.substOut[p]; o != nil && o.text != nil && bad(*o.text) {
				return true
			}
		case *syntax.ParamExp:
			if p.Param != nil && valueHas(e.Get(p.Param.Value), bad) {
				return true
			}
			// What a nested expansion gives is not followed.
			if p.Exp != nil || p.Repl != nil || p.Slice != nil || p.Index != nil || p.Excl {
				return true
			}
		}
	}
	return false
}

func valueHas(v expand.Variable, bad func(string) bool) bool {
	if v.Kind == expand.Indexed || v.Kind == expand.Associative {
		for _, s := range v.List {
			if bad(s) {
				return true
			}
		}
		for _, s := range v.Map {
			if bad(s) {
				return true
			}
		}
		return false
	}
	return bad(v.String())
}

// plainNumber is a value bash and the expander read alike as arithmetic:
// one integer constant (decimal, 0x hex, octal, base#digits).
var plainNumber = regexp.MustCompile(`^[ \t\n]*[+-]?[0-9][0-9A-Za-z#@_]*[ \t\n]*$`)

// arithKnown reports arithmetic whose value the expander computes as bash
// does under e: numbers, operators, and variables (bare or $x) that hold
// known integers or names of such variables.
func (j *judge) arithKnown(x syntax.ArithmExpr, e *readEnv, depth int) bool {
	if x == nil {
		return true
	}
	if depth > maxEvalDepth {
		return false
	}
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		return j.arithKnown(x.X, e, depth) && j.arithKnown(x.Y, e, depth)
	case *syntax.UnaryArithm:
		return j.arithKnown(x.X, e, depth)
	case *syntax.ParenArithm:
		return j.arithKnown(x.X, e, depth)
	case *syntax.Word:
		if !j.arithWordKnown(x, e, depth) {
			return false
		}
		s, ok := j.arithLiteral(x, e)
		return ok && j.arithValueKnown(s, e, depth)
	}
	return false
}

// arithWordKnown checks what a word of arithmetic expands: variables the
// judge may not see, nested arithmetic and subscripts.
func (j *judge) arithWordKnown(w *syntax.Word, e *readEnv, depth int) bool {
	known := true
	syntax.Walk(w, func(n syntax.Node) bool {
		if !known {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			if o := j.substOut[n]; o == nil || o.text == nil {
				known = false
			}
			return false
		case *syntax.ProcSubst:
			known = false
		case *syntax.ArithmExp:
			known = j.arithKnown(n.X, e, depth+1)
			return false
		case *syntax.ParamExp:
			if n.Param != nil && j.lookup(n.Param.Value).unknown {
				known = false
			}
			if j.paramDisagrees(&syntax.Word{Parts: []syntax.WordPart{n}}, e) {
				known = false
			}
		}
		return known
	})
	return known
}

// arithValueKnown checks one operand's text: empty, a plain number, or a
// name whose value is known in turn.
func (j *judge) arithValueKnown(s string, e *readEnv, depth int) bool {
	switch {
	case hasHole(s):
		return false
	case strings.TrimSpace(s) == "" || plainNumber.MatchString(s):
		return true
	case isName(s):
		if depth >= maxEvalDepth || j.lookup(s).unknown {
			return false
		}
		v := e.Get(s)
		if v.Kind == expand.Indexed || v.Kind == expand.Associative {
			return false
		}
		return j.arithValueKnown(v.String(), e, depth+1)
	}
	return false
}

// arithLiteral is the text of one word of arithmetic under e.
func (j *judge) arithLiteral(w *syntax.Word, e *readEnv) (string, bool) {
	cfg := &expand.Config{
		Env: e,
		CmdSubst: func(wr io.Writer, cs *syntax.CmdSubst) error {
			if o := j.substOut[cs]; o != nil && o.text != nil {
				io.WriteString(wr, *o.text)
				return nil
			}
			io.WriteString(wr, hole)
			return nil
		},
		ProcSubst: procPath,
	}
	s, err := expand.Literal(cfg, w)
	return s, err == nil
}

// defaultOp is an operator of ${x<op>word} whose word is expanded as text.
func defaultOp(op syntax.ParExpOperator) bool {
	switch op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AlternateUnset, syntax.AlternateUnsetOrNull,
		syntax.AssignUnset, syntax.AssignUnsetOrNull, syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return true
	}
	return false
}

// backslashLit reports a backslash in the literal text of w, quoted or not
// (a substitution's body aside).
func backslashLit(w *syntax.Word) bool {
	found := false
	if w == nil {
		return false
	}
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.Lit:
			found = found || strings.Contains(n.Value, `\`)
		}
		return !found
	})
	return found
}

// patternClasses reports a pattern holding [= or [. in its text or in a
// variable it expands, or text the judge cannot see.
func (j *judge) patternClasses(w *syntax.Word, e *readEnv) bool {
	bad := func(s string) bool { return strings.Contains(s, "[=") || strings.Contains(s, "[.") }
	found := false
	if w == nil {
		return false
	}
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			if o := j.substOut[n]; o == nil || o.text == nil || bad(*o.text) {
				found = true
			}
			return false
		case *syntax.Lit:
			found = found || bad(n.Value)
		case *syntax.SglQuoted:
			found = found || bad(n.Value)
		case *syntax.ParamExp:
			// A pattern the judge cannot see may match: ${x#$TERM} strips
			// the a of a/etc/passwd when TERM is a.
			if n.Param != nil && (j.lookup(n.Param.Value).unknown || valueHas(e.Get(n.Param.Value), func(s string) bool { return bad(s) || hasHole(s) })) {
				found = true
			}
		}
		return !found
	})
	return found
}
