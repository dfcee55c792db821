package shellpolicy

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// res is the judgement of one argv (after unwrapping wrappers).
type res struct {
	class  Class
	why    string
	rule   string
	reason string
	rpos   Position
	sink   bool    // runs code it reads from its standard input
	feeds  bool    // prints downloaded or decoded data
	text   *string // prints this known text
	num    bool    // prints only numbers
	quiet  bool    // does not pass its standard input through to its output
	pass   bool    // copies its standard input to its output (cat, tee)
	cwd    *string // where a cd moved
	// unl is the class words outside a safe spec give (kept apart so the
	// dev table can still call the command dev).
	unl    Class
	unlWhy string
}

func (r *res) unlisted(c Class, why string) {
	if c > r.unl || r.unlWhy == "" {
		r.unl, r.unlWhy = max(c, r.unl), why
	}
}

func (r *res) worse(c Class, why string) {
	if c > r.class || r.why == "" {
		r.class, r.why = max(c, r.class), why
	}
}

func (r *res) block(rule string, pos Position, format string, a ...any) {
	if r.rule != "" {
		return
	}
	r.rule, r.reason, r.rpos = rule, fmt.Sprintf(format, a...), pos
	r.class = Dangerous
}

// merge folds an inner judgement (a wrapped command) into r.
func (r *res) merge(o res) {
	if o.rule != "" && r.rule == "" {
		r.rule, r.reason, r.rpos = o.rule, o.reason, o.rpos
	}
	if o.class > r.class || r.why == "" {
		r.class, r.why = max(o.class, r.class), o.why
	}
	if r.rule != "" {
		r.class = Dangerous
	}
	r.sink = r.sink || o.sink
	r.feeds = r.feeds || o.feeds
}

// callCtx is what a simple command's judgement needs beyond its argv.
type callCtx struct {
	stmt *syntax.Stmt
	in   stream
	// noFuncs: reached through command or builtin, which skip functions
	// and aliases.
	noFuncs bool
}

func (j *judge) call(c *syntax.CallExpr, s *syntax.Stmt, in stream) stream {
	saveCtx := j.ctx
	defer func() { j.ctx = saveCtx }()
	j.ctx = ctxNote{}
	// bash expands the command's words first, then each assignment's value
	// in order (a=1 b=$a sees a=1): substitutions and contexts are judged
	// in that order, each assignment's just before it applies.
	for _, w := range c.Args {
		j.substs(w)
	}
	text := j.text(c)
	for _, a := range c.Assigns {
		if a.Name != nil && !isName(a.Name.Value) {
			// bash reads 0=x as a command named "0=x", not an assignment.
			j.runAnything()
			j.add(Simple{Text: text, Class: Dangerous, Why: "bash runs " + shown(j.text(a)) + " as a command: " + a.Name.Value + " is not a variable name", Pos: j.pos(c.Pos())})
			return stream{}
		}
	}
	if len(c.Args) == 0 {
		note := j.ctx
		class, why := note.class, note.why
		if class == Safe {
			why = "sets shell variables"
		}
		for _, a := range c.Assigns {
			j.substs(a)
			if cl, w := j.assignClass(a, false); cl > class {
				class, why = cl, w
			}
			j.doAssign(a, false)
		}
		if j.ctx.class > class {
			class, why = j.ctx.class, j.ctx.why
		}
		i := j.add(Simple{Text: text, Class: class, Why: why, Pos: j.pos(c.Pos())})
		if cl, w := j.redirects(s.Redirs, i, stream{}); cl > class && i >= 0 && j.v.Commands[i].Rule == "" {
			j.v.Commands[i].Class, j.v.Commands[i].Why = cl, w
		}
		return stream{}
	}
	// The words expand before the prefix assignments apply (x=/ rm -rf $x
	// expands $x as it was); the assignments hold for this command only,
	// exported to it.
	rs := j.readings(c.Args)
	prefix := map[string]*value{}
	var aclass Class
	var awhy string
	for _, a := range c.Assigns {
		j.substs(a)
		if cl, w := j.assignClass(a, true); cl > aclass {
			aclass, awhy = cl, w
		}
		if a.Name != nil {
			if _, ok := prefix[a.Name.Value]; !ok {
				prefix[a.Name.Value] = j.sc.m[a.Name.Value]
			}
		}
		j.doAssign(a, true)
	}
	ctx := &callCtx{stmt: s, in: in}
	var best res
	var bestArgv []arg
	var cwds []string
	// Each reading is judged from the same state; what they leave (eval,
	// source and function calls assign) is merged.
	before := j.sc.clone()
	var after []*scope
	for k, argv := range rs {
		j.sc = before.clone()
		j.run(argv)
		r := j.judgeArgv(argv, ctx)
		if k == 0 || r.rule != "" && best.rule == "" || r.class > best.class && (best.rule == "") == (r.rule == "") {
			best, bestArgv = r, argv
		}
		if r.cwd != nil {
			cwds = append(cwds, *r.cwd)
		}
		after = append(after, j.sc)
	}
	if len(after) > 0 {
		j.sc = after[0]
		for _, s := range after[1:] {
			j.merge(s)
		}
	}
	for name, v := range prefix {
		if v == nil {
			delete(j.sc.m, name)
		} else {
			j.sc.m[name] = v
		}
	}
	note := j.ctx
	best.worse(aclass, awhy)
	best.worse(note.class, note.why)
	strs := make([]string, len(bestArgv))
	for k, a := range bestArgv {
		strs[k] = a.val
	}
	i := j.add(Simple{Argv: strs, Text: text, Class: best.class, Why: best.why, Pos: j.pos(c.Pos())})
	out := j.outputOf(best, in)
	for k, a := range bestArgv {
		if k > 0 && a.fed && !best.quiet && out.text == nil {
			out.fed = true // it reads a download named in its arguments (cat <(curl …))
		}
	}
	if cl, w := j.redirects(s.Redirs, i, out); cl > best.class && i >= 0 && j.v.Commands[i].Rule == "" {
		j.v.Commands[i].Class, j.v.Commands[i].Why = cl, w
	}
	if best.rule != "" {
		j.blockAt(i, best.rule, best.reason, best.rpos)
	}
	for _, re := range j.opts.BlockedPatterns {
		joined := strings.Join(strs, " ")
		if re.MatchString(text) || re.MatchString(joined) {
			j.blockAt(i, RuleUserPattern, fmt.Sprintf("command %q matches blocked pattern %q", joined, re.String()), j.pos(c.Pos()))
		}
	}
	if len(cwds) > 0 {
		j.cwd = cwds[0]
		for _, c := range cwds[1:] {
			if c != j.cwd {
				j.cwd = "?"
			}
		}
	}
	if cl, w := j.effects(c.Args, bestArgv, in); cl > Safe && i >= 0 && cl > j.v.Commands[i].Class && j.v.Commands[i].Rule == "" {
		j.v.Commands[i].Class, j.v.Commands[i].Why = cl, w
	}
	return out
}

// outputOf is what a judged command prints given its standard input.
func (j *judge) outputOf(r res, in stream) stream {
	switch {
	case r.text != nil:
		return stream{text: r.text}
	case r.pass:
		return in
	case r.feeds:
		return stream{fed: true}
	case r.num:
		return stream{num: true}
	case r.quiet:
		return stream{}
	}
	return stream{fed: in.fed}
}

// judgeArgv judges one argv: blocklist, wrappers, classification.
func (j *judge) judgeArgv(argv []arg, ctx *callCtx) res {
	var r res
	if len(argv) == 0 {
		r.worse(Safe, "no command")
		return r
	}
	name := argv[0]
	p := j.pos(name.pos)
	anyFed := false
	for _, a := range argv {
		anyFed = anyFed || a.fed
	}
	if name.hasHole() || name.glob {
		r.worse(Dangerous, "command name is computed: "+name.val)
		r.sink = true
		// Whatever the name turns out to be runs, with these arguments:
		// bash -c id runs id.
		j.runAnything()
		if ctx.in.fed || anyFed {
			r.block(RuleDownloadToInterpreter, p, "downloaded or decoded data reaches a command whose name is computed (%s)", name.val)
			return r
		}
		j.possibleNames(name, argv, ctx, &r)
		return r
	}
	if name.subst {
		r.worse(Dangerous, "command name comes from a command substitution: "+shown(name.val))
	}
	if strings.Contains(name.val, "/dev/fd/63") {
		// Running a process substitution's pipe as a program: what it is
		// depends on how bash splits the word (<(a)>(b)).
		r.worse(Dangerous, "runs a process substitution as a program")
		j.runAnything()
	}
	base := name.val
	relative := false
	if strings.ContainsRune(base, '/') {
		relative = !strings.HasPrefix(base, "/")
		if j.fedFiles[cleanRel(base)] {
			r.block(RuleDownloadToInterpreter, p, "runs %s, which the line wrote from downloaded or decoded data", base)
			return r
		}
		base = path.Base(base)
		if base == "." || base == ".." {
			base = ""
		}
	}
	if base == "" || base == "/" {
		r.worse(Dangerous, "empty command name")
		return r
	}
	if !utf8.ValidString(base) || strings.IndexFunc(base, func(c rune) bool { return c > 0x7e || c < 0x21 }) >= 0 {
		r.worse(Dangerous, "command name with characters outside printable ASCII: "+fmt.Sprintf("%q", base))
		return r
	}
	if !relative && !ctx.noFuncs {
		if v, ok := j.aliases[base]; ok && !j.calling["alias "+base] {
			j.callAlias(base, v, argv, ctx.in)
		}
		if f, ok := j.funcs[base]; ok && !j.calling[base] {
			return j.callFunc(base, f, argv, ctx, r)
		}
	}
	if done := j.wrapper(base, argv, ctx, &r); done {
		return r
	}
	j.rules(base, argv, ctx, &r)
	if r.rule != "" {
		return r
	}
	j.classify(base, argv, ctx, &r)
	if relative {
		r.worse(Dangerous, "runs a program by relative path: "+name.val)
	}
	j.streamMeta(base, argv, ctx, &r)
	return r
}

// possibleNames applies the blocklist to every rule's command a name with
// unknown parts could be (su$x, r*): the hole stands for any text.
func (j *judge) possibleNames(name arg, argv []arg, ctx *callCtx, r *res) {
	pat := strings.ReplaceAll(name.val, hole, "*")
	pat = strings.ReplaceAll(pat, numHole, "*")
	if i := strings.LastIndexByte(pat, '/'); i >= 0 {
		pat = pat[i+1:]
	}
	if strings.Trim(pat, "*") == "" {
		return // no letter known: any command could be meant
	}
	g := parseComp(pat, !name.glob && !strings.Contains(name.val, hole) && !strings.Contains(name.val, numHole))
	if name.glob || hasHole(name.val) {
		g = parseComp(pat, false)
	}
	for _, cand := range ruleNames() {
		if compsMeet(g, parseComp(cand, true), true) {
			inner := append([]arg{{val: cand, pos: name.pos}}, argv[1:]...)
			if r2 := j.blockedAs(cand, inner, ctx); r2.rule != "" {
				r.block(r2.rule, r2.rpos, "%s could be %s: %s", name.val, cand, r2.reason)
				return
			}
		}
	}
}

// blockedAs judges argv as program prog by the blocklist alone (its
// wrapper rules and its own), for a name that may turn out to be prog.
func (j *judge) blockedAs(prog string, argv []arg, ctx *callCtx) res {
	var r res
	if privileged[prog] || wrapperBlocked(prog) {
		j.wrapper(prog, argv, ctx, &r)
	}
	j.rules(prog, argv, ctx, &r)
	return r
}

// callAlias judges the expansion of an alias defined in the line. Bash
// expands aliases in a non-interactive shell only after shopt -s
// expand_aliases, and only on later lines, so the command is judged both
// as the alias and as itself.
func (j *judge) callAlias(name, value string, argv []arg, in stream) {
	text := value
	for _, a := range argv[1:] {
		text += " " + quoteArg(a)
	}
	j.enter("alias " + name)
	j.nestedString(text, argv[0].pos, in)
	j.leave("alias " + name)
}

// callFunc judges the body of a function defined in the input again, with
// the call's arguments as its positional parameters. The body runs in the
// caller's shell: what it assigns may persist (merged with the state before
// the call, since local variables and early returns are not followed).
func (j *judge) callFunc(name string, f *syntax.FuncDecl, argv []arg, ctx *callCtx, r res) res {
	before := j.sc.clone()
	saveCwd := j.cwd
	j.bindPositional(argv)
	j.enter(name)
	saveBase, saveInner := j.base, j.inner
	j.base, j.inner = j.pos(argv[0].pos), true
	j.depth++
	if j.depth > MaxDepth {
		j.v.block(RuleTooComplex, fmt.Sprintf("function calls nested more than %d levels deep", MaxDepth), j.base)
	} else {
		out := j.stmt(f.Body, ctx.in)
		if out.fed {
			r.feeds = true
		}
	}
	j.depth--
	j.base, j.inner = saveBase, saveInner
	j.leave(name)
	for _, n := range positionalNames {
		delete(j.sc.m, n)
		if v, ok := before.m[n]; ok {
			j.sc.m[n] = v
		}
	}
	j.merge(before)
	if j.cwd != saveCwd {
		j.cwd = "?"
	}
	r.worse(Safe, "calls function "+name+"; its body is judged with these arguments")
	return r
}

func (j *judge) enter(name string) {
	if j.calling == nil {
		j.calling = map[string]bool{}
	}
	j.calling[name] = true
}

func (j *judge) leave(name string) { delete(j.calling, name) }

// quoteArg writes a resolved word back as shell text.
func quoteArg(a arg) string {
	return "'" + strings.ReplaceAll(a.val, "'", `'\''`) + "'"
}

// harmlessEnv are variables a command may be given without changing what it runs.
var harmlessEnv = map[string]bool{
	"LANG": true, "LANGUAGE": true, "TZ": true, "NO_COLOR": true, "CLICOLOR": true,
	"CLICOLOR_FORCE": true, "FORCE_COLOR": true, "COLUMNS": true, "LINES": true, "TERM": true,
	"CI": true, "CGO_ENABLED": true, "GOOS": true, "GOARCH": true, "RUST_BACKTRACE": true,
	"PYTHONDONTWRITEBYTECODE": true, "PYTHONUNBUFFERED": true, "NODE_ENV": true, "DEBUG": true, "VERBOSE": true,
}

// shellSensitive are shell variables that change how later commands run.
var shellSensitive = map[string]bool{
	"PATH": true, "IFS": true, "BASH_ENV": true, "ENV": true,
	"SHELLOPTS": true, "BASHOPTS": true, "GLOBIGNORE": true, "CDPATH": true, "HOME": true,
	"BASH_LOADABLES_PATH": true, "EXECIGNORE": true, "FPATH": true, "HISTFILE": true, "BASH_XTRACEFD": true,
	"BASH_COMPAT": true, "POSIXLY_CORRECT": true,
	"TMOUT": true, "INPUTRC": true, "PWD": true, "OLDPWD": true,
	// bash's command hash table and aliases: BASH_CMDS[cat]=/usr/bin/touch
	// makes cat run touch.
	"BASH_CMDS": true, "BASH_ALIASES": true,
}
