package shellpolicy

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Evaluation contexts: places where bash evaluates text as arithmetic or as
// a variable name with a subscript, and so runs the command substitutions
// in that text. A variable used as arithmetic (a bare name, $x in
// $((…)), an operand of [[ -eq ]]) has its value evaluated as arithmetic in
// turn: x='a[$(cmd)]'; echo $((x)) runs cmd. Known values are judged like
// the line; a value the judge cannot see makes the command Dangerous (it
// could hide anything), and one that may hold downloaded or decoded data is
// blocked as download-to-interpreter.

// maxEvalDepth bounds values evaluated through values (x=y, y=z …).
const maxEvalDepth = 8

// arith judges an arithmetic expression written in the line.
func (j *judge) arith(x syntax.ArithmExpr) {
	j.arithDepth(x, 0)
}

func (j *judge) arithDepth(x syntax.ArithmExpr, depth int) {
	if x == nil {
		return
	}
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		j.arithDepth(x.X, depth)
		j.arithDepth(x.Y, depth)
	case *syntax.UnaryArithm:
		j.arithDepth(x.X, depth)
	case *syntax.ParenArithm:
		j.arithDepth(x.X, depth)
	case *syntax.Word:
		if x == nil {
			return
		}
		if name := x.Lit(); isName(name) {
			j.varArith(name, depth)
			return
		}
		for _, p := range x.Parts {
			switch p := p.(type) {
			case *syntax.CmdSubst:
				j.cmdSubst(p)
			case *syntax.ProcSubst:
				out := j.nested(p.Stmts, stream{})
				j.substOut[p] = &out
			case *syntax.ParamExp:
				j.paramExp(p)
				if p.Param != nil && !p.Length && !p.Excl {
					j.varArith(p.Param.Value, depth)
				}
			case *syntax.ArithmExp:
				j.arithDepth(p.X, depth)
			case *syntax.DblQuoted:
				j.substs(p)
			case *syntax.SglQuoted:
				// Arithmetic text is read as if double-quoted: a single
				// quote does not stop $(…) there.
				if !p.Dollar {
					j.textSubsts(p.Value)
				}
			}
		}
	}
}

// varArith judges the value of a variable that arithmetic evaluates.
func (j *judge) varArith(name string, depth int) {
	if isDigits(name) || name == "#" || name == "?" || name == "$" || name == "!" {
		return
	}
	v := j.lookup(name)
	j.valueArith(name, v, depth)
}

func (j *judge) valueArith(name string, v *value, depth int) {
	if v.fed {
		j.ctxBlock("arithmetic evaluates $" + name + ", which may hold downloaded or decoded data")
		return
	}
	if v.unknown && !v.num {
		j.unseen("arithmetic evaluates $" + name + ", whose value the judge cannot see (a[$(cmd)] in it would run)")
	}
	if depth >= maxEvalDepth {
		j.ctx.add(Dangerous, "arithmetic evaluates values through values more than 8 levels deep")
		return
	}
	vals := append([]string(nil), v.vals...)
	for _, l := range v.lists {
		vals = append(vals, l...)
	}
	for _, s := range vals {
		j.arithText(s, depth+1)
	}
}

// arithText judges text that bash evaluates as arithmetic.
func (j *judge) arithText(s string, depth int) {
	s = strings.TrimSpace(s)
	if s == "" || isDigits(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")) {
		return
	}
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return
	}
	if hasHole(s) {
		if strings.Contains(s, hole) {
			j.unseen("arithmetic evaluates text the judge cannot see")
		}
		return
	}
	x, err := newParser(syntax.LangBash).Arithmetic(strings.NewReader(s))
	j.withSrc(s, func() {
		if err != nil {
			// Bash may still expand substitutions before it fails.
			j.textSubsts(s)
			return
		}
		j.arithDepth(x, depth)
	})
}

// withSrc runs f with s as the text node positions refer to.
func (j *judge) withSrc(s string, f func()) {
	saveSrc, saveInner := j.src, j.inner
	j.src, j.inner = s, true
	f()
	j.src, j.inner = saveSrc, saveInner
}

// textSubsts judges the substitutions bash would expand in text it
// evaluates (a prompt, a subscript that is not arithmetic).
func (j *judge) textSubsts(s string) {
	if !strings.ContainsAny(s, "$`") {
		return
	}
	w, err := newParser(syntax.LangBash).Document(strings.NewReader(s))
	if err != nil {
		j.unseen("evaluates text that does not parse: " + s)
		return
	}
	j.withSrc(s, func() { j.substs(w) })
}

// nameCtx judges a variable name with an optional subscript given to a
// builtin as a string (unset, test -v, printf -v, read, declare…): bash
// evaluates the subscript.
func (j *judge) nameCtx(s string) {
	if hasHole(s) {
		j.unseen("a variable name computed at run time is evaluated (a[$(cmd)] in it would run)")
		return
	}
	k := strings.IndexByte(s, '[')
	base := s
	if k >= 0 {
		base = s[:k]
	}
	// read, printf -v, mapfile… assign the name: BASH_CMDS[cat] or
	// PATH[0] changes what later commands run as much as an assignment.
	if c, why := nameClass(base, false); c > Safe {
		j.ctx.add(c, why)
	}
	if k < 0 || !strings.HasSuffix(s, "]") {
		return
	}
	sub := s[k+1 : len(s)-1]
	j.arithText(sub, 0)
	j.textSubsts(sub)
}

// promptCtx judges a value bash expands as a prompt (PS4 under set -x,
// ${x@P}): parameter expansion, command substitution and arithmetic.
func (j *judge) promptCtx(name string, v *value) {
	if v.fed {
		j.ctxBlock(name + " is expanded as a prompt and may hold downloaded or decoded data")
		return
	}
	if v.unknown {
		j.unseen(name + " is expanded as a prompt and its value is not known ($(cmd) in it would run)")
	}
	for _, s := range v.vals {
		j.textSubsts(s)
	}
}

// unseen records an evaluation context that evaluates text the judge
// cannot see: the command is Dangerous, and any command may run there.
func (j *judge) unseen(why string) {
	j.ctx.add(Dangerous, why)
	j.runAnything()
}

// ctxBlock blocks the line: an evaluation context runs downloaded or
// decoded data.
func (j *judge) ctxBlock(why string) {
	j.ctx.add(Dangerous, why)
	j.v.block(RuleDownloadToInterpreter, why, j.base)
}

// paramExp judges the evaluation contexts of one parameter expansion: its
// subscript and slice offsets (arithmetic), ${!x} (x's value is a name),
// ${x@P} (x's value is a prompt), and a nameref's target.
func (j *judge) paramExp(p *syntax.ParamExp) {
	if p.Index != nil {
		if w, ok := p.Index.(*syntax.Word); !ok || (w.Lit() != "@" && w.Lit() != "*") {
			j.arith(p.Index)
		}
	}
	if p.Slice != nil {
		j.arith(p.Slice.Offset)
		j.arith(p.Slice.Length)
	}
	if p.Exp != nil {
		j.substs(p.Exp.Word)
	}
	if p.Repl != nil {
		j.substs(p.Repl.Orig)
		j.substs(p.Repl.With)
	}
	if p.NestedParam != nil {
		j.substs(p.NestedParam)
	}
	if p.Param == nil {
		return
	}
	name := p.Param.Value
	v := j.lookup(name)
	if p.Excl && p.Names == 0 && (p.Index == nil) {
		// ${!x}: x's value names the variable expanded, subscript and all.
		if v.fed {
			j.ctxBlock("${!" + name + "} expands a variable named by downloaded or decoded data")
		}
		if v.unknown {
			j.unseen("${!" + name + "} expands a variable whose name the judge cannot see")
		}
		for _, s := range v.vals {
			j.nameCtx(s)
		}
	}
	if v.nameref {
		for _, s := range v.vals {
			j.nameCtx(s)
		}
		if v.unknown {
			j.unseen(name + " is a reference to a variable whose name the judge cannot see")
		}
	}
	if p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) {
		// ${BASH_CMDS[cat]:=/usr/bin/touch} assigns as x=… does.
		if c, why := nameClass(name, false); c > Safe {
			j.ctx.add(c, why)
		}
	}
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && p.Exp.Word.Lit() == "P" {
		j.promptCtx("${"+name+"@P}", v)
	}
}

// arithCmd judges (( … )).
func (j *judge) arithCmd(c *syntax.ArithmCmd) {
	saveCtx := j.ctx
	j.ctx = ctxNote{}
	j.arith(c.X)
	j.arithAssigns(c.X)
	j.addCtx(c, "arithmetic")
	j.ctx = saveCtx
}

// letClause judges let EXPR…: each argument is arithmetic after expansion.
func (j *judge) letClause(c *syntax.LetClause) {
	saveCtx := j.ctx
	j.ctx = ctxNote{}
	for _, x := range c.Exprs {
		j.arith(x)
		if w, ok := x.(*syntax.Word); ok && w.Lit() == "" {
			for _, a := range j.word(w) {
				j.arithText(a.val, 0)
			}
		}
		j.arithAssigns(x)
	}
	j.addCtx(c, "let")
	j.ctx = saveCtx
}

// addCtx records a compound command whose class comes from its contexts.
func (j *judge) addCtx(n syntax.Node, what string) {
	class, why := j.ctx.class, j.ctx.why
	if why == "" {
		why = what + ": its expressions are judged"
	}
	j.add(Simple{Text: j.text(n), Class: class, Why: why, Pos: j.pos(n.Pos())})
}

// arithAssigns records the variables arithmetic assigns (x=…, x++): they
// hold numbers afterwards.
func (j *judge) arithAssigns(x syntax.ArithmExpr) {
	syntax.Walk(x, func(n syntax.Node) bool {
		var target syntax.ArithmExpr
		switch n := n.(type) {
		case *syntax.BinaryArithm:
			if n.Op >= syntax.Assgn && n.Op <= syntax.ShrAssgn {
				target = n.X
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				target = n.X
			}
		case *syntax.CmdSubst:
			return false
		}
		if w, ok := target.(*syntax.Word); ok && isName(w.Lit()) {
			j.assign(w.Lit(), &value{unknown: true, num: true})
		}
		return true
	})
}

// testClause judges [[ … ]]: its words, and the operands of the
// arithmetic operators, which bash evaluates as arithmetic.
func (j *judge) testClause(c *syntax.TestClause) {
	saveCtx := j.ctx
	j.ctx = ctxNote{}
	var walk func(x syntax.TestExpr)
	walk = func(x syntax.TestExpr) {
		switch x := x.(type) {
		case *syntax.BinaryTest:
			walk(x.X)
			walk(x.Y)
			switch x.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				for _, side := range []syntax.TestExpr{x.X, x.Y} {
					if w, ok := side.(*syntax.Word); ok {
						for _, a := range j.word(w) {
							if strings.Contains(a.val, hole) {
								j.unseen("[[ " + x.Op.String() + " ]] evaluates text the judge cannot see as arithmetic")
							}
							if a.fed {
								j.ctxBlock("[[ " + x.Op.String() + " ]] evaluates downloaded or decoded data as arithmetic")
							}
							j.arithText(a.val, 0)
						}
					}
				}
			}
		case *syntax.UnaryTest:
			walk(x.X)
			if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
				if w, ok := x.X.(*syntax.Word); ok {
					for _, a := range j.word(w) {
						j.nameCtx(a.val)
					}
				}
			}
		case *syntax.ParenTest:
			walk(x.X)
		case *syntax.Word:
			j.substs(x)
		}
	}
	walk(c.X)
	j.addCtx(c, "[[ ]]")
	j.ctx = saveCtx
}
