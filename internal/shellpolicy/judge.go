package shellpolicy

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Judge parses cmd as bash and judges every simple command in it. It never
// fails: a command that does not parse, or is too large or too deep to
// judge, comes back blocked with rule parse-error or too-complex. opts may
// be nil.
func Judge(cmd string, opts *Options) *Verdict {
	if opts == nil {
		opts = &Options{}
	}
	v := &Verdict{Commands: []Simple{}}
	if len(cmd) > MaxInputBytes {
		v.block(RuleTooComplex, fmt.Sprintf("command is %d bytes, more than the %d warden judges", len(cmd), MaxInputBytes), Position{})
		v.finish()
		return v
	}
	if strings.IndexByte(cmd, 0) >= 0 {
		v.block(RuleParseError, "command contains a NUL byte", Position{})
		v.finish()
		return v
	}
	j := &judge{
		opts:     opts,
		tables:   newTables(opts),
		masks:    compileMasks(opts.Mask),
		v:        v,
		sc:       newScope(),
		funcs:    map[string]*syntax.FuncDecl{},
		aliases:  map[string]string{},
		substOut: map[syntax.Node]*stream{},
		fedFiles: map[string]bool{},
		lang:     syntax.LangBash,
	}
	j.judgeString(cmd, Position{}, false, syntax.LangBash, stream{})
	if strings.Contains(cmd, "\r\n") {
		// The parser reads CR LF as a line end; bash keeps the CR in the
		// word before it (ls\r, > /dev/null\r is a new file).
		j.add(Simple{Text: cmd, Class: Dangerous, Why: "the line holds a carriage return, which bash reads as part of a word", Pos: posAt(cmd, strings.Index(cmd, "\r\n"))})
	}
	for _, re := range opts.BlockedPatterns {
		if loc := re.FindStringIndex(cmd); loc != nil {
			v.block(RuleUserPattern, fmt.Sprintf("command matches blocked pattern %q", re.String()), posAt(cmd, loc[0]))
			break
		}
	}
	v.finish()
	return v
}

// posAt is the position of byte offset off in s.
func posAt(s string, off int) Position {
	line := 1 + strings.Count(s[:off], "\n")
	col := off - strings.LastIndexByte(s[:off], '\n')
	return Position{Offset: off, Line: line, Col: col}
}

func (v *Verdict) block(rule, reason string, pos Position) {
	if v.Blocked {
		return
	}
	v.Blocked, v.Rule, v.Reason, v.Pos = true, rule, reason, pos
}

func (v *Verdict) finish() {
	for _, s := range v.Commands {
		v.Class = max(v.Class, s.Class)
	}
	if v.Blocked {
		v.Class = Dangerous
	}
}

// stream is what flows into a command's standard input or out of its
// standard output, as far as the rules care.
type stream struct {
	fed  bool    // downloaded or decoded data
	text *string // known text (echo, printf, a static heredoc)
	num  bool    // only a number (seq, wc -l)
}

func (s stream) or(o stream) stream {
	return stream{fed: s.fed || o.fed}
}

// judge is the state of one Judge call.
type judge struct {
	opts   *Options
	tables *tables
	masks  []maskPat
	v      *Verdict

	src   string   // the text being walked (the input, or a re-parsed string)
	base  Position // where src sits in the input (re-parsed strings)
	depth int
	// inner is true while walking a re-parsed string: positions point at base.
	inner   bool
	lang    syntax.LangVariant
	dialect string // the reading Simple.Dialect reports ("" at the top)

	sc        *scope // what each variable may hold now
	funcs     map[string]*syntax.FuncDecl
	aliases   map[string]string
	calling   map[string]bool // functions and aliases being judged at a call site
	wrapDepth int
	lenient   int // >0 while judging strings found in interpreter code
	// cwd is where a cd in the input moved ("" the workspace, "?" unknown).
	cwd string
	// allExport: set -a was seen; every assignment may reach children.
	allExport bool
	// wideGlob: shopt or set changed how globs match (dotglob, nocaseglob,
	// globstar, extglob, GLOBIGNORE); any glob may match a masked name.
	wideGlob bool
	// xtrace: set -x was seen; PS4 is expanded before each command.
	xtrace bool
	// work counts the statements judged.
	work int
	// initials caches what lookup gives names the line has not assigned.
	initials map[string]*value
	// standIn labels the runs of a reading that stands in for another
	// dialect's (see posixPrefix).
	standIn string

	// substOut is what each command substitution prints.
	substOut map[syntax.Node]*stream
	// fedFiles are files the line wrote with downloaded or decoded data.
	fedFiles map[string]bool
	// ctx collects what the words of the command being judged make it
	// (evaluation contexts fed by unknown values).
	ctx ctxNote
}

// ctxNote is the worst thing found in the words of one command.
type ctxNote struct {
	class Class
	why   string
}

func (c *ctxNote) add(cl Class, why string) {
	if cl > c.class || c.why == "" && why != "" {
		c.class, c.why = max(cl, c.class), why
	}
}

func (j *judge) pos(p syntax.Pos) Position {
	if j.inner {
		return j.base
	}
	return posOf(p)
}

// dialectName names a parser variant the way Simple.Dialect reports it.
func dialectName(l syntax.LangVariant) string {
	switch l {
	case syntax.LangPOSIX:
		return "dash"
	case syntax.LangMirBSDKorn:
		return "mksh"
	case syntax.LangZsh:
		return "zsh"
	}
	return "bash"
}

func newParser(lang syntax.LangVariant) *syntax.Parser {
	return syntax.NewParser(syntax.Variant(lang), syntax.KeepComments(false))
}

// judgeString parses src in dialect lang and walks it with in as the
// standard input of its commands. It returns what src prints.
func (j *judge) judgeString(src string, base Position, inner bool, lang syntax.LangVariant, in stream) stream {
	if j.depth > MaxDepth {
		j.v.block(RuleTooComplex, fmt.Sprintf("commands nested more than %d levels deep (sh -c, eval, functions)", MaxDepth), base)
		return stream{}
	}
	f, err := newParser(lang).Parse(strings.NewReader(src), "")
	if err != nil && j.lenient > 0 {
		return stream{} // best-effort strings from inline interpreter code
	}
	if err != nil && lang == syntax.LangPOSIX && inner {
		return j.posixPrefix(src, base, err, in)
	}
	if err != nil {
		msg := err.Error()
		pos := base
		if pe, ok := err.(syntax.ParseError); ok && !inner {
			pos = posOf(pe.Pos)
		}
		if j.v.ParseError == "" && !inner {
			j.v.ParseError = msg
		}
		j.v.block(RuleParseError, "command does not parse as "+dialectName(lang)+": "+msg, pos)
		return stream{}
	}
	saveSrc, saveBase, saveInner, saveLang := j.src, j.base, j.inner, j.lang
	j.src, j.base, j.inner, j.lang = src, base, inner || saveInner, lang
	defer func() { j.src, j.base, j.inner, j.lang = saveSrc, saveBase, saveInner, saveLang }()
	j.collectDecls(f)
	return j.stmts(f.Stmts, in)
}

// posixPrefix judges what dash runs of a string it cannot parse whole:
// dash reads and runs one line at a time, so the lines before the one
// with the syntax error run. The command is dangerous either way.
func (j *judge) posixPrefix(src string, base Position, err error, in stream) stream {
	line := 0
	switch e := err.(type) {
	case syntax.ParseError:
		line = int(e.Pos.Line())
	case syntax.LangError:
		line = int(e.Pos.Line())
	}
	j.add(Simple{Text: src, Class: Dangerous, Why: "dash stops at a syntax error here: " + err.Error(), Pos: base})
	var out stream
	if line > 1 {
		lines := strings.SplitAfterN(src, "\n", line)
		prefix := strings.Join(lines[:line-1], "")
		if _, err := newParser(syntax.LangPOSIX).Parse(strings.NewReader(prefix), ""); err == nil {
			out = j.judgeString(prefix, base, true, syntax.LangPOSIX, in)
		}
	}
	// The parser refuses some text dash reads another way (&> is "&" then
	// ">"): the bash reading of the whole string stands in for what dash
	// makes of it.
	if _, err := newParser(syntax.LangBash).Parse(strings.NewReader(src), ""); err == nil {
		save := j.standIn
		j.standIn = "dash"
		out = out.or(j.judgeString(src, base, true, syntax.LangBash, in))
		j.standIn = save
	}
	return out
}

// collectDecls records functions and aliases before walking, so a call
// written before its definition (in a function body) is still resolved.
func (j *judge) collectDecls(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			if n.Name != nil {
				j.funcs[n.Name.Value] = n
			}
			for _, l := range n.Names {
				j.funcs[l.Value] = n
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				return true
			}
			switch n.Args[0].Lit() {
			case "alias":
				for _, w := range n.Args[1:] {
					if s, ok := j.knownWord(w); ok {
						if k := strings.IndexByte(s, '='); k > 0 {
							j.aliases[s[:k]] = s[k+1:]
						}
					}
				}
			case "shopt":
				j.wideGlob = true
			case "set":
				for _, w := range n.Args[1:] {
					s := w.Lit()
					if strings.HasPrefix(s, "-") && strings.ContainsRune(s, 'a') || s == "allexport" {
						j.allExport = true
					}
					if strings.HasPrefix(s, "-") && strings.ContainsRune(s, 'x') || s == "xtrace" {
						j.xtrace = true
					}
				}
			}
		case *syntax.Assign:
			if n.Name != nil && n.Name.Value == "GLOBIGNORE" {
				j.wideGlob = true
			}
		}
		return true
	})
}

// add records a simple command. It returns its index, or -1 when the
// command limit is reached (the line is then blocked).
func (j *judge) add(s Simple) int {
	if len(j.v.Commands) >= MaxCommands {
		j.v.block(RuleTooComplex, fmt.Sprintf("more than %d simple commands", MaxCommands), s.Pos)
		return -1
	}
	s.Depth = j.depth
	s.Dialect = j.dialect
	j.v.Commands = append(j.v.Commands, s)
	return len(j.v.Commands) - 1
}

// run records one argv the judge resolved, for the differential tests.
func (j *judge) run(argv []arg) {
	if len(j.v.runs) >= MaxCommands {
		return
	}
	s := make([]string, len(argv))
	for k, a := range argv {
		s[k] = a.val
	}
	d := dialectName(j.lang)
	if j.standIn != "" {
		d = j.standIn
	}
	globs := make([]bool, len(argv))
	for k, a := range argv {
		globs[k] = a.glob
	}
	j.v.runs = append(j.v.runs, judgedRun{argv: s, glob: globs, depth: j.depth, dialect: d})
}

// runAnything records that code the judge cannot see runs here.
func (j *judge) runAnything() {
	if len(j.v.runs) < MaxCommands {
		j.v.runs = append(j.v.runs, judgedRun{anything: true, depth: j.depth, dialect: dialectName(j.lang)})
	}
}

// blockAt blocks the command and marks simple i (if any) with the rule.
func (j *judge) blockAt(i int, rule, reason string, pos Position) {
	if i >= 0 && i < len(j.v.Commands) && j.v.Commands[i].Rule == "" {
		j.v.Commands[i].Rule = rule
		j.v.Commands[i].Class = Dangerous
		j.v.Commands[i].Why = reason
	}
	j.v.block(rule, reason, pos)
}

func (j *judge) stmts(ss []*syntax.Stmt, in stream) stream {
	var out stream
	for k, s := range ss {
		o := j.stmt(s, in)
		if k == len(ss)-1 && len(ss) == 1 {
			out = o
		} else {
			out = out.or(o)
		}
	}
	return out
}

// stmt judges one statement with in as its standard input and returns
// what it prints.
func (j *judge) stmt(s *syntax.Stmt, in stream) stream {
	if j.v.Blocked && len(j.v.Commands) >= MaxCommands {
		return stream{}
	}
	// Loops are judged more than once and functions at every call: the
	// work (statements and expansions) is bounded, beyond it the line is
	// refused.
	if j.work++; j.work > maxWork {
		j.v.block(RuleTooComplex, fmt.Sprintf("judging the line takes more than %d statements (nested loops, calls)", maxWork), j.pos(s.Pos()))
		return stream{}
	}
	if s.Background || s.Coprocess {
		saved := j.sc.clone()
		j.stmtFg(s, stream{})
		j.sc = saved
		return stream{}
	}
	return j.stmtFg(s, in)
}

func (j *judge) stmtFg(s *syntax.Stmt, in stream) stream {
	// Substitutions in redirections run first; a downloader there feeds
	// the command's standard input (cmd < <(curl …), cmd <<< "$(curl …)").
	j.wordsCtx(s, func() {
		for _, r := range s.Redirs {
			j.substs(r.Word)
			if r.Hdoc != nil {
				j.substs(r.Hdoc)
				if _, code := heredocSingleQuotes(r.Hdoc); code {
					j.unseen("bash runs the $ or ` in single quotes inside a ${x:-word} of a heredoc, which the judge does not read")
				}
			}
		}
	})
	in = j.stdinOf(s.Redirs, in)
	var out stream
	switch c := s.Cmd.(type) {
	case nil:
		j.redirects(s.Redirs, -1, stream{})
		return stream{}
	case *syntax.CallExpr:
		return j.call(c, s, in)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			out = j.pipeline(c, in)
		case syntax.AndStmt, syntax.OrStmt:
			o1 := j.stmt(c.X, in)
			before := j.sc.clone()
			o2 := j.stmt(c.Y, in)
			j.merge(before)
			out = o1.or(o2)
		default:
			j.stmt(c.X, in)
			out = j.stmt(c.Y, in)
		}
	case *syntax.FuncDecl:
		j.funcDecl(c)
	case *syntax.DeclClause:
		j.decl(c, s)
	case *syntax.Block:
		out = j.stmts(c.Stmts, in)
	case *syntax.Subshell:
		saved := j.sc.clone()
		saveCwd := j.cwd
		out = j.stmts(c.Stmts, in)
		j.sc, j.cwd = saved, saveCwd
	case *syntax.IfClause:
		out = j.ifClause(c, in)
	case *syntax.WhileClause:
		out = j.loop(c, func() stream {
			j.stmts(c.Cond, in)
			return j.stmts(c.Do, in)
		})
		if j.infinite(c) {
			j.forkLoop(c)
		}
	case *syntax.ForClause:
		out = j.forClause(c, in)
	case *syntax.CaseClause:
		out = j.caseClause(c, in)
	case *syntax.ArithmCmd:
		j.arithCmd(c)
	case *syntax.TestClause:
		j.testClause(c)
	case *syntax.LetClause:
		j.run([]arg{{val: "let"}})
		j.letClause(c)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			out = j.stmt(c.Stmt, in)
		}
	case *syntax.CoprocClause:
		saved := j.sc.clone()
		j.stmt(c.Stmt, stream{})
		j.sc = saved
		if c.Name != nil {
			if n := c.Name.Lit(); isName(n) {
				j.setUnknown(n, false)
			}
		}
	default:
		j.v.block(RuleParseError, fmt.Sprintf("unsupported shell construct %T", c), j.pos(c.Pos()))
		return stream{}
	}
	j.redirects(s.Redirs, -1, out)
	return out
}

// wordsCtx judges words that are not a simple command's (redirections,
// case words, for items): what their evaluation contexts find is recorded
// against the construct n.
func (j *judge) wordsCtx(n syntax.Node, f func()) {
	save := j.ctx
	j.ctx = ctxNote{}
	f()
	note := j.ctx
	j.ctx = save
	if note.class > Safe {
		j.add(Simple{Text: j.text(n), Class: note.class, Why: note.why, Pos: j.pos(n.Pos())})
	}
}

// ifClause judges each branch from the state before it and merges them.
func (j *judge) ifClause(c *syntax.IfClause, in stream) stream {
	j.stmts(c.Cond, in)
	before := j.sc.clone()
	out := j.stmts(c.Then, in)
	if c.Else == nil {
		j.merge(before)
		return out
	}
	after := j.sc
	j.sc = before
	if len(c.Else.Cond) == 0 && c.Else.Else == nil {
		out = out.or(j.stmts(c.Else.Then, in))
	} else {
		out = out.or(j.ifClause(c.Else, in))
	}
	j.merge(after)
	return out
}

func (j *judge) caseClause(c *syntax.CaseClause, in stream) stream {
	j.wordsCtx(c, func() { j.substs(c.Word) })
	before := j.sc.clone()
	var out stream
	var states []*scope
	for _, item := range c.Items {
		j.sc = before.clone()
		j.wordsCtx(c, func() {
			for _, p := range item.Patterns {
				j.substs(p)
			}
		})
		out = out.or(j.stmts(item.Stmts, in))
		states = append(states, j.sc)
	}
	j.sc = before
	for _, st := range states {
		j.merge(st)
	}
	return out
}

func (j *judge) forClause(c *syntax.ForClause, in stream) stream {
	switch l := c.Loop.(type) {
	case *syntax.WordIter:
		j.wordsCtx(c, func() {
			for _, w := range l.Items {
				j.substs(w)
			}
		})
		v := &value{}
		if !l.InPos.IsValid() {
			at := j.lookup("@")
			for _, l := range at.lists {
				for _, s := range l {
					v.addVal(s)
				}
			}
			v.unknown, v.fed = at.unknown, at.fed
		} else {
			for _, argv := range j.readings(l.Items) {
				for _, a := range argv {
					v.fed = v.fed || a.fed
					v.globs = v.globs || a.glob
					v.addVal(a.val)
				}
			}
		}
		j.holesToUnknown(v)
		if len(v.vals) == 0 && !v.unknown {
			v.unset = true
		}
		name := l.Name.Value
		return j.loop(c, func() stream {
			j.assign(name, v.clone())
			return j.stmts(c.Do, in)
		})
	case *syntax.CStyleLoop:
		return j.loop(c, func() stream {
			for _, x := range []syntax.ArithmExpr{l.Init, l.Cond, l.Post} {
				if x != nil {
					j.arith(x)
				}
			}
			return j.stmts(c.Do, in)
		})
	}
	return stream{}
}

// maxWork bounds the statements and word expansions one Judge call does.
const maxWork = 100_000

// maxLoopPasses bounds the passes over a loop body before the variables
// it changes are taken as unknown.
const maxLoopPasses = 2

// loop judges a loop body until the variables it assigns stop changing:
// the body may run any number of times, each time with what the last left.
// Commands of earlier passes are dropped; a rule that fired stays fired.
func (j *judge) loop(n syntax.Node, body func() stream) stream {
	start, runs := len(j.v.Commands), len(j.v.runs)
	var out stream
	for pass := 0; ; pass++ {
		before := j.sc.clone()
		out = body()
		j.merge(before)
		if sameScope(before, j.sc) {
			return out
		}
		if pass == maxLoopPasses-1 {
			for k, v := range j.sc.m {
				if w, ok := before.m[k]; !ok || !v.equal(w) {
					v.unknown = true
				}
			}
		}
		if pass >= maxLoopPasses {
			return out
		}
		j.v.Commands = j.v.Commands[:start]
		j.v.runs = j.v.runs[:runs]
	}
}

// pipeline judges each stage with the previous stage's output as its
// standard input; every stage runs in a subshell.
func (j *judge) pipeline(c *syntax.BinaryCmd, in stream) stream {
	var stages []*syntax.Stmt
	var flat func(s *syntax.Stmt)
	flat = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated && !s.Background {
			flat(b.X)
			flat(b.Y)
			return
		}
		stages = append(stages, s)
	}
	flat(c.X)
	flat(c.Y)
	cur := in
	for _, s := range stages {
		saved := j.sc.clone()
		saveCwd := j.cwd
		cur = j.stmt(s, cur)
		j.sc, j.cwd = saved, saveCwd
	}
	return cur
}

// substs judges the command and process substitutions in a node (each in
// a subshell) and the evaluation contexts in its words (arithmetic,
// subscripts, indirection).
func (j *judge) substs(n syntax.Node) {
	if isNil(n) {
		return
	}
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.CmdSubst:
			j.cmdSubst(m)
			return false
		case *syntax.ProcSubst:
			out := j.nested(m.Stmts, stream{})
			j.substOut[m] = &out
			return false
		case *syntax.ArithmExp:
			j.arith(m.X)
			return false
		case *syntax.Word:
			if _, code := dqSingleQuotes(m); code {
				j.unseen("bash runs the $ or ` in single quotes inside a double-quoted ${x:-word}, which the judge does not read")
			}
		case *syntax.ParamExp:
			j.paramExp(m)
			return false
		case *syntax.Assign:
			j.arith(m.Index)
			j.substs(m.Value)
			if m.Array != nil {
				for _, e := range m.Array.Elems {
					j.arith(e.Index)
					j.substs(e.Value)
				}
			}
			return false
		case *syntax.Stmt:
			j.stmt(m, stream{})
			return false
		}
		return true
	})
}

// cmdSubst judges $(…) and records what it prints.
func (j *judge) cmdSubst(cs *syntax.CmdSubst) {
	out := j.nested(cs.Stmts, stream{})
	if out.text != nil {
		t := strings.TrimRight(*out.text, "\n")
		out.text = &t
	}
	j.substOut[cs] = &out
}

// nested judges statements in a subshell (a substitution).
func (j *judge) nested(stmts []*syntax.Stmt, in stream) stream {
	saved := j.sc.clone()
	saveCwd := j.cwd
	out := j.stmts(stmts, in)
	j.sc, j.cwd = saved, saveCwd
	return out
}

// nestedString parses and judges code the line hands to the same shell
// (eval, trap, an alias) in the current dialect and scope.
func (j *judge) nestedString(s string, p syntax.Pos, in stream) stream {
	j.depth++
	out := j.judgeString(s, j.pos(p), true, j.lang, in)
	j.depth--
	return out
}

// shellString judges the command string of a new shell process in each
// dialect it may be read in, with a fresh scope (what the line exported)
// and argv as $0…. When the readings list the same commands, one list is
// kept; otherwise each is labelled with its dialect.
func (j *judge) shellString(s string, p syntax.Pos, langs []syntax.LangVariant, argv []arg, in stream) stream {
	var out stream
	start := len(j.v.Commands)
	var bounds []int
	for _, lang := range langs {
		saved, saveCwd, saveDialect := j.sc, j.cwd, j.dialect
		j.sc = j.childScope()
		if argv != nil {
			j.bindPositional(argv)
		}
		j.dialect = ""
		if len(langs) > 1 {
			j.dialect = dialectName(lang)
		}
		j.depth++
		out = out.or(j.judgeString(s, j.pos(p), true, lang, in))
		j.depth--
		j.sc, j.cwd, j.dialect = saved, saveCwd, saveDialect
		bounds = append(bounds, len(j.v.Commands))
	}
	if len(langs) == 2 && sameCommands(j.v.Commands[start:bounds[0]], j.v.Commands[bounds[0]:bounds[1]]) {
		j.v.Commands = j.v.Commands[:bounds[0]]
		for k := start; k < len(j.v.Commands); k++ {
			j.v.Commands[k].Dialect = j.dialect
		}
	}
	return out
}

func sameCommands(a, b []Simple) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k].Text != b[k].Text || a[k].Class != b[k].Class || a[k].Rule != b[k].Rule || a[k].Why != b[k].Why ||
			strings.Join(a[k].Argv, "\x00") != strings.Join(b[k].Argv, "\x00") {
			return false
		}
	}
	return true
}

// isNil reports a nil node, typed or not.
func isNil(n syntax.Node) bool {
	switch x := n.(type) {
	case nil:
		return true
	case *syntax.Word:
		return x == nil
	case *syntax.Assign:
		return x == nil
	case *syntax.DblQuoted:
		return x == nil
	}
	return false
}
