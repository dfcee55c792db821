package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellDialects says how warden reads a shell's -c string: the dialects it
// is judged in, and whether that reading is faithful. sh is dash on Debian
// and bash on Fedora, Arch and macOS: both readings.
var shellDialects = map[string]struct {
	langs    []syntax.LangVariant
	faithful bool
}{
	"sh":     {[]syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash}, true},
	"dash":   {[]syntax.LangVariant{syntax.LangPOSIX}, true},
	"ash":    {[]syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash}, true},
	"posh":   {[]syntax.LangVariant{syntax.LangPOSIX}, true},
	"bash":   {[]syntax.LangVariant{syntax.LangBash}, true},
	"rbash":  {[]syntax.LangVariant{syntax.LangBash}, true},
	"mksh":   {[]syntax.LangVariant{syntax.LangMirBSDKorn}, true},
	"lksh":   {[]syntax.LangVariant{syntax.LangMirBSDKorn}, true},
	"ksh":    {[]syntax.LangVariant{syntax.LangMirBSDKorn, syntax.LangBash}, false},
	"ksh93":  {[]syntax.LangVariant{syntax.LangMirBSDKorn, syntax.LangBash}, false},
	"oksh":   {[]syntax.LangVariant{syntax.LangMirBSDKorn, syntax.LangBash}, false},
	"loksh":  {[]syntax.LangVariant{syntax.LangMirBSDKorn, syntax.LangBash}, false},
	"pdksh":  {[]syntax.LangVariant{syntax.LangMirBSDKorn, syntax.LangBash}, false},
	"zsh":    {[]syntax.LangVariant{syntax.LangZsh, syntax.LangBash}, false},
	"yash":   {[]syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash}, false},
	"fish":   {[]syntax.LangVariant{syntax.LangBash}, false},
	"csh":    {[]syntax.LangVariant{syntax.LangBash}, false},
	"tcsh":   {[]syntax.LangVariant{syntax.LangBash}, false},
	"elvish": {[]syntax.LangVariant{syntax.LangBash}, false},
	"xonsh":  {[]syntax.LangVariant{syntax.LangBash}, false},
	"nu":     {[]syntax.LangVariant{syntax.LangBash}, false},
	"pwsh":   {[]syntax.LangVariant{syntax.LangBash}, false},
	"rc":     {[]syntax.LangVariant{syntax.LangBash}, false},
	"es":     {[]syntax.LangVariant{syntax.LangBash}, false},
}

// shellWrapper judges sh/bash/…: -c STRING is parsed in the shell's
// dialect(s) and judged; a script file is dangerous; commands from
// standard input are judged when they are known text, else dangerous.
func (j *judge) shellWrapper(base string, argv []arg, ctx *callCtx, r *res) {
	args := argv[1:]
	p := j.pos(argv[0].pos)
	d := shellDialects[base]
	cmode, smode := false, false
	i := 0
loop:
	for i < len(args) {
		a := args[i]
		if a.hasHole() {
			r.worse(Dangerous, base+" with computed options: "+shown(a.val))
			r.sink = true
			if ctx.in.fed || a.fed {
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
	if !d.faithful {
		r.worse(Dangerous, base+"'s dialect is not one warden reads faithfully; what it runs is judged as far as it parses")
	}
	switch {
	case cmode:
		if len(ops) == 0 {
			r.worse(Dangerous, base+" -c without a command string")
			return
		}
		s := ops[0]
		if s.fed {
			r.block(RuleDownloadToInterpreter, p, "%s -c runs downloaded or decoded data", base)
			return
		}
		if s.hasHole() {
			r.worse(Dangerous, base+" -c runs a string computed at run time: "+shown(s.val))
			r.sink = true
			j.runAnything()
			return
		}
		pos := ops[1:]
		if len(pos) == 0 {
			pos = argv[:1]
		}
		if !d.faithful {
			j.lenient++
		}
		j.shellString(s.val, s.pos, d.langs, pos, ctx.in)
		if !d.faithful {
			j.lenient--
			if base == "zsh" {
				j.zshQualifiers(s.val, s.pos)
			}
		}
		r.worse(Safe, base+" -c: the command string is judged")
		if j.stringIsSink(s.val) {
			r.sink = true
		}
	case len(ops) > 0 && !smode:
		switch {
		case ops[0].proc != nil && ops[0].proc.text != nil && !ops[0].fed:
			j.shellString(*ops[0].proc.text, ops[0].pos, d.langs, ops, ctx.in)
			r.worse(Safe, base+" runs known text; it is judged")
		case isStdinPath(ops[0].val):
			r.sink = true
			r.worse(Dangerous, base+" runs commands read from its standard input")
		case ops[0].fed || j.fedFiles[cleanRel(ops[0].val)]:
			r.block(RuleDownloadToInterpreter, p, "%s runs %s, which the line wrote from downloaded or decoded data", base, ops[0].val)
		default:
			r.worse(Dangerous, base+" runs script "+ops[0].val)
			j.runAnything()
		}
	default:
		r.sink = true
		switch {
		case ctx.in.fed:
		case ctx.in.text != nil:
			if !d.faithful {
				j.lenient++
			}
			j.shellString(*ctx.in.text, argv[0].pos, d.langs, nil, stream{})
			if !d.faithful {
				j.lenient--
			}
			r.worse(Safe, base+" reads commands from known text; they are judged")
		default:
			r.worse(Dangerous, base+" runs commands read from its standard input")
			j.runAnything()
		}
	}
	if r.sink && ctx.in.fed {
		r.block(RuleDownloadToInterpreter, p, "downloaded or decoded data is piped into %s, which runs it", base)
	}
}

// zshQualifiers judges the code in zsh glob qualifiers (*(e:'cmd':),
// *(+cmd)), which zsh runs while globbing; bash reads them as extglobs.
func (j *judge) zshQualifiers(s string, p syntax.Pos) {
	for k := 0; k < len(s); k++ {
		if s[k] != '(' || k == 0 {
			continue
		}
		rest := s[k+1:]
		if len(rest) > 2 && (rest[0] == 'e' || rest[0] == '+') {
			body := rest[1:]
			if rest[0] == 'e' && len(body) > 0 {
				d := body[0]
				end := strings.IndexByte(body[1:], d)
				if end < 0 {
					continue
				}
				code := strings.Trim(body[1:end+1], "'\"")
				j.shellString(code, p, []syntax.LangVariant{syntax.LangBash}, nil, stream{})
			}
		}
	}
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
		if a.hasHole() {
			r.worse(Dangerous, "env with computed arguments: "+shown(a.val))
			r.sink = true
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
			if i+1 >= len(args) || args[i+1].hasHole() {
				r.worse(Dangerous, "env -S with a computed string")
				return true
			}
			split = args[i+1].val
			i += 2
		case strings.HasPrefix(v, "--split-string="):
			split = strings.TrimPrefix(v, "--split-string=")
			i++
		case v == "-C" || v == "--chdir":
			if i+1 < len(args) {
				if c, why := j.listPath(args[i+1], "env -C "); c > Safe {
					r.worse(c, why)
				}
			}
			i += 2
		case v == "-u" || v == "--unset":
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
						if i+1 >= len(args) || args[i+1].hasHole() {
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
		if args[i].hasHole() || k <= 0 || !isName(v[:k]) {
			break
		}
		cl, why := nameClass(v[:k], true)
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

// splitWords splits an env -S string into words the way env does (close
// to a shell's word splitting).
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
	vs := j.readings(words)
	j.src = saveSrc
	if len(vs) != 1 {
		return nil, false
	}
	out := vs[0]
	for k := range out {
		if out[k].hasHole() {
			return nil, false
		}
		out[k].pos = p
	}
	return out, true
}
