package shellpolicy

import (
	"regexp"
	"slices"
	"strings"
)

// kind is what an option's value or an operand may be.
type kind uint8

const (
	kNone  kind = iota // takes no value (an option) / accepts none (operands)
	kAny               // any text: a pattern, a format, a message
	kNum               // a number: 5, -5, +5, 10K, 1.5
	kPath              // a workspace path the command reads
	kList              // a workspace path the command lists or looks up
	kName              // a shell variable name; its subscript is evaluated
	kEnum              // one of opt.enum / spec.enum
	kKnown             // any text known before run time
)

// opt is one option a safe command accepts.
type opt struct {
	names    []string // "-n", "--lines"
	arg      kind     // kNone: takes no value
	optional bool     // the value only follows "=" (--color[=WHEN])
	enum     []string
	// danger makes the command Dangerous, with this reason (it writes a
	// file, runs a program, changes the system).
	danger string
	// recurse makes a reader read directories recursively.
	recurse bool
	// more are the kinds of further words the option takes (jq --arg N V).
	more []kind
}

// spec is a command warden knows to be safe in the forms it lists: every
// option and operand of the command must be one of them, else the command
// is Dev (asked). Examples in match must judge Safe and those in notMatch
// must not; a test runs them all.
type spec struct {
	name      string
	opts      []opt
	operands  kind
	enum      []string // for operands of kind kEnum
	maxOps    int      // 0: no limit
	minOps    int
	numOpt    bool // -NUM is an option (head -5)
	noPermute bool // options stop at the first operand (git, xargs style)
	// holeOpts: unknown text where an option could be is harmless, since
	// no option of the command is (echo).
	holeOpts bool
	// noOpts: every word is an operand; check reads them (find, test).
	noOpts bool
	// textOpts: a word that is not a listed option is text (echo -rf).
	textOpts bool
	// subs are subcommands (git status): the first operand selects one.
	subs map[string]*spec
	// check judges what the table cannot say (embedded languages, paths in
	// option values): it may make r worse.
	check func(j *judge, p *parsed, r *res)
	// class is the class of the command when every word is listed
	// (Safe unless said otherwise).
	class Class
	// unlisted is the class a word outside the spec gives (Dev unless said
	// otherwise: an interpreter given anything but --version runs code).
	unlisted Class
	// quiet: the command does not print its standard input.
	quiet           bool
	match, notMatch []string
}

// optUse is one option found in an argv.
type optUse struct {
	o    *opt
	name string // as written, cluster letters split ("-l")
	val  arg
	hasV bool
	more []arg
}

// parsed is an argv read against a spec.
type parsed struct {
	s        *spec
	argv     []arg
	opts     []optUse
	operands []arg
	unknown  []string // words outside the spec
	rest     []arg    // noPermute: the words from the first operand on
}

func (p *parsed) has(names ...string) bool {
	for _, u := range p.opts {
		if slices.Contains(u.o.names, u.name) && slices.ContainsFunc(names, func(n string) bool { return slices.Contains(u.o.names, n) }) {
			return true
		}
	}
	return false
}

func (p *parsed) values(names ...string) []arg {
	var out []arg
	for _, u := range p.opts {
		if u.hasV && slices.ContainsFunc(names, func(n string) bool { return slices.Contains(u.o.names, n) }) {
			out = append(out, u.val)
		}
	}
	return out
}

var numRE = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?[a-zA-Z]{0,3}$`)

// parse reads args (the words after the command name) against s, GNU
// style: short options clustered (-la), a short option's value attached
// (-n5) or next, long options with =value or the next word, options after
// operands (unless noPermute), -- ending options.
func (s *spec) parse(args []arg) *parsed {
	p := &parsed{s: s}
	end := s.noOpts
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		switch {
		case !end && (strings.HasPrefix(v, hole) || strings.HasPrefix(v, numHole)) && !s.holeOpts:
			// Unknown text at the start of a word could be an option, or
			// an operand: it is judged as both.
			p.unknown = append(p.unknown, v)
			p.operands = append(p.operands, a)
		case end || v == "-" || !strings.HasPrefix(v, "-"):
			if s.noPermute && !end {
				p.rest = args[i:]
				p.operands = append(p.operands, args[i:]...)
				return p
			}
			p.operands = append(p.operands, a)
		case v == "--":
			end = true
			if s.noPermute {
				p.rest = args[i+1:]
				p.operands = append(p.operands, p.rest...)
				return p
			}
		case strings.HasPrefix(v, "--"):
			name, val, hasEq := strings.Cut(v, "=")
			o := s.find(name)
			if o == nil && s.textOpts {
				p.operands = append(p.operands, a)
				end = true
				continue
			}
			if o == nil {
				p.unknown = append(p.unknown, v)
				continue
			}
			u := optUse{o: o, name: name}
			switch {
			case o.arg == kNone && hasEq:
				p.unknown = append(p.unknown, v)
				continue
			case o.arg != kNone && hasEq:
				u.val, u.hasV = arg{val: val, pos: a.pos, fed: a.fed, glob: a.glob}, true
			case o.arg != kNone && !o.optional:
				if i+1 >= len(args) {
					p.unknown = append(p.unknown, v)
					continue
				}
				i++
				u.val, u.hasV = args[i], true
			}
			if len(o.more) > 0 {
				if i+len(o.more) >= len(args) {
					p.unknown = append(p.unknown, v)
					continue
				}
				u.more = args[i+1 : i+1+len(o.more)]
				i += len(o.more)
			}
			p.opts = append(p.opts, u)
		default:
			if s.numOpt && numRE.MatchString(v[1:]) && isDigits(v[1:2]) {
				p.opts = append(p.opts, optUse{o: &numOption, name: "-NUM", val: arg{val: v[1:]}, hasV: true})
				continue
			}
			if s.textOpts && !s.allShort(v) {
				p.operands = append(p.operands, a)
				end = true
				continue
			}
			for c := 1; c < len(v); c++ {
				name := "-" + v[c:c+1]
				o := s.find(name)
				if o == nil {
					p.unknown = append(p.unknown, v)
					break
				}
				u := optUse{o: o, name: name}
				if o.arg != kNone {
					switch {
					case c+1 < len(v):
						u.val, u.hasV = arg{val: v[c+1:], pos: a.pos, fed: a.fed, glob: a.glob}, true
					case o.optional:
					case i+1 < len(args):
						i++
						u.val, u.hasV = args[i], true
					default:
						p.unknown = append(p.unknown, v)
						c = len(v)
						continue
					}
					p.opts = append(p.opts, u)
					break
				}
				p.opts = append(p.opts, u)
			}
		}
	}
	return p
}

// allShort reports a word made only of the spec's value-less short options.
func (s *spec) allShort(v string) bool {
	for c := 1; c < len(v); c++ {
		o := s.find("-" + v[c:c+1])
		if o == nil || o.arg != kNone {
			return false
		}
	}
	return len(v) > 1
}

var numOption = opt{names: []string{"-NUM"}, arg: kNum}

func (s *spec) find(name string) *opt {
	for i := range s.opts {
		if slices.Contains(s.opts[i].names, name) {
			return &s.opts[i]
		}
	}
	return nil
}

// judgeSpec classifies an argv against a spec.
func (j *judge) judgeSpec(s *spec, label string, argv []arg, r *res) {
	if len(s.subs) > 0 {
		j.judgeSubs(s, label, argv, r)
		return
	}
	p := s.parse(argv[1:])
	p.argv = argv
	cls := s.class
	r.worse(cls, "known "+cls.String()+" command: "+label)
	if s.quiet {
		r.quiet = true
	}
	for _, w := range p.unknown {
		r.unlisted(s.unlistedClass(), label+": "+shown(w)+" is not an option warden knows to be safe")
	}
	for _, u := range p.opts {
		if u.o.danger != "" {
			r.worse(Dangerous, label+" "+u.name+" "+u.o.danger)
			continue
		}
		if u.hasV {
			j.checkKind(label+" "+u.name, u.o.arg, u.o.enum, u.val, r)
		}
		for k, m := range u.more {
			j.checkKind(label+" "+u.name, u.o.more[k], nil, m, r)
		}
	}
	if s.operands == kNone && len(p.operands) > 0 {
		r.unlisted(s.unlistedClass(), label+" takes no operand like "+shown(p.operands[0].val))
	}
	if s.maxOps > 0 && len(p.operands) > s.maxOps || len(p.operands) < s.minOps {
		r.unlisted(s.unlistedClass(), label+" with an unexpected number of operands")
	}
	if s.check == nil {
		for _, a := range p.operands {
			j.checkKind(label, s.operands, s.enum, a, r)
		}
		return
	}
	s.check(j, p, r)
}

func (s *spec) unlistedClass() Class {
	if s.unlisted == Safe {
		return Dev
	}
	return s.unlisted
}

// judgeSubs dispatches a command with subcommands (git, go, kubectl): its
// own options come before the subcommand.
func (j *judge) judgeSubs(s *spec, label string, argv []arg, r *res) {
	top := *s
	top.noPermute = true
	p := top.parse(argv[1:])
	for _, w := range p.unknown {
		r.unlisted(s.unlistedClass(), label+": "+shown(w)+" is not an option warden knows to be safe")
	}
	for _, u := range p.opts {
		if u.o.danger != "" {
			r.worse(Dangerous, label+" "+u.name+" "+u.o.danger)
			continue
		}
		if u.hasV {
			j.checkKind(label+" "+u.name, u.o.arg, u.o.enum, u.val, r)
		}
	}
	if len(p.operands) == 0 {
		if sub, ok := s.subs[""]; ok {
			j.judgeSpec(sub, label, argv[:1], r)
			return
		}
		r.unlisted(s.unlistedClass(), label+" without a subcommand warden knows")
		return
	}
	first := p.operands[0]
	sub, ok := s.subs[first.val]
	if !ok || first.hasHole() {
		r.unlisted(s.unlistedClass(), label+" "+shown(first.val)+" is not a subcommand warden knows to be safe")
		return
	}
	if s.check != nil {
		s.check(j, p, r)
	}
	// The subcommand's argv: its name, then everything after it. Paths
	// are relative to git -C DIR.
	k := len(argv) - len(p.rest)
	saveCwd := j.cwd
	for _, d := range p.values("-C") {
		j.cwd = cdTarget(j.cwd, d.val)
	}
	j.judgeSpec(sub, label+" "+first.val, argv[k:], r)
	j.cwd = saveCwd
}

// checkKind judges one value against what it may be.
func (j *judge) checkKind(label string, k kind, enum []string, a arg, r *res) {
	switch k {
	case kAny:
		return
	case kKnown:
		if a.hasHole() {
			r.unlisted(Dev, label+" with a value computed at run time")
		}
	case kNum:
		if !numRE.MatchString(a.val) && !(a.hasHole() && !strings.Contains(a.val, hole)) {
			r.unlisted(Dev, label+" expects a number, not "+shown(a.val))
		}
	case kEnum:
		if !slices.Contains(enum, a.val) {
			r.unlisted(Dev, label+": "+shown(a.val)+" is not a value warden knows to be safe")
		}
	case kPath:
		if c, why := j.readPath(a, label+" "); c > Safe {
			r.worse(c, why)
		}
	case kList:
		if c, why := j.listPath(a, label+" "); c > Safe {
			r.worse(c, why)
		}
	case kName:
		j.nameCtx(a.val)
	case kNone:
		r.unlisted(Dev, label+" takes no value")
	}
}

// shown quotes a word for a reason, marking text the judge cannot see.
func shown(s string) string {
	s = strings.ReplaceAll(s, hole, "…")
	s = strings.ReplaceAll(s, numHole, "…")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return "'" + s + "'"
}

// o builds an opt: names, then the value kind.
func o(k kind, names ...string) opt { return opt{names: names, arg: k} }

// flags builds value-less options from short letters and long names.
func flags(short string, long ...string) []opt {
	var out []opt
	for _, c := range short {
		out = append(out, opt{names: []string{"-" + string(c)}})
	}
	for _, l := range long {
		out = append(out, opt{names: []string{"--" + l}})
	}
	return out
}

func cat(lists ...[]opt) []opt {
	var out []opt
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// danger builds options that make the command Dangerous.
func danger(why string, k kind, names ...string) opt {
	return opt{names: names, arg: k, danger: why}
}
