package shellpolicy

import (
	"strings"
)

// privileged commands run something as another user, or hand it to the
// service manager outside warden's control: blocked outright.
var privileged = map[string]bool{
	"sudo": true, "sudoedit": true, "su": true, "doas": true, "pkexec": true, "run0": true,
	"runuser": true, "sg": true, "newgrp": true, "ksu": true, "calife": true, "setpriv": true,
	"systemd-run": true, "gosu": true, "su-exec": true, "setuidgid": true, "s6-setuidgid": true,
	"chpst": true, "capsh": true, "systemd-nspawn": true,
}

// optSpec describes a wrapper's options, GNU getopt style.
type optSpec struct {
	withArg    string          // short options that take an argument
	long       map[string]bool // long options that take an argument (as a separate word)
	positional int             // operands before the wrapped command
}

// skipOpts returns the index in args of the wrapped command (-1: none),
// the options seen, and ok=false when an option word is computed.
func skipOpts(args []arg, sp optSpec) (idx int, opts []string, ok bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.hasHole() {
			return -1, opts, false
		}
		v := a.val
		if v == "--" {
			i++
			break
		}
		if strings.HasPrefix(v, "--") {
			name := v[2:]
			if k := strings.IndexByte(name, '='); k >= 0 {
				opts = append(opts, "--"+name[:k])
			} else {
				opts = append(opts, v)
				if sp.long[name] {
					i++
				}
			}
			i++
			continue
		}
		if len(v) > 1 && v[0] == '-' {
			for c := 1; c < len(v); c++ {
				opts = append(opts, "-"+v[c:c+1])
				if strings.IndexByte(sp.withArg, v[c]) >= 0 {
					if c == len(v)-1 {
						i++
					}
					break
				}
			}
			i++
			continue
		}
		break
	}
	i += sp.positional
	if i >= len(args) {
		return -1, opts, true
	}
	return i, opts, true
}

func hasOpt(opts []string, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o == n {
				return true
			}
		}
	}
	return false
}

var wrapperSpecs = map[string]optSpec{
	"nice":     {withArg: "n", long: map[string]bool{"adjustment": true}},
	"nohup":    {},
	"timeout":  {withArg: "sk", long: map[string]bool{"signal": true, "kill-after": true}, positional: 1},
	"stdbuf":   {withArg: "ioe", long: map[string]bool{"input": true, "output": true, "error": true}},
	"ionice":   {withArg: "cnpPu", long: map[string]bool{"class": true, "classdata": true, "pid": true, "pgid": true, "uid": true}},
	"setsid":   {},
	"unbuffer": {},
	"chrt":     {withArg: "TPD", long: map[string]bool{"sched-runtime": true, "sched-period": true, "sched-deadline": true}, positional: 1},
	"taskset":  {positional: 1},
	"time":     {withArg: "fo", long: map[string]bool{"format": true, "output": true}},
	"exec":     {withArg: "a"},
	"builtin":  {},
	"command":  {},
	"xargs": {withArg: "aEILnPsd", long: map[string]bool{"arg-file": true, "delimiter": true, "max-args": true,
		"max-procs": true, "max-lines": true, "max-chars": true, "process-slot-var": true}},
	"strace":      {withArg: "oepsuEabIOPSXU"},
	"ltrace":      {withArg: "oepsuEabIOPSXUnAD"},
	"chroot":      {long: map[string]bool{"userspec": true, "groups": true}, positional: 1},
	"unshare":     {withArg: "SGRwl"},
	"nsenter":     {withArg: "tSGrwe", long: map[string]bool{"target": true, "setuid": true, "setgid": true}},
	"watch":       {withArg: "nq", long: map[string]bool{"interval": true}},
	"flock":       {withArg: "wE", long: map[string]bool{"timeout": true, "conflict-exit-code": true}, positional: 1},
	"firejail":    {},
	"catchsegv":   {},
	"valgrind":    {},
	"faketime":    {positional: 1},
	"proxychains": {withArg: "f"},
	"torsocks":    {},
}

// maxWrappers bounds wrappers around one command (nice nice nice …).
const maxWrappers = 64

// wrapper handles commands that run another command or code. It reports
// whether it fully judged argv (r is then the judgement).
func (j *judge) wrapper(base string, argv []arg, ctx *callCtx, r *res) bool {
	args := argv[1:]
	p := j.pos(argv[0].pos)
	if privileged[base] {
		r.block(RulePrivilegeEscalation, p, "%s runs commands as another user or outside warden's control", base)
		return true
	}
	if base == "machinectl" && len(args) > 0 && (args[0].val == "shell" || args[0].val == "login") {
		r.block(RulePrivilegeEscalation, p, "machinectl %s opens a shell as another user", args[0].val)
		return true
	}
	if _, ok := shellDialects[base]; ok {
		j.shellWrapper(base, argv, ctx, r)
		return true
	}
	switch base {
	case "eval":
		return j.evalWrapper(argv, ctx, r)
	case "source", ".":
		j.sourceWrapper(base, argv, ctx, r)
		return true
	case "trap":
		j.trapWrapper(argv, r)
		return true
	case "env":
		return j.envWrapper(argv, ctx, r, 0)
	case "busybox", "toybox":
		if len(args) == 0 || args[0].val == "--list" || args[0].val == "--help" || args[0].val == "--version" {
			r.worse(Safe, base+" lists its applets")
			return true
		}
		if args[0].hasHole() || strings.HasPrefix(args[0].val, "-") {
			r.worse(Dangerous, base+" "+args[0].val)
			r.sink = true
			return true
		}
		j.wrapInner(base, args, ctx, r, Safe, "")
		return true
	case "declare", "typeset", "export", "readonly", "local":
		j.declArgv(base, argv, r)
		return true
	case "mapfile", "readarray", "compgen":
		j.callbackWrapper(base, argv, r)
		return false
	case "hash":
		j.hashWrapper(argv, ctx, r)
		return false
	case "script":
		return j.scriptWrapper(argv, ctx, r)
	case "xargs":
		return j.xargsWrapper(argv, ctx, r)
	}
	sp, ok := wrapperSpecs[base]
	if !ok {
		return false
	}
	if j.wrapDepth >= maxWrappers {
		r.block(RuleTooComplex, p, "more than %d wrapper commands around one command", maxWrappers)
		return true
	}
	idx, opts, ok := skipOpts(args, sp)
	if !ok {
		r.worse(Dangerous, base+" with computed options")
		r.sink = true
		return true
	}
	floor, floorWhy := Safe, ""
	noFuncs := false
	switch base {
	case "command":
		if hasOpt(opts, "-v", "-V") {
			r.worse(Safe, "command -v looks a command up")
			r.quiet = true
			return true
		}
		noFuncs = true
	case "builtin":
		noFuncs = true
	case "ionice":
		if hasOpt(opts, "-p", "-P", "-u", "--pid", "--pgid", "--uid") {
			return false
		}
	case "chrt", "taskset":
		if hasOpt(opts, "-p", "--pid") {
			return false
		}
	case "time":
		if hasOpt(opts, "-o", "--output") {
			floor, floorWhy = Dangerous, "time -o writes a file"
		}
	case "strace", "ltrace", "chroot", "unshare", "nsenter", "firejail", "valgrind", "faketime", "proxychains", "torsocks":
		floor, floorWhy = Dangerous, base+" runs a command in a changed environment"
		if idx < 0 || hasOpt(opts, "-p") && base != "unshare" && base != "nsenter" {
			r.worse(Dangerous, base+" without a command")
			return true
		}
	case "watch":
		if idx < 0 {
			return false
		}
		if !hasOpt(opts, "-x", "--exec") {
			var parts []string
			for _, a := range args[idx:] {
				if a.hasHole() {
					r.worse(Dangerous, "watch with a computed command")
					return true
				}
				parts = append(parts, a.val)
			}
			j.shellString(strings.Join(parts, " "), args[idx].pos, shellDialects["sh"].langs, nil, stream{})
			r.worse(Safe, "watch: the command is judged")
			return true
		}
	case "flock":
		for k, a := range args {
			if (a.val == "-c" || a.val == "--command") && k+1 < len(args) {
				if args[k+1].hasHole() {
					r.worse(Dangerous, "flock -c with a computed command")
					return true
				}
				j.shellString(args[k+1].val, args[k+1].pos, shellDialects["sh"].langs, nil, ctx.in)
				r.worse(Safe, "flock -c: the command is judged")
				return true
			}
		}
	}
	if idx < 0 {
		if base == "exec" {
			r.worse(Safe, "exec without a command only applies redirections")
			r.quiet = true
			return true
		}
		return false
	}
	j.wrapDepth++
	inner := &callCtx{stmt: ctx.stmt, in: ctx.in, noFuncs: noFuncs}
	j.wrapInner(base, args[idx:], inner, r, floor, floorWhy)
	j.wrapDepth--
	return true
}

// wrapInner judges the command a wrapper runs and merges the judgement.
func (j *judge) wrapInner(base string, inner []arg, ctx *callCtx, r *res, floor Class, floorWhy string) {
	j.run(inner)
	r2 := j.judgeArgv(inner, ctx)
	prevClass, prevWhy := r.class, r.why
	*r = r2
	r.why = base + " → " + r2.why
	if prevWhy != "" && prevClass > r.class {
		r.class, r.why = prevClass, prevWhy
	}
	if floor > r.class {
		r.class, r.why = floor, floorWhy
	}
}

// evalWrapper judges eval: its arguments, joined, are code in this shell.
func (j *judge) evalWrapper(argv []arg, ctx *callCtx, r *res) bool {
	p := j.pos(argv[0].pos)
	var parts []string
	for _, a := range argv[1:] {
		if a.fed {
			r.block(RuleDownloadToInterpreter, p, "eval runs downloaded or decoded data")
			return true
		}
		if strings.Contains(a.val, hole) {
			r.worse(Dangerous, "eval of a string computed at run time: "+shown(a.val))
			r.sink = true
			j.runAnything()
		}
		parts = append(parts, a.val)
	}
	if r.class == Dangerous {
		return true
	}
	if len(parts) > 0 {
		j.nestedString(strings.Join(parts, " "), argv[0].pos, ctx.in)
	}
	r.worse(Safe, "eval: the string is judged")
	return true
}

// sourceWrapper judges source FILE and . FILE.
func (j *judge) sourceWrapper(base string, argv []arg, ctx *callCtx, r *res) {
	p := j.pos(argv[0].pos)
	if len(argv) < 2 {
		r.worse(Dev, base+" without a file")
		return
	}
	f := argv[1]
	switch {
	case f.proc != nil && f.proc.text != nil && !f.fed:
		j.nestedString(*f.proc.text, f.pos, ctx.in)
		r.worse(Safe, base+" runs known text; it is judged")
	case f.fed || j.fedFiles[cleanRel(f.val)]:
		r.block(RuleDownloadToInterpreter, p, "%s runs downloaded or decoded data", base)
	case isStdinPath(f.val):
		r.sink = true
		r.worse(Dangerous, base+" runs commands read from its standard input")
		if ctx.in.fed {
			r.block(RuleDownloadToInterpreter, p, "downloaded or decoded data is piped into %s %s, which runs it", base, f.val)
		} else if ctx.in.text != nil {
			j.nestedString(*ctx.in.text, argv[0].pos, stream{})
		}
	case f.hasHole():
		r.worse(Dangerous, base+" runs a file named at run time")
		j.runAnything()
	default:
		r.worse(Dangerous, base+" runs script "+f.val)
		j.runAnything()
	}
}

// trapWrapper judges trap: the handler is code run later in this shell.
func (j *judge) trapWrapper(argv []arg, r *res) {
	args := argv[1:]
	if len(args) > 0 && (args[0].val == "-p" || args[0].val == "-l" || args[0].val == "--") {
		args = args[1:]
	}
	if len(args) >= 2 && args[0].val != "-" && !isDigits(args[0].val) {
		h := args[0]
		switch {
		case h.fed:
			r.block(RuleDownloadToInterpreter, j.pos(h.pos), "trap runs downloaded or decoded data")
			return
		case h.hasHole():
			r.worse(Dangerous, "trap with a handler computed at run time")
			return
		}
		j.nestedString(h.val, h.pos, stream{})
	}
	r.worse(Safe, "trap: the handler is judged")
	r.quiet = true
}

// hashWrapper judges hash -p PATH NAME: from then on NAME runs PATH, with
// whatever arguments the line gives it (hash -p /usr/bin/sudo ls; ls id
// runs sudo). PATH is judged as a program run with arguments the judge
// cannot see.
func (j *judge) hashWrapper(argv []arg, ctx *callCtx, r *res) {
	args := argv[1:]
	for k := 0; k < len(args); k++ {
		a := args[k]
		if a.val == "--" || !strings.HasPrefix(a.val, "-") {
			return
		}
		if a.hasHole() {
			r.worse(Dangerous, "hash takes an option computed at run time: "+a.val)
			j.runAnything()
			continue
		}
		i := strings.IndexByte(a.val, 'p')
		if i < 0 {
			continue
		}
		p := arg{val: a.val[i+1:], pos: a.pos, fed: a.fed}
		if p.val == "" {
			if k+1 >= len(args) {
				return
			}
			k++
			p = args[k]
		}
		r.worse(Dangerous, "hash -p makes a name run "+shown(p.val))
		j.runAnything()
		if p.hasHole() {
			return
		}
		prog := p.val[strings.LastIndexByte(p.val, '/')+1:]
		inner := []arg{{val: prog, pos: p.pos}, {val: hole, pos: p.pos}}
		if r2 := j.blockedAs(prog, inner, ctx); r2.rule != "" {
			r.block(r2.rule, r2.rpos, "hash -p makes a name run %s: %s", prog, r2.reason)
		}
		return
	}
}

// callbackOpts are the options of mapfile/readarray and compgen that take
// an argument, by letter; bash reads them as getopts does: attached
// (-C'code', -tC'code') or as the next word.
var callbackOpts = map[string]string{
	"mapfile":   "dnOsuCc",
	"readarray": "dnOsuCc",
	"compgen":   "oAGWFCXPSV",
}

// callbackWrapper judges mapfile -C and compgen -C/-F (code run now) and
// compgen -W (a word list bash expands, $(…) included).
func (j *judge) callbackWrapper(base string, argv []arg, r *res) {
	withArg := callbackOpts[base]
	args := argv[1:]
	for k := 0; k < len(args); k++ {
		a := args[k]
		if a.hasHole() && strings.HasPrefix(a.val, "-") {
			// An option word the judge cannot read may be -C CODE.
			r.worse(Dangerous, base+" takes an option computed at run time: "+a.val)
			j.runAnything()
			continue
		}
		if a.val == "--" || !strings.HasPrefix(a.val, "-") || a.val == "-" {
			break
		}
		for i := 1; i < len(a.val); i++ {
			letter := a.val[i]
			if !strings.ContainsRune(withArg, rune(letter)) {
				continue
			}
			val := arg{val: a.val[i+1:], pos: a.pos, fed: a.fed, subst: a.subst}
			if val.val == "" {
				if k+1 >= len(args) {
					break
				}
				k++
				val = args[k]
			}
			j.callbackArg(base, "-"+string(letter), val, r)
			break // the rest of the word was the argument
		}
	}
}

// callbackArg judges the argument of one option of mapfile or compgen.
func (j *judge) callbackArg(base, opt string, cb arg, r *res) {
	switch opt {
	case "-C", "-F":
		switch {
		case cb.fed:
			r.block(RuleDownloadToInterpreter, j.pos(cb.pos), "%s runs downloaded or decoded data", base)
		case cb.hasHole():
			r.worse(Dangerous, base+" "+opt+" runs code computed at run time")
			j.runAnything()
		default:
			// bash appends the index and the line (mapfile), or the
			// command, word and previous word (compgen -C).
			extra := " " + hole + " " + hole
			if base == "compgen" {
				extra += " " + hole
			}
			j.nestedString(cb.val+extra, cb.pos, stream{})
			r.worse(Dangerous, base+" "+opt+" runs code: "+cb.val)
		}
	case "-W":
		// compgen -W expands each word of the list: $(cmd) in it runs.
		switch {
		case cb.fed:
			j.ctxBlock(base + " -W expands downloaded or decoded data")
		case cb.hasHole():
			j.unseen(base + " -W expands a word list the judge cannot see ($(cmd) in it would run)")
		default:
			j.textSubsts(cb.val)
		}
		if strings.ContainsAny(cb.val, "$`") || cb.hasHole() {
			r.worse(Dangerous, base+" -W expands "+shown(cb.val))
		}
	}
}

// scriptWrapper judges script [-c CMD]: without -c it runs a shell that
// reads its standard input.
func (j *judge) scriptWrapper(argv []arg, ctx *callCtx, r *res) bool {
	args := argv[1:]
	for k, a := range args {
		if (a.val == "-c" || a.val == "--command") && k+1 < len(args) || strings.HasPrefix(a.val, "--command=") || len(a.val) > 2 && a.val[0] == '-' && a.val[1] != '-' && strings.HasSuffix(a.val, "c") && k+1 < len(args) {
			c := args[min(k+1, len(args)-1)]
			if v, ok := strings.CutPrefix(a.val, "--command="); ok {
				c = arg{val: v, pos: a.pos, fed: a.fed}
			}
			if c.fed {
				r.block(RuleDownloadToInterpreter, j.pos(c.pos), "script -c runs downloaded or decoded data")
				return true
			}
			if c.hasHole() {
				r.worse(Dangerous, "script -c with a computed command")
				r.sink = true
				return true
			}
			j.shellString(c.val, c.pos, shellDialects["sh"].langs, nil, ctx.in)
			r.worse(Dangerous, "script runs a command under a terminal and records it to a file")
			if j.stringIsSink(c.val) {
				r.sink = true
			}
			return true
		}
	}
	r.sink = true
	r.worse(Dangerous, "script runs a shell that reads its standard input")
	return true
}

// xargsWrapper judges xargs CMD: the words xargs reads are appended to
// CMD's argv. When the input is known text, each resulting argv is
// judged; otherwise CMD is judged with no appended word and with one
// unknown word.
func (j *judge) xargsWrapper(argv []arg, ctx *callCtx, r *res) bool {
	p := j.pos(argv[0].pos)
	args := argv[1:]
	idx, opts, ok := skipOpts(args, wrapperSpecs["xargs"])
	if !ok {
		r.worse(Dangerous, "xargs with computed options")
		r.sink = true
		return true
	}
	if idx < 0 {
		r.worse(Safe, "xargs echoes its input")
		return true
	}
	replace := ""
	for k, a := range args[:idx] {
		switch {
		case a.val == "-I" && k+1 < idx:
			replace = args[k+1].val
		case strings.HasPrefix(a.val, "-I") && len(a.val) > 2:
			replace = a.val[2:]
		case a.val == "-i" || strings.HasPrefix(a.val, "--replace"):
			replace = "{}"
		}
	}
	fromFile := hasOpt(opts, "-a", "--arg-file")
	inner := args[idx:]
	var extra [][]arg
	switch {
	case ctx.in.text != nil && !fromFile:
		words := xargsWords(*ctx.in.text, hasOpt(opts, "-0", "--null"))
		if replace != "" {
			for _, w := range words {
				extra = append(extra, substitute(inner, replace, w))
			}
		} else {
			ws := make([]arg, len(words))
			for k, w := range words {
				ws[k] = arg{val: w, pos: argv[0].pos}
			}
			extra = append(extra, append(append([]arg{}, inner...), ws...))
		}
	default:
		h := arg{val: hole, pos: argv[0].pos, fed: ctx.in.fed}
		if replace != "" {
			extra = append(extra, substitute(inner, replace, hole))
		} else {
			extra = append(extra, inner, append(append([]arg{}, inner...), h))
		}
	}
	var best res
	for k, a := range extra {
		r2 := j.judgeArgv(a, &callCtx{stmt: ctx.stmt})
		if k == 0 || r2.rule != "" && best.rule == "" || r2.class > best.class && best.rule == "" {
			best = r2
		}
	}
	*r = best
	r.why = "xargs → " + best.why
	if ctx.in.text == nil {
		r.worse(Dangerous, "xargs adds words it reads from its input")
	}
	interp := len(inner) > 0 && isCodeRunner(baseName(inner[0].val))
	if interp {
		r.sink = true
	}
	if ctx.in.fed && interp && r.rule == "" {
		r.block(RuleDownloadToInterpreter, p, "xargs hands downloaded or decoded data to %s", inner[0].val)
	}
	return true
}

// xargsWords splits xargs input into words (blanks and newlines separate,
// quotes group; -0: NUL separates).
func xargsWords(s string, null bool) []string {
	if null {
		return strings.FieldsFunc(s, func(r rune) bool { return r == 0 })
	}
	var out []string
	var cur strings.Builder
	in := false
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			q, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

func substitute(inner []arg, repl, w string) []arg {
	out := make([]arg, len(inner))
	for k, a := range inner {
		out[k] = a
		out[k].val = strings.ReplaceAll(a.val, repl, w)
	}
	return out
}

func baseName(s string) string {
	if k := strings.LastIndexByte(s, '/'); k >= 0 {
		return s[k+1:]
	}
	return s
}
