package shellpolicy

import (
	"fmt"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// funcDecl records a function, looks for a fork bomb (a function that calls
// itself in a pipeline or in the background), and judges its body where it
// is defined; each call judges it again with the call's arguments and the
// variables as they are then.
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
	name := j.funcName(f)
	i := j.add(Simple{Argv: []string{"function", name}, Text: j.text(f), Class: Safe, Why: "defines a function; its body is judged", Pos: j.pos(f.Pos())})
	if bomb != nil {
		j.blockAt(i, RuleForkBomb, fmt.Sprintf("function %s calls itself in a pipeline or in the background (fork bomb)", name), j.pos(bomb.Pos()))
	}
	saved, saveCwd := j.sc.clone(), j.cwd
	if names["command_not_found_handle"] {
		// bash calls it for every unknown command, with any arguments.
		j.bindPositional([]arg{{val: "bash"}, {val: hole}})
	}
	j.stmt(f.Body, stream{})
	j.sc, j.cwd = saved, saveCwd
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

// infinite reports a loop whose condition is always true.
func (j *judge) infinite(c *syntax.WhileClause) bool {
	if len(c.Cond) != 1 {
		return false
	}
	t := strings.TrimSpace(j.text(c.Cond[0].Cmd))
	if c.Until {
		return t == "false"
	}
	switch t {
	case "true", ":", "((1))", "(( 1 ))", "[ 1 ]", "test 1", "/bin/true", "/usr/bin/true":
		return true
	}
	return false
}

// bgAmp finds a background & in text (not && or a redirection's &).
var bgAmp = regexp.MustCompile(`(^|[^&>|])&($|[^&>])`)

// forkLoop blocks an endless loop that starts background processes,
// directly or in a shell it runs: processes pile up without bound.
func (j *judge) forkLoop(c *syntax.WhileClause) {
	found := false
	for _, s := range c.Do {
		syntax.Walk(s, func(n syntax.Node) bool {
			if st, ok := n.(*syntax.Stmt); ok && (st.Background || st.Coprocess) {
				found = true
			}
			return !found
		})
	}
	if !found {
		for _, s := range c.Do {
			if bgAmp.MatchString(j.text(s)) {
				found = true
			}
		}
	}
	if found {
		j.v.block(RuleForkBomb, "an endless loop starts background processes (fork bomb)", j.pos(c.Pos()))
	}
}

// effects applies what a builtin assigns: read, mapfile, printf -v,
// getopts, unset, set --, shift, wait -p, and ${x:=w} in its words.
func (j *judge) effects(words []*syntax.Word, argv []arg, in stream) (Class, string) {
	saveCtx := j.ctx
	j.ctx = ctxNote{}
	defer func() { j.ctx = saveCtx }()
	j.applyEffects(words, argv, in)
	return j.ctx.class, j.ctx.why
}

// set assigns v to name through the contexts an assignment creates.
func (j *judge) set(name string, v *value) {
	j.valueCtx(name, v, false, false)
	j.assign(name, stored(j.lookup(name), v))
}

func (j *judge) applyEffects(words []*syntax.Word, argv []arg, in stream) {
	for _, w := range words {
		syntax.Walk(w, func(n syntax.Node) bool {
			p, ok := n.(*syntax.ParamExp)
			if !ok || p.Param == nil || p.Exp == nil {
				return true
			}
			if p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull {
				v := j.lookup(p.Param.Value).clone()
				for _, d := range j.word(p.Exp.Word) {
					v.addVal(d.val)
					v.fed = v.fed || d.fed
				}
				j.holesToUnknown(v)
				j.set(p.Param.Value, v)
			}
			return true
		})
	}
	if len(argv) == 0 || argv[0].hasHole() {
		return
	}
	args := argv[1:]
	anyFed := in.fed
	for _, a := range args {
		anyFed = anyFed || a.fed
	}
	switch baseName(argv[0].val) {
	case "read":
		names := []string{}
		for k := 0; k < len(args); k++ {
			v := args[k].val
			switch {
			case v == "-a" && k+1 < len(args):
				names = append(names, args[k+1].val)
				k++
			case v == "-d" || v == "-i" || v == "-n" || v == "-N" || v == "-p" || v == "-t" || v == "-u":
				k++
			case strings.HasPrefix(v, "-"):
			default:
				names = append(names, v)
			}
		}
		if len(names) == 0 {
			names = []string{"REPLY"}
		}
		for _, n := range names {
			if isName(n) {
				j.set(n, &value{unknown: true, fed: in.fed})
			}
		}
	case "mapfile", "readarray":
		name := "MAPFILE"
		if len(args) > 0 && isName(args[len(args)-1].val) {
			name = args[len(args)-1].val
		}
		j.setUnknown(name, in.fed)
	case "printf":
		if len(args) >= 2 && strings.HasPrefix(args[0].val, "-v") && args[0].val != "-v" {
			// -vNAME: the name attached
			args = append([]arg{{val: "-v"}, {val: args[0].val[2:]}}, args[1:]...)
		}
		if len(args) >= 2 && args[0].val == "-v" {
			name := args[1].val
			if k := strings.IndexByte(name, '['); k > 0 {
				name = name[:k]
			}
			if !isName(name) {
				return
			}
			if t, ok := echoText(j.lang, "printf", args[2:]); ok {
				j.set(name, &value{vals: []string{t}, fed: anyFed})
			} else {
				j.set(name, &value{unknown: true, fed: anyFed})
			}
		}
	case "getopts":
		if len(args) >= 2 && isName(args[1].val) {
			j.setUnknown(args[1].val, false)
		}
		j.setUnknown("OPTARG", false)
	case "wait":
		for k, a := range args {
			if a.val == "-p" && k+1 < len(args) && isName(args[k+1].val) {
				j.assign(args[k+1].val, &value{unknown: true, num: true})
			}
		}
	case "unset":
		fn := false
		for _, a := range args {
			switch {
			case a.val == "-f":
				fn = true
			case strings.HasPrefix(a.val, "-"):
			case !fn && isName(a.val):
				j.assign(a.val, &value{unset: true})
			}
		}
	case "set":
		for k, a := range args {
			if a.val == "--" || !strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "+") {
				rest := args[k:]
				if a.val == "--" {
					rest = args[k+1:]
				}
				j.bindPositional(append([]arg{{val: "bash"}}, rest...))
				return
			}
			if a.val == "-o" || a.val == "+o" {
				break
			}
		}
	case "shift":
		at := j.lookup("@")
		if len(at.lists) == 1 && !at.unknown {
			l := at.lists[0]
			n := 1
			if len(args) > 0 {
				fmt.Sscan(args[0].val, &n)
			}
			if n <= len(l) {
				zero := j.lookup("0")
				a0 := arg{val: "bash"}
				if len(zero.vals) == 1 {
					a0.val = zero.vals[0]
				}
				rest := []arg{a0}
				for _, s := range l[n:] {
					rest = append(rest, arg{val: s, fed: at.fed})
				}
				j.bindPositional(rest)
				return
			}
		}
		for _, n := range positionalNames {
			j.sc.m[n] = &value{unknown: true, unset: true}
		}
	}
}
