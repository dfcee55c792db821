package shellpolicy

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// assignValue is what an assignment gives its variable; ok is false for
// a naked name (declare x), which changes no value.
func (j *judge) assignValue(a *syntax.Assign) (*value, bool) {
	if a.Name == nil || a.Naked && a.Value == nil && a.Array == nil {
		return nil, false
	}
	old := j.lookup(a.Name.Value)
	v := &value{}
	switch {
	case a.Array != nil:
		var words []*syntax.Word
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				v.unknown = true
			}
			if e.Value != nil {
				words = append(words, e.Value)
			}
		}
		for _, argv := range j.readings(words) {
			l := make([]string, 0, len(argv))
			for _, x := range argv {
				l = append(l, x.val)
				v.fed = v.fed || x.fed
			}
			v.addList(l)
		}
		if a.Append {
			v.union(old)
			v.unknown = true
		}
	case a.Index != nil:
		v = old.clone()
		v.unknown = true
		v.fed = v.fed || a.Value != nil && j.wordFed(a.Value)
	default:
		var news []arg
		if a.Value == nil {
			news = []arg{{val: ""}}
		} else {
			news = j.word(a.Value)
		}
		for _, n := range news {
			v.fed = v.fed || n.fed
			if a.Append {
				for _, o := range old.vals {
					v.addVal(o + n.val)
				}
				if old.unset {
					v.addVal(n.val)
				}
				if old.unknown || len(old.lists) > 0 {
					v.unknown = true
				}
				continue
			}
			v.addVal(n.val)
		}
	}
	j.holesToUnknown(v)
	return v, true
}

// stored is what a variable holds after v is assigned to it: an integer
// variable holds a number.
func stored(old, v *value) *value {
	if old.integer {
		return &value{unknown: true, num: true, fed: v.fed}
	}
	return v
}

// holesToUnknown turns known values holding holes into "unknown" (keeping
// them, with the hole, for readings that show where the unknown part is).
func (j *judge) holesToUnknown(v *value) {
	numOnly := true
	for _, s := range v.vals {
		if strings.Contains(s, hole) {
			v.unknown, numOnly = true, false
		} else if strings.Contains(s, numHole) {
			v.unknown = true
		}
	}
	for _, l := range v.lists {
		for _, s := range l {
			if strings.Contains(s, hole) {
				v.unknown, numOnly = true, false
			}
		}
	}
	if v.unknown && numOnly && !v.num {
		v.num = len(v.vals) > 0
	}
}

// valueCtx judges the evaluation contexts an assignment of v to name
// creates: arithmetic for an integer variable, a name for a nameref, a
// prompt for PS0…PS4, code for PROMPT_COMMAND.
func (j *judge) valueCtx(name string, v *value, integer, nameref bool) {
	old := j.lookup(name)
	switch {
	case integer || old.integer:
		j.valueArith(name, v, 0)
	case nameref || old.nameref:
		if v.unknown {
			j.ctx.add(Dangerous, name+" becomes a reference to a variable whose name the judge cannot see")
		}
		for _, s := range v.vals {
			j.nameCtx(s)
		}
	}
	switch name {
	case "PS0", "PS1", "PS2", "PS3", "PS4":
		j.promptCtx(name, v)
	case "PROMPT_COMMAND":
		if v.unknown || v.fed {
			j.ctx.add(Dangerous, "PROMPT_COMMAND is code and its value is not known")
		}
		for _, s := range v.vals {
			j.nestedString(s, syntax.Pos{}, stream{})
		}
	}
}

// assignClass judges NAME=value. exported is true when the variable
// reaches a command's environment (a prefix assignment, env NAME=…).
func (j *judge) assignClass(a *syntax.Assign, exported bool) (Class, string) {
	if a.Name == nil {
		return Safe, ""
	}
	name := a.Name.Value
	saveCtx := j.ctx
	j.ctx = ctxNote{}
	if v, ok := j.assignValue(a); ok {
		j.valueCtx(name, v, false, false)
	}
	note := j.ctx
	j.ctx = saveCtx
	class, why := nameClass(name, exported)
	if note.class > class {
		class, why = note.class, note.why
	}
	return class, why
}

// nameClass judges setting a variable by its name alone.
func nameClass(name string, exported bool) (Class, string) {
	switch {
	case shellSensitive[name] || strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "DYLD_"):
		return Dangerous, fmt.Sprintf("sets %s, which changes how commands run", name)
	case harmlessEnv[name] || strings.HasPrefix(name, "LC_"):
		return Safe, "sets " + name
	case exported:
		return Dangerous, fmt.Sprintf("sets environment variable %s for the command (it can change what the command runs)", name)
	}
	return Safe, "sets shell variable " + name
}

// doAssign applies an assignment to the scope.
func (j *judge) doAssign(a *syntax.Assign, exported bool) {
	v, ok := j.assignValue(a)
	if !ok {
		return
	}
	v = stored(j.lookup(a.Name.Value), v)
	v.exp = v.exp || exported
	j.assign(a.Name.Value, v)
}

// declFlags are the attributes a declaration sets.
type declFlags struct {
	integer, nameref, export, functions bool
}

func (f *declFlags) parse(s string) {
	if !strings.HasPrefix(s, "-") {
		return // +x removes attributes
	}
	for _, c := range s[1:] {
		switch c {
		case 'i':
			f.integer = true
		case 'n':
			f.nameref = true
		case 'x':
			f.export = true
		case 'f', 'F':
			f.functions = true
		}
	}
}

// decl judges declare/local/export/readonly/typeset/nameref.
func (j *judge) decl(d *syntax.DeclClause, s *syntax.Stmt) {
	saveCtx := j.ctx
	defer func() { j.ctx = saveCtx }()
	j.ctx = ctxNote{}
	variant := d.Variant.Value
	flags := declFlags{export: variant == "export", nameref: variant == "nameref"}
	class, why := Safe, "declares shell variables"
	worse := func(c Class, w string) {
		if c > class {
			class, why = c, w
		}
	}
	var dyn []arg
	for _, a := range d.Args {
		j.substs(a)
		if a.Naked && a.Name == nil && a.Value != nil {
			for _, x := range j.word(a.Value) {
				if strings.HasPrefix(x.val, "-") || strings.HasPrefix(x.val, "+") {
					flags.parse(x.val)
				} else {
					dyn = append(dyn, x)
				}
			}
		}
	}
	for _, x := range dyn {
		if c, w := j.declString(x, flags); c > Safe {
			worse(c, w)
		}
	}
	for _, a := range d.Args {
		if a.Name == nil {
			continue
		}
		if a.Index != nil {
			j.arith(a.Index)
		}
		name := a.Name.Value
		if c, w := nameClass(name, flags.export); c > Safe && (a.Value != nil || a.Array != nil || shellSensitive[name]) {
			worse(c, w)
		}
		if v, ok := j.assignValue(a); ok {
			j.valueCtx(name, v, flags.integer, flags.nameref)
		}
	}
	worse(j.ctx.class, j.ctx.why)
	argv := []string{variant}
	for _, a := range d.Args {
		argv = append(argv, j.text(a))
	}
	j.run([]arg{{val: variant}})
	i := j.add(Simple{Argv: argv, Text: j.text(d), Class: class, Why: why, Pos: j.pos(d.Pos())})
	if c, w := j.redirects(s.Redirs, i, stream{}); c > class && i >= 0 && j.v.Commands[i].Rule == "" {
		j.v.Commands[i].Class, j.v.Commands[i].Why = c, w
	}
	for _, a := range d.Args {
		if a.Name == nil {
			continue
		}
		v, ok := j.assignValue(a)
		if !ok {
			v = j.lookup(a.Name.Value).clone()
		} else if flags.integer {
			v = &value{unknown: true, num: true, fed: v.fed}
		} else {
			v = stored(j.lookup(a.Name.Value), v)
		}
		v.integer = v.integer || flags.integer
		v.nameref = v.nameref || flags.nameref
		v.exp = v.exp || flags.export
		j.assign(a.Name.Value, v)
	}
	for _, x := range dyn {
		j.applyDeclString(x, flags)
	}
}

// declString judges one declaration argument given as a string
// (declare "$x", declare 'a[i]=v', command export …): bash parses the
// name, evaluates its subscript and assigns the value.
func (j *judge) declString(x arg, flags declFlags) (Class, string) {
	if x.fed {
		j.ctxBlock("a declaration evaluates downloaded or decoded data")
	}
	if x.hasHole() {
		return Dangerous, "declaration with arguments computed at run time (a name like a[$(cmd)] would run cmd): " + x.val
	}
	name, val, hasVal := strings.Cut(x.val, "=")
	name = strings.TrimSuffix(name, "+")
	saveCtx := j.ctx
	j.ctx = ctxNote{}
	j.nameCtx(name)
	base := name
	if k := strings.IndexByte(name, '['); k >= 0 {
		base = name[:k]
	}
	if hasVal {
		j.valueCtx(base, &value{vals: []string{val}}, flags.integer, flags.nameref)
	}
	note := j.ctx
	j.ctx = saveCtx
	class, why := Safe, ""
	if hasVal {
		class, why = nameClass(base, flags.export)
	}
	if note.class > class {
		class, why = note.class, note.why
	}
	return class, why
}

func (j *judge) applyDeclString(x arg, flags declFlags) {
	name, val, hasVal := strings.Cut(x.val, "=")
	name = strings.TrimSuffix(name, "+")
	if k := strings.IndexByte(name, '['); k >= 0 {
		name = name[:k]
		hasVal, val = false, ""
		if isName(name) {
			v := j.lookup(name).clone()
			v.unknown = true
			j.assign(name, v)
		}
	}
	if !isName(name) {
		return
	}
	var v *value
	if hasVal {
		v = &value{vals: []string{val}, fed: x.fed}
		j.holesToUnknown(v)
	} else {
		v = j.lookup(name).clone()
	}
	v.integer = v.integer || flags.integer
	v.nameref = v.nameref || flags.nameref
	v.exp = v.exp || flags.export
	j.assign(name, v)
}

// declArgv judges a declaration builtin reached as a plain command
// (command declare …, builtin export …).
func (j *judge) declArgv(base string, argv []arg, r *res) {
	flags := declFlags{export: base == "export"}
	for _, a := range argv[1:] {
		if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
			flags.parse(a.val)
		}
	}
	r.worse(Safe, base+" declares shell variables")
	for _, a := range argv[1:] {
		if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
			continue
		}
		if c, w := j.declString(a, flags); c > Safe {
			r.worse(c, w)
		}
		j.applyDeclString(a, flags)
	}
}
