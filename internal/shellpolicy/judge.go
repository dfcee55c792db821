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
		opts:    opts,
		tables:  newTables(opts),
		v:       v,
		vars:    map[string]*varInfo{},
		funcs:   map[string]*syntax.FuncDecl{},
		aliases: map[string]string{},
	}
	j.judgeString(cmd, Position{}, false)
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

// judge is the state of one Judge call.
type judge struct {
	opts   *Options
	tables *tables
	v      *Verdict

	src   string   // the text being walked (the input, or a re-parsed string)
	base  Position // where src sits in the input (re-parsed strings)
	depth int
	// inner is true while walking a re-parsed string: positions point at base.
	inner bool

	vars      map[string]*varInfo
	funcs     map[string]*syntax.FuncDecl
	aliases   map[string]string
	calling   map[string]bool // functions being judged at a call site
	wrapDepth int
	lenient   int // >0 while judging strings found in interpreter code
	// cwd is where a cd in the input moved ("" the workspace, "?" unknown).
	cwd string

	// meta runs parallel to v.Commands.
	meta []meta
	// subst counts enclosing command/process substitutions of the current
	// walk, relative to the current pipeline stage.
	subst int
}

// meta is what a pipeline needs to know about a simple command.
type meta struct {
	feeds       bool // a downloader or decoder: its output is untrusted code
	stdinCode   bool // runs a program read from its standard input
	subst       int
	interpreter bool
	shell       bool    // a shell reading its commands from standard input
	echoed      *string // the plain text an echo/printf writes
}

func (j *judge) pos(p syntax.Pos) Position {
	if j.inner {
		return j.base
	}
	return posOf(p)
}

// judgeString parses src and walks it. stdinCode reports whether some
// command of src runs code from the standard input src itself is given.
func (j *judge) judgeString(src string, base Position, inner bool) {
	if j.depth > MaxDepth {
		j.v.block(RuleTooComplex, fmt.Sprintf("commands nested more than %d levels deep (sh -c, eval, functions)", MaxDepth), base)
		return
	}
	p := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(false))
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil && j.lenient > 0 {
		return // best-effort strings from inline interpreter code
	}
	if err != nil {
		msg := err.Error()
		if pe, ok := err.(syntax.ParseError); ok {
			msg = pe.Error()
		}
		pos := base
		if !inner {
			if pe, ok := err.(syntax.ParseError); ok {
				pos = posOf(pe.Pos)
			}
		}
		if j.v.ParseError == "" {
			j.v.ParseError = msg
		}
		j.v.block(RuleParseError, "command does not parse as bash: "+msg, pos)
		return
	}
	saveSrc, saveBase, saveInner := j.src, j.base, j.inner
	j.src, j.base, j.inner = src, base, inner || saveInner
	defer func() { j.src, j.base, j.inner = saveSrc, saveBase, saveInner }()
	j.collectVars(f)
	j.collectDecls(f)
	for _, s := range f.Stmts {
		j.stmt(s, stdinNone)
	}
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
			if len(n.Args) > 1 && n.Args[0].Lit() == "alias" {
				for _, w := range n.Args[1:] {
					if s, ok := j.staticWord(w); ok {
						if k := strings.IndexByte(s, '='); k > 0 {
							j.aliases[s[:k]] = s[k+1:]
						}
					}
				}
			}
		}
		return true
	})
}

// stdin describes what a command's standard input is, as far as a rule cares.
type stdin int

const (
	stdinNone stdin = iota
	stdinFed        // fed by a downloader or decoder
)

func (j *judge) add(s Simple, m meta) int {
	if len(j.v.Commands) >= MaxCommands {
		j.v.block(RuleTooComplex, fmt.Sprintf("more than %d simple commands", MaxCommands), s.Pos)
		return -1
	}
	s.Depth = j.depth
	m.subst = j.subst
	j.v.Commands = append(j.v.Commands, s)
	j.meta = append(j.meta, m)
	return len(j.v.Commands) - 1
}

// blockAt blocks the command and marks simple i (if any) with the rule.
func (j *judge) blockAt(i int, rule, reason string, pos Position) {
	if i >= 0 && i < len(j.v.Commands) {
		if j.v.Commands[i].Rule == "" {
			j.v.Commands[i].Rule = rule
			j.v.Commands[i].Class = Dangerous
			j.v.Commands[i].Why = reason
		}
	}
	j.v.block(rule, reason, pos)
}

func (j *judge) stmt(s *syntax.Stmt, in stdin) {
	if j.v.Blocked && len(j.v.Commands) >= MaxCommands {
		return
	}
	// Substitutions in redirections run first; a downloader there feeds
	// the command's standard input (cmd < <(curl …), cmd <<< "$(curl …)").
	for _, r := range s.Redirs {
		start := len(j.v.Commands)
		j.substs(r.Word)
		if r.Hdoc != nil {
			j.substs(r.Hdoc)
		}
		if isInput(r.Op) && j.anyFeeds(start) {
			in = stdinFed
		}
	}
	if s.Cmd == nil {
		j.redirects(s.Redirs, -1)
		return
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		j.call(c, s, in)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			j.pipeline(c, in)
		} else {
			j.stmt(c.X, in)
			j.stmt(c.Y, in)
		}
		j.redirects(s.Redirs, -1)
	case *syntax.FuncDecl:
		j.funcDecl(c)
		j.redirects(s.Redirs, -1)
	case *syntax.DeclClause:
		j.decl(c)
		j.redirects(s.Redirs, -1)
	case *syntax.Block, *syntax.Subshell, *syntax.IfClause, *syntax.WhileClause,
		*syntax.ForClause, *syntax.CaseClause, *syntax.ArithmCmd, *syntax.TestClause,
		*syntax.LetClause, *syntax.TimeClause, *syntax.CoprocClause, *syntax.TestDecl:
		j.compound(c, in)
		j.redirects(s.Redirs, -1)
	default:
		j.v.block(RuleParseError, fmt.Sprintf("unsupported shell construct %T", c), j.pos(c.Pos()))
	}
}

// compound walks a compound command: every statement in it, wherever it is
// (bodies, conditions, words, arithmetic, test expressions).
func (j *judge) compound(n syntax.Node, in stdin) {
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.Stmt:
			j.stmt(m, in)
			return false
		case *syntax.CmdSubst:
			j.nested(m.Stmts)
			return false
		case *syntax.ProcSubst:
			j.nested(m.Stmts)
			return false
		}
		return true
	})
}

// substs walks the command and process substitutions inside a node.
func (j *judge) substs(n syntax.Node) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.CmdSubst:
			j.nested(m.Stmts)
			return false
		case *syntax.ProcSubst:
			j.nested(m.Stmts)
			return false
		case *syntax.Stmt:
			j.stmt(m, stdinNone)
			return false
		}
		return true
	})
}

func (j *judge) nested(stmts []*syntax.Stmt) {
	j.subst++
	for _, s := range stmts {
		j.stmt(s, stdinNone)
	}
	j.subst--
}

func (j *judge) anyFeeds(start int) bool {
	for _, m := range j.meta[start:] {
		if m.feeds {
			return true
		}
	}
	return false
}

// pipeline judges each stage; a stage that runs code from its standard
// input after a stage that downloads or decodes is blocked.
func (j *judge) pipeline(c *syntax.BinaryCmd, in stdin) {
	var stages []*syntax.Stmt
	var flat func(s *syntax.Stmt)
	flat = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated {
			flat(b.X)
			flat(b.Y)
			return
		}
		stages = append(stages, s)
	}
	flat(c.X)
	flat(c.Y)
	fed := in == stdinFed
	var echoed *string // what the previous stage echoes, when plain text
	for k, s := range stages {
		start := len(j.v.Commands)
		saveSubst := j.subst
		j.subst = 0
		stageIn := stdinNone
		if fed && k > 0 {
			stageIn = stdinFed
		}
		if k == 0 {
			stageIn = in
		}
		j.stmt(s, stageIn)
		j.subst = saveSubst
		if echoed != nil {
			for _, m := range j.meta[start:] {
				if m.shell && m.subst == 0 {
					j.nestedString(*echoed, s.Pos())
					break
				}
			}
		}
		echoed = nil
		for _, m := range j.meta[start:] {
			if m.subst == 0 && m.echoed != nil {
				echoed = m.echoed
			}
		}
		if j.anyFeeds(start) {
			fed = true
		}
	}
}

func isInput(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.RdrInOut:
		return true
	}
	return false
}

func isOutput(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
		return true
	}
	return false
}

// redirects applies the redirection rules. i is the simple command the
// redirections belong to, or -1 for a compound command (a pseudo command
// is recorded when they write a file). It returns why the redirections
// make the command dangerous ("" when they do not).
func (j *judge) redirects(rs []*syntax.Redirect, i int) string {
	var why string
	for _, r := range rs {
		if !isOutput(r.Op) {
			continue
		}
		target, ok := j.staticWord(r.Word)
		if r.Op == syntax.DplOut && ok && (isFD(target) || target == "-") {
			continue
		}
		if !ok {
			if why == "" {
				why = "writes to a file whose name is computed: " + j.text(r.Word)
			}
			continue
		}
		if dev, harmless := deviceTarget(target); dev && !harmless {
			j.blockAt(i, RuleRedirectToDevice, fmt.Sprintf("redirection writes to device %s", target), j.pos(r.Word.Pos()))
			continue
		} else if harmless {
			continue
		}
		if why == "" {
			why = "redirection writes to file " + target
		}
	}
	if why != "" && i < 0 {
		j.add(Simple{Text: j.textRedirs(rs), Class: Dangerous, Why: why, Pos: j.pos(rs[0].Pos())}, meta{})
	}
	return why
}

func (j *judge) textRedirs(rs []*syntax.Redirect) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, j.text(r))
	}
	return strings.Join(parts, " ")
}

func isFD(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// funcDecl records the function and looks for a fork bomb: a function that
// calls itself in a pipeline or in the background.
func (j *judge) funcDecl(f *syntax.FuncDecl) {
	names := map[string]bool{}
	if f.Name != nil {
		names[f.Name.Value] = true
	}
	for _, l := range f.Names {
		names[l.Value] = true
	}
	var bomb syntax.Node
	var walk func(n syntax.Node, parallel bool)
	walk = func(n syntax.Node, parallel bool) {
		syntax.Walk(n, func(m syntax.Node) bool {
			if bomb != nil {
				return false
			}
			switch m := m.(type) {
			case *syntax.Stmt:
				if m != n && (m.Background || m.Coprocess) {
					walk(m, true)
					return false
				}
			case *syntax.BinaryCmd:
				if m.Op == syntax.Pipe || m.Op == syntax.PipeAll {
					walk(m.X, true)
					walk(m.Y, true)
					return false
				}
			case *syntax.CallExpr:
				if parallel && len(m.Args) > 0 && names[m.Args[0].Lit()] {
					bomb = m
					return false
				}
			}
			return true
		})
	}
	walk(f.Body, f.Body.Background)
	i := j.add(Simple{Argv: []string{"function", j.funcName(f)}, Text: j.text(f), Class: Safe, Why: "defines a function; its body is judged", Pos: j.pos(f.Pos())}, meta{})
	if bomb != nil {
		j.blockAt(i, RuleForkBomb, fmt.Sprintf("function %s calls itself in a pipeline or in the background (fork bomb)", j.funcName(f)), j.pos(bomb.Pos()))
	}
	j.stmt(f.Body, stdinNone)
}

func (j *judge) funcName(f *syntax.FuncDecl) string {
	if f.Name != nil {
		return f.Name.Value
	}
	if len(f.Names) > 0 {
		return f.Names[0].Value
	}
	return "(anonymous)"
}

// decl judges declare/local/export/readonly/typeset/nameref.
func (j *judge) decl(d *syntax.DeclClause) {
	for _, a := range d.Args {
		j.substs(a)
	}
	class, why := Safe, "declares shell variables"
	exported := d.Variant.Value == "export"
	for _, a := range d.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			flag, ok := j.staticWord(a.Value)
			if !ok {
				class, why = Dangerous, "declaration with computed arguments: "+j.text(a)
				continue
			}
			if strings.HasPrefix(flag, "-") && strings.ContainsRune(flag, 'x') {
				exported = true
			}
			if !strings.HasPrefix(flag, "-") && !strings.HasPrefix(flag, "+") {
				// a name or name=value from a literal word
				if k := strings.IndexByte(flag, '='); k > 0 {
					if c, w := j.assignClass(flag[:k], nil, true); c > class {
						class, why = c, w
					}
				}
			}
		}
	}
	for _, a := range d.Args {
		if a.Name == nil {
			continue
		}
		if c, w := j.assignClass(a.Name.Value, a, exported || d.Variant.Value == "nameref"); c > class {
			class, why = c, w
		}
	}
	argv := []string{d.Variant.Value}
	for _, a := range d.Args {
		argv = append(argv, j.text(a))
	}
	j.add(Simple{Argv: argv, Text: j.text(d), Class: class, Why: why, Pos: j.pos(d.Pos())}, meta{})
}
