package shellpolicy

import (
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// arg is one resolved word of a command.
type arg struct {
	val      string // the value; the source text when computed
	computed bool   // not known before run time
	glob     bool   // has unquoted glob characters (only tracked for static words)
	pos      syntax.Pos
}

// maxBraceFields bounds brace expansion ({a,b}{c,d}…, {1..N}); a word that
// would expand to more fields is treated as computed.
const maxBraceFields = 64

// maxVariants bounds how many combinations of known variable values one
// simple command is judged under.
const maxVariants = 16

// varInfo is what the input statically assigns to one variable.
type varInfo struct {
	vals    []string
	list    bool // a positional list ($@), vals are its elements
	unknown bool // assigned something not known before run time
}

// env is the environment words are expanded in: only what the input itself
// assigns (warden runs commands with a scrubbed environment), HOME as "~".
type env struct {
	m map[string]expand.Variable
}

func (e env) Get(name string) expand.Variable {
	if v, ok := e.m[name]; ok {
		return v
	}
	switch {
	case name == "HOME":
		return expand.Variable{Set: true, Kind: expand.String, Str: "~"}
	case strings.HasPrefix(name, "HOME "):
		// ~user: keep it as written, never look the user up.
		return expand.Variable{Set: true, Kind: expand.String, Str: "~" + name[5:]}
	}
	return expand.Variable{}
}

func (e env) Each(f func(string, expand.Variable) bool) {
	for k, v := range e.m {
		if !f(k, v) {
			return
		}
	}
}

// wordRefs reports the parameter names a word references and whether the
// word can be resolved statically given known values for them.
func wordRefs(w *syntax.Word, refs map[string]bool) (ok bool) {
	ok = true
	syntax.Walk(w, func(n syntax.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ExtGlob:
			ok = false
		case *syntax.ParamExp:
			if n.Index != nil {
				if w, ok := n.Index.(*syntax.Word); !ok || w.Lit() != "@" && w.Lit() != "*" {
					ok = false
					return false
				}
			}
			if n.Excl || n.Param == nil || n.NestedParam != nil || n.Flags != nil {
				ok = false
				return false
			}
			refs[n.Param.Value] = true
		case *syntax.ArithmExp:
			// Arithmetic can index arrays with code (a[$(cmd)]); only plain
			// arithmetic on known names is resolved.
		}
		return true
	})
	return ok
}

// plainLit reports a word that is one literal with nothing to expand.
func plainLit(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	return ok && l.Value != "" && !strings.ContainsAny(l.Value, "\\~{*?[$`'\"")
}

// hasGlob reports unquoted, unescaped glob characters in a word.
func hasGlob(w *syntax.Word) bool {
	for _, p := range w.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			continue
		}
		s := lit.Value
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '*', '?':
				return true
			case '[':
				if strings.IndexByte(s[i+1:], ']') >= 0 {
					return true
				}
			}
		}
	}
	return false
}

// braceFields estimates how many fields brace expansion makes of w.
func braceFields(w *syntax.Word) int {
	cp := *w
	if !syntax.SplitBraces(&cp) {
		return 1
	}
	return partsFields(cp.Parts)
}

func partsFields(parts []syntax.WordPart) int {
	n := 1
	for _, p := range parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		var k int
		if b.Sequence {
			k = seqLen(b)
		} else {
			for _, e := range b.Elems {
				k += partsFields(e.Parts)
				if k > maxBraceFields {
					return maxBraceFields + 1
				}
			}
		}
		n *= max(k, 1)
		if n > maxBraceFields {
			return maxBraceFields + 1
		}
	}
	return n
}

func seqLen(b *syntax.BraceExp) int {
	if len(b.Elems) < 2 {
		return 1
	}
	from, to := b.Elems[0].Lit(), b.Elems[1].Lit()
	x, err1 := strconv.Atoi(from)
	y, err2 := strconv.Atoi(to)
	if err1 != nil || err2 != nil {
		if len(from) == 1 && len(to) == 1 { // {a..z}
			return absInt(int(to[0])-int(from[0])) + 1
		}
		return 1
	}
	if absInt(x) > 1<<30 || absInt(y) > 1<<30 {
		return maxBraceFields + 1
	}
	step := 1
	if len(b.Elems) > 2 {
		if s, err := strconv.Atoi(b.Elems[2].Lit()); err == nil && s != 0 {
			step = absInt(s)
		}
	}
	return absInt(y-x)/step + 1
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// resolve expands the words of one simple command. A variable the input
// assigns is judged under each value it may hold: one argv per combination
// when there are at most maxVariants, else one argv per single value (the
// other variables at their first value), so that no value escapes
// judgement. A word using anything else (substitutions, unassigned
// variables, huge brace expansions) is computed. When a variable may also
// hold an unknown value, one more argv has those words computed.
func (j *judge) resolve(words []*syntax.Word) [][]arg {
	static := make([]bool, len(words))
	wrefs := make([]map[string]bool, len(words))
	var names []string
	seen := map[string]bool{}
	partial := false
	for i, w := range words {
		if plainLit(w) {
			static[i] = true
			continue
		}
		r := map[string]bool{}
		ok := wordRefs(w, r) && braceFields(w) <= maxBraceFields
		for name := range r {
			vi := j.vars[name]
			if vi == nil {
				if name != "HOME" {
					ok = false
				}
				continue
			}
			if len(vi.vals) == 0 && !vi.list {
				ok = false
			}
			if vi.unknown {
				partial = true
			}
		}
		static[i], wrefs[i] = ok, r
		if !ok {
			continue
		}
		for name := range r {
			if j.vars[name] != nil && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	if vi := j.vars["IFS"]; vi != nil && !seen["IFS"] {
		if vi.unknown || vi.list {
			partial = true
		}
		if len(vi.vals) > 0 && !vi.list {
			names = append(names, "IFS")
		}
	}
	sort.Strings(names)
	combos := j.combos(names)
	out := make([][]arg, 0, len(combos)+1)
	for _, c := range combos {
		out = append(out, j.expandWords(words, static, c))
	}
	if partial {
		st := make([]bool, len(static))
		for i := range static {
			st[i] = static[i]
			for name := range wrefs[i] {
				if vi := j.vars[name]; vi != nil && vi.unknown {
					st[i] = false
				}
			}
		}
		out = append(out, j.expandWords(words, st, j.envFor(names, nil)))
	}
	return out
}

// combos lists the environments a command is judged under.
func (j *judge) combos(names []string) []env {
	total := 1
	var scalar []string
	for _, name := range names {
		if vi := j.vars[name]; !vi.list {
			scalar = append(scalar, name)
			total *= len(vi.vals)
			if total > maxVariants {
				total = maxVariants + 1
			}
		}
	}
	var out []env
	if total <= maxVariants {
		idx := map[string]int{}
		for {
			out = append(out, j.envFor(names, idx))
			k := 0
			for ; k < len(scalar); k++ {
				idx[scalar[k]]++
				if idx[scalar[k]] < len(j.vars[scalar[k]].vals) {
					break
				}
				idx[scalar[k]] = 0
			}
			if k == len(scalar) {
				return out
			}
		}
	}
	out = append(out, j.envFor(names, nil))
	for _, name := range scalar {
		for v := 1; v < len(j.vars[name].vals); v++ {
			out = append(out, j.envFor(names, map[string]int{name: v}))
		}
	}
	return out
}

// envFor builds the environment with each name at value index idx[name].
func (j *judge) envFor(names []string, idx map[string]int) env {
	e := env{m: make(map[string]expand.Variable, len(names))}
	for _, name := range names {
		vi := j.vars[name]
		if vi.list {
			e.m[name] = expand.Variable{Set: true, Kind: expand.Indexed, List: vi.vals}
			continue
		}
		e.m[name] = expand.Variable{Set: true, Kind: expand.String, Str: vi.vals[idx[name]]}
	}
	if at, ok := e.m["@"]; ok {
		e.m["*"] = at
		e.m["#"] = expand.Variable{Set: true, Kind: expand.String, Str: strconv.Itoa(len(at.List))}
		for k, v := range at.List {
			e.m[strconv.Itoa(k+1)] = expand.Variable{Set: true, Kind: expand.String, Str: v}
		}
	}
	return e
}

func (j *judge) expandWords(words []*syntax.Word, static []bool, e env) []arg {
	cfg := &expand.Config{Env: e, NoUnset: true}
	argv := make([]arg, 0, len(words))
	for i, w := range words {
		if static[i] && plainLit(w) {
			argv = append(argv, arg{val: w.Parts[0].(*syntax.Lit).Value, pos: w.Pos()})
			continue
		}
		if static[i] {
			fields, err := expand.Fields(cfg, w)
			if err == nil {
				g := hasGlob(w)
				for _, f := range fields {
					argv = append(argv, arg{val: f, glob: g, pos: w.Pos()})
				}
				continue
			}
		}
		argv = append(argv, arg{val: j.text(w), computed: true, pos: w.Pos()})
	}
	return argv
}

// staticString resolves a word that must be a single known string (the
// argument of sh -c, a heredoc body…). ok is false when it is not known.
func (j *judge) staticWord(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	vs := j.resolve([]*syntax.Word{w})
	if len(vs) != 1 || len(vs[0]) != 1 || vs[0][0].computed {
		return "", false
	}
	return vs[0][0].val, true
}

// text is the source text of a node.
func (j *judge) text(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(j.src) || s > e {
		return ""
	}
	return j.src[s:e]
}

// collectVars records every static assignment in f so that words using
// those variables can be judged under each value they may hold.
func (j *judge) collectVars(f *syntax.File) {
	mark := func(name string) {
		vi := j.vars[name]
		if vi == nil {
			vi = &varInfo{}
			j.vars[name] = vi
		}
		vi.unknown = true
	}
	add := func(name, val string) {
		vi := j.vars[name]
		if vi == nil {
			vi = &varInfo{}
			j.vars[name] = vi
		}
		for _, v := range vi.vals {
			if v == val {
				return
			}
		}
		vi.vals = append(vi.vals, val)
	}
	lit := func(w *syntax.Word) (string, bool) {
		if w == nil {
			return "", true
		}
		r := map[string]bool{}
		if !wordRefs(w, r) || len(r) > 0 || braceFields(w) > 1 {
			return "", false
		}
		fs, err := expand.Fields(&expand.Config{Env: env{}, NoUnset: true}, w)
		if err != nil || len(fs) > 1 {
			return "", false
		}
		if len(fs) == 0 {
			return "", true
		}
		return fs[0], true
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name == nil {
				return true
			}
			name := n.Name.Value
			if n.Append && n.Array == nil && n.Index == nil {
				// a+=x: each value it may hold, extended (flow-insensitive)
				app, ok := lit(n.Value)
				vi := j.vars[name]
				if !ok || vi == nil || vi.unknown || vi.list {
					mark(name)
					return true
				}
				for _, v := range append([]string(nil), vi.vals...) {
					add(name, v+app)
				}
				return true
			}
			if n.Array != nil && n.Index == nil && !n.Append && j.vars[name] == nil {
				// a=(x y z) with literal elements: a list
				var elems []string
				for _, e := range n.Array.Elems {
					v, ok := lit(e.Value)
					if !ok || e.Index != nil {
						mark(name)
						return true
					}
					elems = append(elems, v)
				}
				j.vars[name] = &varInfo{vals: elems, list: true}
				return true
			}
			if n.Array != nil || n.Index != nil || n.Append {
				mark(name)
				return true
			}
			if n.Naked {
				return true
			}
			if vi := j.vars[name]; vi != nil && vi.list {
				mark(name)
				return true
			}
			if v, ok := lit(n.Value); ok {
				add(name, v)
			} else {
				mark(name)
			}
		case *syntax.WordIter:
			name := n.Name.Value
			if !n.InPos.IsValid() {
				mark(name) // for x; do … (the positional parameters)
				return true
			}
			for _, w := range n.Items {
				if v, ok := lit(w); ok {
					add(name, v)
				} else {
					mark(name)
				}
			}
		case *syntax.CallExpr:
			// Builtins that assign from data: read, mapfile, printf -v, getopts.
			if len(n.Args) == 0 {
				return true
			}
			switch n.Args[0].Lit() {
			case "read", "mapfile", "readarray", "printf", "getopts", "let", "declare", "typeset", "local", "export":
				for _, w := range n.Args[1:] {
					name := w.Lit()
					if k := strings.IndexByte(name, '='); k > 0 {
						name = name[:k]
					}
					if isName(name) {
						mark(name)
					}
				}
			}
		case *syntax.CStyleLoop, *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause:
			syntax.Walk(n, func(m syntax.Node) bool {
				if b, ok := m.(*syntax.BinaryArithm); ok {
					if w, ok := b.X.(*syntax.Word); ok && isName(w.Lit()) && b.Op >= syntax.Assgn && b.Op <= syntax.PowAssgn {
						mark(w.Lit())
					}
				}
				if u, ok := m.(*syntax.UnaryArithm); ok {
					if w, ok := u.X.(*syntax.Word); ok && isName(w.Lit()) && (u.Op == syntax.Inc || u.Op == syntax.Dec) {
						mark(w.Lit())
					}
				}
				return true
			})
		}
		return true
	})
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return true
}
