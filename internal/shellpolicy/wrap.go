package shellpolicy

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// privileged commands run something as another user: blocked outright.
var privileged = map[string]bool{
	"sudo": true, "sudoedit": true, "su": true, "doas": true, "pkexec": true, "run0": true,
	"runuser": true, "sg": true, "newgrp": true, "ksu": true, "calife": true, "setpriv": true,
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
		if a.computed {
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
	"strace":  {withArg: "oepsuEabIOPSXU"},
	"ltrace":  {withArg: "oepsuEabIOPSXUnAD"},
	"chroot":  {long: map[string]bool{"userspec": true, "groups": true}, positional: 1},
	"unshare": {withArg: "SGRwl"},
	"nsenter": {withArg: "tSGrwe", long: map[string]bool{"target": true, "setuid": true, "setgid": true}},
	"watch":   {withArg: "nq", long: map[string]bool{"interval": true}},
	"flock":   {withArg: "wE", long: map[string]bool{"timeout": true, "conflict-exit-code": true}, positional: 1},
}

// maxWrappers bounds wrappers around one command (nice nice nice …).
const maxWrappers = 64

// wrapper handles commands that run another command. It reports whether
// it fully judged argv (r is then the judgement).
func (j *judge) wrapper(base string, argv []arg, ctx *callCtx, r *res) bool {
	args := argv[1:]
	p := j.pos(argv[0].pos)
	if privileged[base] {
		r.block(RulePrivilegeEscalation, p, "%s runs commands as another user", base)
		return true
	}
	if shells[base] {
		j.shellWrapper(base, argv, ctx, r)
		return true
	}
	switch base {
	case "eval":
		var parts []string
		for _, a := range args {
			if a.computed {
				r.worse(Dangerous, "eval of a computed string: "+a.val)
				if ctx.argsFeed {
					r.block(RuleDownloadToInterpreter, p, "eval runs downloaded or decoded data")
				}
				return true
			}
			parts = append(parts, a.val)
		}
		if len(parts) > 0 {
			j.nestedString(strings.Join(parts, " "), argv[0].pos)
		}
		r.worse(Safe, "eval: the string is judged")
		return true
	case "trap":
		if len(args) >= 2 && !args[0].computed && args[0].val != "-" && !isFD(args[0].val) {
			j.nestedString(args[0].val, args[0].pos)
		} else if len(args) >= 2 && args[0].computed {
			r.worse(Dangerous, "trap with a computed command")
			return true
		}
		r.worse(Safe, "trap: the handler is judged")
		return true
	case "env":
		return j.envWrapper(argv, ctx, r, 0)
	case "busybox":
		if len(args) == 0 || args[0].val == "--list" || args[0].val == "--help" {
			r.worse(Safe, "busybox lists its applets")
			return true
		}
		if args[0].computed || strings.HasPrefix(args[0].val, "-") {
			r.worse(Dangerous, "busybox "+args[0].val)
			return true
		}
		j.wrapInner(base, args, ctx, r, Safe, "")
		return true
	case "find":
		j.findExec(argv, r)
		return false
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
		r.m.stdinCode = true
		return true
	}
	floor, floorWhy := Safe, ""
	switch base {
	case "command":
		if hasOpt(opts, "-v", "-V") {
			r.worse(Safe, "command -v looks a command up")
			return true
		}
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
	case "xargs":
		floor, floorWhy = Dangerous, "xargs adds arguments read from its input"
		if idx < 0 {
			r.worse(Safe, "xargs echoes its input")
			return true
		}
	case "strace", "ltrace", "chroot", "unshare", "nsenter":
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
				if a.computed {
					r.worse(Dangerous, "watch with a computed command")
					return true
				}
				parts = append(parts, a.val)
			}
			j.nestedString(strings.Join(parts, " "), args[idx].pos)
			r.worse(Safe, "watch: the command is judged")
			return true
		}
	case "flock":
		for k, a := range args {
			if (a.val == "-c" || a.val == "--command") && k+1 < len(args) {
				if args[k+1].computed {
					r.worse(Dangerous, "flock -c with a computed command")
					return true
				}
				j.nestedString(args[k+1].val, args[k+1].pos)
				r.worse(Safe, "flock -c: the command is judged")
				return true
			}
		}
	}
	if idx < 0 {
		if base == "exec" {
			r.worse(Safe, "exec without a command only applies redirections")
			return true
		}
		return false
	}
	j.wrapDepth++
	j.wrapInner(base, args[idx:], ctx, r, floor, floorWhy)
	j.wrapDepth--
	if base == "xargs" && ctx.in == stdinFed && r.m.interpreter && r.rule == "" {
		r.block(RuleDownloadToInterpreter, p, "xargs hands downloaded or decoded data to %s", args[idx].val)
	}
	return true
}

// wrapInner judges the command a wrapper runs and merges the judgement.
func (j *judge) wrapInner(base string, inner []arg, ctx *callCtx, r *res, floor Class, floorWhy string) {
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

// shellWrapper judges sh/bash/… : -c STRING is parsed and judged; a
// script file is dangerous; commands from standard input are judged when
// they are a static heredoc, else dangerous.
func (j *judge) shellWrapper(base string, argv []arg, ctx *callCtx, r *res) {
	args := argv[1:]
	p := j.pos(argv[0].pos)
	cmode, smode := false, false
	i := 0
loop:
	for i < len(args) {
		a := args[i]
		if a.computed {
			r.worse(Dangerous, base+" with computed options: "+a.val)
			r.m.stdinCode, r.m.shell = true, true
			if ctx.in == stdinFed || ctx.argsFeed {
				r.block(RuleDownloadToInterpreter, p, "downloaded or decoded data reaches %s", base)
			}
			return
		}
		v := a.val
		switch {
		case v == "--" || v == "-":
			i++
			break loop
		case strings.HasPrefix(v, "--"):
			if v == "--rcfile" || v == "--init-file" {
				i++
			}
			i++
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			for _, ch := range v[1:] {
				switch ch {
				case 'c':
					cmode = true
				case 's':
					smode = true
				case 'o', 'O':
					i++
				}
			}
			i++
		default:
			break loop
		}
	}
	ops := args[min(i, len(args)):]
	r.m.interpreter = true
	if ctx.argsFeed {
		r.block(RuleDownloadToInterpreter, p, "%s runs downloaded or decoded data passed through a substitution", base)
	}
	switch {
	case cmode:
		if len(ops) == 0 {
			r.worse(Dangerous, base+" -c without a command string")
			return
		}
		if ops[0].computed {
			r.worse(Dangerous, base+" -c runs a computed string: "+ops[0].val)
			return
		}
		pos := ops[1:]
		if len(pos) == 0 {
			pos = argv[:1]
		}
		saved := j.bindPositional(pos)
		j.nestedString(ops[0].val, ops[0].pos)
		j.restorePositional(saved)
		r.worse(Safe, base+" -c: the command string is judged")
	case len(ops) > 0 && !smode:
		if isStdinPath(ops[0].val) {
			r.m.stdinCode, r.m.shell = true, true
			r.worse(Dangerous, base+" runs commands read from its standard input")
		} else {
			r.worse(Dangerous, base+" runs script "+ops[0].val)
		}
	default:
		r.m.stdinCode, r.m.shell = true, true
		if body, ok := j.stdinDoc(ctx.stmt); ok {
			j.nestedString(body, argv[0].pos)
			r.worse(Safe, base+" reads commands from a heredoc; they are judged")
		} else {
			r.worse(Dangerous, base+" runs commands read from its standard input")
		}
	}
	if r.m.stdinCode && ctx.in == stdinFed {
		r.block(RuleDownloadToInterpreter, p, "downloaded or decoded data is piped into %s, which runs it", base)
	}
}

// stdinDoc returns the static text of the heredoc or here-string that is
// the statement's standard input.
func (j *judge) stdinDoc(s *syntax.Stmt) (string, bool) {
	if s == nil {
		return "", false
	}
	var last *syntax.Redirect
	for _, r := range s.Redirs {
		if isInput(r.Op) && (r.N == nil || r.N.Value == "0") {
			last = r
		}
	}
	if last == nil {
		return "", false
	}
	var w *syntax.Word
	switch last.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		w = last.Hdoc
		if w == nil {
			return "", true
		}
	case syntax.WordHdoc:
		w = last.Word
	default:
		return "", false
	}
	refs := map[string]bool{}
	if !wordRefs(w, refs) || len(refs) > 0 {
		return "", false
	}
	s2, err := expand.Document(&expand.Config{Env: env{}, NoUnset: true}, w)
	if err != nil {
		return "", false
	}
	return s2, true
}

// envWrapper judges env [OPTION]… [NAME=VALUE]… [COMMAND [ARG]…].
func (j *judge) envWrapper(argv []arg, ctx *callCtx, r *res, depth int) bool {
	args := argv[1:]
	p := j.pos(argv[0].pos)
	if depth > MaxDepth {
		r.block(RuleTooComplex, p, "env -S nested more than %d levels", MaxDepth)
		return true
	}
	i := 0
opts:
	for i < len(args) {
		a := args[i]
		if a.computed {
			r.worse(Dangerous, "env with computed arguments: "+a.val)
			r.m.stdinCode = true
			return true
		}
		v := a.val
		var split string
		switch {
		case v == "--":
			i++
			break opts
		case v == "-":
			i++
		case v == "-S" || v == "--split-string":
			if i+1 >= len(args) || args[i+1].computed {
				r.worse(Dangerous, "env -S with a computed string")
				return true
			}
			split = args[i+1].val
			i += 2
		case strings.HasPrefix(v, "--split-string="):
			split = strings.TrimPrefix(v, "--split-string=")
			i++
		case v == "-u" || v == "--unset" || v == "-C" || v == "--chdir":
			i += 2
		case strings.HasPrefix(v, "--"):
			i++
		case len(v) > 1 && v[0] == '-':
			// a cluster: -i, -0, -v take nothing; u, C, S take the rest or the next word
			for c := 1; c < len(v); c++ {
				switch v[c] {
				case 'u', 'C':
					if c == len(v)-1 {
						i++
					}
					c = len(v)
				case 'S':
					if c == len(v)-1 {
						if i+1 >= len(args) || args[i+1].computed {
							r.worse(Dangerous, "env -S with a computed string")
							return true
						}
						split = args[i+1].val
						i++
					} else {
						split = v[c+1:]
					}
					c = len(v)
				}
			}
			i++
		default:
			break opts
		}
		if split != "" {
			words, ok := j.splitWords(split, argv[0].pos)
			if !ok {
				r.worse(Dangerous, "env -S string that cannot be judged: "+split)
				return true
			}
			next := append(append([]arg{argv[0]}, words...), args[i:]...)
			return j.envWrapper(next, ctx, r, depth+1)
		}
	}
	for i < len(args) {
		v := args[i].val
		k := strings.IndexByte(v, '=')
		if args[i].computed || k <= 0 || !isName(v[:k]) {
			break
		}
		cl, why := j.assignClass(v[:k], nil, true)
		r.worse(cl, why)
		i++
	}
	if i >= len(args) {
		r.worse(Safe, "env prints the environment")
		return true
	}
	j.wrapInner("env", args[i:], ctx, r, Safe, "")
	return true
}

// splitWords splits an env -S string into words the way a shell would.
func (j *judge) splitWords(s string, p syntax.Pos) ([]arg, bool) {
	var words []*syntax.Word
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash))
	for w, err := range parser.WordsSeq(strings.NewReader(s)) {
		if err != nil {
			return nil, false
		}
		words = append(words, w)
	}
	saveSrc := j.src
	j.src = s
	vs := j.resolve(words)
	j.src = saveSrc
	if len(vs) != 1 {
		return nil, false
	}
	out := vs[0]
	for k := range out {
		if out[k].computed {
			return nil, false
		}
		out[k].pos = p
	}
	return out, true
}

// findExec judges the commands find runs (-exec, -execdir, -ok, -okdir),
// with {} replaced by each starting point.
func (j *judge) findExec(argv []arg, r *res) {
	args := argv[1:]
	var starts []string
	k := 0
	for ; k < len(args); k++ {
		v := args[k].val
		if v == "-H" || v == "-L" || v == "-P" || strings.HasPrefix(v, "-D") || strings.HasPrefix(v, "-O") {
			continue
		}
		if strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == "," {
			break
		}
		starts = append(starts, v)
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	for ; k < len(args); k++ {
		switch args[k].val {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		dir := strings.HasSuffix(args[k].val, "dir")
		e := k + 1
		for e < len(args) && args[e].val != ";" && args[e].val != "+" {
			e++
		}
		cmd := args[k+1 : e]
		k = e
		if len(cmd) == 0 {
			continue
		}
		for _, st := range starts {
			inner := make([]arg, len(cmd))
			for x, a := range cmd {
				inner[x] = a
				if !dir && !a.computed {
					inner[x].val = strings.ReplaceAll(a.val, "{}", st)
				}
			}
			r2 := j.judgeArgv(inner, &callCtx{})
			if r2.rule != "" {
				r.block(r2.rule, r2.rpos, "find %s runs: %s", args[k-len(cmd)-1].val, r2.reason)
			}
		}
	}
}

// codeCalls finds shell command strings handed to system()-like calls in
// inline interpreter code (best effort: literal strings only).
var codeCalls = regexp.MustCompile(`(?:system|popen|exec|execSync|spawnSync|spawn|Popen|call|run|check_output|check_call|getoutput|getstatusoutput|shell_exec|passthru)\s*\(\s*\[?\s*(?:"([^"\\]*)"|'([^'\\]*)')`)

// inlineCode judges the literal command strings inline interpreter code
// passes to system()-like calls.
func (j *judge) inlineCode(code string, p syntax.Pos) {
	for _, m := range codeCalls.FindAllStringSubmatch(code, 32) {
		s := m[1] + m[2]
		if s != "" {
			j.nestedString(s, p)
		}
	}
}
