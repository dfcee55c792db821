package shellpolicy

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// res is the judgement of one argv (after unwrapping wrappers).
type res struct {
	class  Class
	why    string
	rule   string
	reason string
	rpos   Position
	m      meta
	// echoed is the static text an echo/printf writes (for `echo … | sh`).
	echoed *string
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

// callCtx is what a simple command's judgement needs beyond its argv.
type callCtx struct {
	stmt     *syntax.Stmt
	in       stdin
	argsFeed bool // a substitution in its arguments downloads or decodes
}

func (j *judge) call(c *syntax.CallExpr, s *syntax.Stmt, in stdin) {
	start := len(j.v.Commands)
	for _, a := range c.Assigns {
		j.substs(a)
	}
	for _, w := range c.Args {
		j.substs(w)
	}
	argsFeed := j.anyFeeds(start)
	netIn := false
	for _, r := range s.Redirs {
		if isInput(r.Op) && r.Word != nil {
			if t, ok := j.staticWord(r.Word); ok && isNetDev(t) {
				netIn = true // reads from the network: its output is untrusted code
			}
		}
	}
	text := j.text(c)
	if len(c.Args) == 0 {
		class, why := Safe, "sets shell variables"
		for _, a := range c.Assigns {
			if a.Name == nil {
				continue
			}
			if cl, w := j.assignClass(a.Name.Value, a, false); cl > class {
				class, why = cl, w
			}
		}
		i := j.add(Simple{Text: text, Class: class, Why: why, Pos: j.pos(c.Pos())}, meta{})
		if w := j.redirects(s.Redirs, i); w != "" && i >= 0 {
			j.v.Commands[i].Class, j.v.Commands[i].Why = Dangerous, w
		}
		return
	}
	ctx := &callCtx{stmt: s, in: in, argsFeed: argsFeed}
	var best res
	var bestArgv []arg
	for k, argv := range j.resolve(c.Args) {
		r := j.judgeArgv(argv, ctx)
		for _, a := range c.Assigns {
			if a.Name != nil {
				cl, w := j.assignClass(a.Name.Value, a, true)
				r.worse(cl, w)
			}
		}
		if k == 0 || r.rule != "" && best.rule == "" || r.class > best.class && (best.rule == "") == (r.rule == "") {
			best, bestArgv = r, argv
		}
	}
	strs := make([]string, len(bestArgv))
	for k, a := range bestArgv {
		strs[k] = a.val
	}
	best.m.echoed = best.echoed
	if netIn {
		best.m.feeds = true
	}
	i := j.add(Simple{Argv: strs, Text: text, Class: best.class, Why: best.why, Pos: j.pos(c.Pos())}, best.m)
	if w := j.redirects(s.Redirs, i); w != "" && i >= 0 && j.v.Commands[i].Rule == "" {
		j.v.Commands[i].Class, j.v.Commands[i].Why = Dangerous, w
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
}

// interpreters run code; the value says how they take a program inline.
var interpreters = map[string]bool{
	"python": true, "python2": true, "python3": true, "pypy": true, "pypy3": true,
	"perl": true, "ruby": true, "node": true, "nodejs": true, "php": true,
	"lua": true, "luajit": true, "deno": true, "bun": true, "tclsh": true, "wish": true,
	"Rscript": true, "R": true, "irb": true, "jshell": true, "osascript": true, "pwsh": true,
}

var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "posh": true, "yash": true, "fish": true, "csh": true, "tcsh": true,
	"rbash": true, "oksh": true, "loksh": true, "pdksh": true, "ksh93": true, "elvish": true, "xonsh": true, "nu": true,
}

func isInterpreter(base string) bool {
	if interpreters[base] {
		return true
	}
	for _, p := range []string{"python", "pypy", "perl", "ruby", "php", "lua", "node"} {
		if rest, ok := strings.CutPrefix(base, p); ok && rest != "" && strings.Trim(rest, "0123456789.-") == "" {
			return true
		}
	}
	return false
}

// judgeArgv judges one argv: blocklist, wrappers, classification.
func (j *judge) judgeArgv(argv []arg, ctx *callCtx) res {
	var r res
	if len(argv) == 0 {
		r.worse(Safe, "no command")
		return r
	}
	name := argv[0]
	if name.computed || name.glob {
		r.worse(Dangerous, "command name is computed: "+name.val)
		r.m.stdinCode = true
		if ctx.in == stdinFed {
			r.block(RuleDownloadToInterpreter, j.pos(name.pos), "downloaded or decoded data is piped into a command whose name is computed (%s)", name.val)
		}
		return r
	}
	base := name.val
	relative := false
	if strings.ContainsRune(base, '/') {
		relative = !strings.HasPrefix(base, "/")
		base = path.Base(base)
		if base == "." || base == ".." {
			base = ""
		}
	}
	if base == "" || base == "/" {
		r.worse(Dangerous, "empty command name")
		return r
	}
	if relative {
		r.worse(Dangerous, "runs a program by relative path: "+name.val)
	}
	// Aliases and functions defined in the input are judged where they are called.
	if v, ok := j.aliases[base]; ok && !relative && !j.calling["alias "+base] {
		return j.callAlias(base, v, argv, r)
	}
	if f, ok := j.funcs[base]; ok && !relative && !j.calling[base] {
		return j.callFunc(base, f, argv, r)
	}
	if done := j.wrapper(base, argv, ctx, &r); done {
		return r
	}
	j.rules(base, argv, &r)
	if r.rule != "" {
		return r
	}
	class, why := j.classify(base, argv)
	if relative {
		class, why = Dangerous, "runs a program by relative path: "+name.val
	}
	r.worse(class, why)
	j.pipeMeta(base, argv, ctx, &r)
	return r
}

// pipeMeta records whether the command downloads/decodes (feeds) or runs
// code from its standard input, and blocks the second after the first.
func (j *judge) pipeMeta(base string, argv []arg, ctx *callCtx, r *res) {
	if isFeeder(base, argv) {
		r.m.feeds = true
	}
	switch {
	case isInterpreter(base):
		r.m.interpreter = true
		stdinCode, _ := interpStdin(base, argv[1:])
		r.m.stdinCode = stdinCode
		if ctx.argsFeed {
			r.block(RuleDownloadToInterpreter, j.pos(argv[0].pos), "%s runs downloaded or decoded data passed through a substitution", base)
		}
	case base == "source" || base == ".":
		r.m.interpreter = true
		if len(argv) > 1 && isStdinPath(argv[1].val) {
			r.m.stdinCode = true
		}
		if ctx.argsFeed {
			r.block(RuleDownloadToInterpreter, j.pos(argv[0].pos), "%s runs downloaded or decoded data passed through a substitution", base)
		}
	}
	if r.m.stdinCode && ctx.in == stdinFed {
		r.block(RuleDownloadToInterpreter, j.pos(argv[0].pos), "downloaded or decoded data is piped into %s, which runs it", base)
	}
	if base == "echo" || base == "printf" {
		if t, ok := echoText(base, argv[1:]); ok {
			r.echoed = &t
		}
	}
	if code, ok := inlineArg(base, argv[1:]); ok {
		j.lenient++
		j.inlineCode(code, argv[0].pos)
		j.lenient--
	}
}

// inlineArg returns the inline program of an interpreter (-c, -e …) or awk.
func inlineArg(base string, args []arg) (string, bool) {
	switch base {
	case "awk", "gawk", "mawk", "nawk":
		return firstOperand(args, "fvF")
	}
	if !isInterpreter(base) {
		return "", false
	}
	for k, a := range args {
		switch a.val {
		case "-c", "-e", "-E", "--eval", "-p", "--print", "-r":
			if k+1 < len(args) && !args[k+1].computed {
				return args[k+1].val, true
			}
		}
	}
	return "", false
}

func isStdinPath(s string) bool {
	switch s {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return strings.HasPrefix(s, "/dev/fd/") || strings.HasPrefix(s, "/proc/")
}

// interpStdin reports whether an interpreter reads its program from
// standard input, and whether it was given one inline (-c, -e, -m …).
func interpStdin(base string, args []arg) (stdinCode, inline bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.computed {
			return true, false
		}
		v := a.val
		if v == "-" {
			return true, false
		}
		if v == "--" {
			if i+1 < len(args) {
				return isStdinPath(args[i+1].val), false
			}
			return true, false
		}
		if !strings.HasPrefix(v, "-") {
			if base == "deno" || base == "bun" {
				continue // subcommands
			}
			return isStdinPath(v), false
		}
		switch {
		case v == "-e" || v == "-E" || v == "--eval" || v == "-p" || v == "--print" || v == "-r" && strings.HasPrefix(base, "php"):
			return false, true
		case v == "-m" || strings.HasPrefix(base, "python") && strings.HasSuffix(v, "c") && !strings.HasPrefix(v, "--"):
			return false, true
		case strings.HasPrefix(base, "perl") && (strings.ContainsAny(v[1:], "eE")) && !strings.HasPrefix(v, "--"):
			return false, true
		case v == "-c" || v == "--command":
			return false, true
		case v == "-W" || v == "-X" || v == "-I" && !strings.HasPrefix(base, "perl") || v == "--require" || v == "--import" || v == "-f" && strings.HasPrefix(base, "php"):
			if v == "-f" && i+1 < len(args) {
				return isStdinPath(args[i+1].val), false
			}
			i++
		}
	}
	return true, false
}

// echoText is the text echo or printf writes, when it is plain.
func echoText(base string, args []arg) (string, bool) {
	var words []string
	opts := base == "echo"
	if base == "printf" && len(args) == 2 && !args[1].computed && (args[0].val == "%s" || args[0].val == `%s\n`) {
		return args[1].val, true
	}
	for _, a := range args {
		if a.computed {
			return "", false
		}
		if opts && (a.val == "-n" || a.val == "-E") {
			continue
		}
		opts = false
		if strings.ContainsAny(a.val, `\%`) || a.val == "-e" {
			return "", false
		}
		words = append(words, a.val)
	}
	if base == "printf" && len(words) > 1 {
		return "", false
	}
	return strings.Join(words, " "), true
}

// callAlias judges a call of an alias defined in the input as its expansion.
func (j *judge) callAlias(name, value string, argv []arg, r res) res {
	text := value
	for _, a := range argv[1:] {
		text += " " + quoteArg(a)
	}
	j.enter("alias " + name)
	j.nestedString(text, argv[0].pos)
	j.leave("alias " + name)
	r.worse(Safe, "alias "+name+"; its expansion is judged")
	return r
}

// callFunc judges the body of a function defined in the input again, with
// the call's arguments as its positional parameters.
func (j *judge) callFunc(name string, f *syntax.FuncDecl, argv []arg, r res) res {
	saved := j.bindPositional(argv)
	j.enter(name)
	saveBase, saveInner := j.base, j.inner
	j.base, j.inner = j.pos(argv[0].pos), true
	j.depth++
	if j.depth > MaxDepth {
		j.v.block(RuleTooComplex, fmt.Sprintf("function calls nested more than %d levels deep", MaxDepth), j.base)
	} else {
		j.stmt(f.Body, stdinNone)
	}
	j.depth--
	j.base, j.inner = saveBase, saveInner
	j.leave(name)
	j.restorePositional(saved)
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

var positionalNames = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*", "#"}

// bindPositional sets $0… from argv (argv[0] is $0); it returns the old values.
func (j *judge) bindPositional(argv []arg) map[string]*varInfo {
	saved := map[string]*varInfo{}
	for _, n := range positionalNames {
		saved[n] = j.vars[n]
		delete(j.vars, n)
	}
	all := &varInfo{list: true}
	for k, a := range argv {
		vi := &varInfo{vals: []string{a.val}}
		if a.computed {
			vi = &varInfo{unknown: true}
			all.unknown = true
		}
		if k < 10 {
			j.vars[strconv.Itoa(k)] = vi
		}
		if k > 0 && !a.computed {
			all.vals = append(all.vals, a.val)
		}
	}
	if all.unknown {
		all = &varInfo{unknown: true}
	}
	j.vars["@"], j.vars["*"] = all, all
	j.vars["#"] = &varInfo{vals: []string{strconv.Itoa(max(len(argv)-1, 0))}}
	return saved
}

func (j *judge) restorePositional(saved map[string]*varInfo) {
	for n, vi := range saved {
		if vi == nil {
			delete(j.vars, n)
		} else {
			j.vars[n] = vi
		}
	}
}

// nestedString parses and judges a string the command hands to a shell.
func (j *judge) nestedString(s string, p syntax.Pos) {
	j.depth++
	saveSubst := j.subst
	j.subst = 0
	j.judgeString(s, j.pos(p), true)
	j.subst = saveSubst
	j.depth--
}

// quoteArg writes a resolved word back as shell text.
func quoteArg(a arg) string {
	if a.computed {
		return a.val
	}
	return "'" + strings.ReplaceAll(a.val, "'", `'\''`) + "'"
}

// harmlessEnv are variables a command may be given without changing what it runs.
var harmlessEnv = map[string]bool{
	"LANG": true, "LANGUAGE": true, "TZ": true, "NO_COLOR": true, "CLICOLOR": true,
	"CLICOLOR_FORCE": true, "FORCE_COLOR": true, "COLUMNS": true, "LINES": true, "TERM": true,
	"CI": true, "GOFLAGS": false, "CGO_ENABLED": true, "GOOS": true, "GOARCH": true, "RUST_BACKTRACE": true,
	"PYTHONDONTWRITEBYTECODE": true, "PYTHONUNBUFFERED": true, "NODE_ENV": true, "DEBUG": true, "VERBOSE": true,
}

// shellSensitive are shell variables that change how later commands run.
var shellSensitive = map[string]bool{
	"PATH": true, "IFS": true, "BASH_ENV": true, "ENV": true, "PS4": true, "PROMPT_COMMAND": true,
	"SHELLOPTS": true, "BASHOPTS": true, "GLOBIGNORE": true, "CDPATH": true, "HOME": true,
	"BASH_LOADABLES_PATH": true, "EXECIGNORE": true, "FPATH": true, "HISTFILE": true, "BASH_XTRACEFD": true,
	"PS0": true, "PS1": true, "PS2": true, "PS3": true,
}

// assignClass judges NAME=value. exported is true when the variable reaches
// a command's environment (a prefix assignment, export, env NAME=…).
func (j *judge) assignClass(name string, a *syntax.Assign, exported bool) (Class, string) {
	if a != nil && a.Value != nil {
		if v, ok := j.staticWord(a.Value); ok && (strings.Contains(v, "$(") || strings.Contains(v, "`")) {
			return Dangerous, fmt.Sprintf("assigns shell code to %s (it can run when expanded)", name)
		}
	}
	if harmlessEnv[name] || strings.HasPrefix(name, "LC_") {
		return Safe, "sets " + name
	}
	if exported {
		return Dangerous, fmt.Sprintf("sets environment variable %s for the command (it can change what the command runs)", name)
	}
	if shellSensitive[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "BASH_FUNC_") {
		return Dangerous, fmt.Sprintf("sets %s, which changes how the shell runs commands", name)
	}
	return Safe, "sets shell variable " + name
}
