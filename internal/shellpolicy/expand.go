package shellpolicy

import (
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// arg is one field of a command after expansion, under one reading.
type arg struct {
	val   string // may contain hole: text the judge cannot see
	pos   syntax.Pos
	glob  bool // unquoted glob characters in its literal parts
	fed   bool // holds downloaded or decoded data
	subst bool // comes from a command substitution
	// proc is what the process substitution this word names prints.
	proc *stream
}

func (a arg) hasHole() bool { return hasHole(a.val) }

// maxVariants bounds how many combinations of variable values one simple
// command is judged under; beyond it each variable's values are tried one
// at a time, the others at their first value, so no value escapes.
const maxVariants = 16

// maxBraceFields bounds brace expansion; a word that would expand to more
// fields is unknown text.
const maxBraceFields = 64

// readEnv is the environment of one reading: every variable at one of
// the values it may hold. With anything set, text the judge cannot see is
// a hole; without, it is empty (an unset variable, a command that printed
// nothing).
type readEnv struct {
	j        *judge
	pick     map[string]int
	anything bool
	// set holds what expansions assign within the reading (${x:=w}).
	set map[string]expand.Variable
}

// Set records an assignment made by an expansion (${x:=w}, $((x=1))).
func (e *readEnv) Set(name string, vr expand.Variable) error {
	if e.set == nil {
		e.set = map[string]expand.Variable{}
	}
	e.set[name] = vr
	return nil
}

func (e *readEnv) Get(name string) expand.Variable {
	if vr, ok := e.set[name]; ok {
		return vr
	}
	if user, ok := strings.CutPrefix(name, "HOME "); ok {
		switch t := strings.TrimLeft(user, "+-"); {
		case user == "+" || user == "0" || user == "+0":
			return e.Get("PWD") // ~+ and ~0 are the working directory
		case user == "-" || isDigits(t) && t != "":
			// ~- is OLDPWD, ~N a directory stack entry.
			if e.anything {
				return expand.Variable{Set: true, Kind: expand.String, Str: hole}
			}
			return expand.Variable{}
		}
		// ~user is never looked up: kept as written (a path outside the
		// workspace), and unknown where unknown text is a hole — bash
		// gives the user's home directory (~nobody is /nonexistent).
		if e.anything {
			return expand.Variable{Set: true, Kind: expand.String, Str: hole}
		}
		return expand.Variable{Set: true, Kind: expand.String, Str: "~" + user}
	}
	v := e.j.lookup(name)
	idx, ok := e.pick[name]
	if !ok {
		if len(v.vals)+len(v.lists) == 1 && !v.unset && !v.unknown {
			idx = 0
		} else {
			idx = len(v.vals) + len(v.lists) // the unknown slot
		}
	}
	switch {
	case idx < len(v.vals):
		return expand.Variable{Set: true, Kind: expand.String, Str: v.vals[idx]}
	case idx < len(v.vals)+len(v.lists):
		return expand.Variable{Set: true, Kind: expand.Indexed, List: v.lists[idx-len(v.vals)]}
	}
	if v.unknown && e.anything {
		h := hole
		if v.num {
			h = numHole
		}
		if name == "@" || name == "*" {
			return expand.Variable{Set: true, Kind: expand.Indexed, List: []string{h}}
		}
		return expand.Variable{Set: true, Kind: expand.String, Str: h}
	}
	if v.unset || len(v.vals)+len(v.lists) == 0 && !v.unknown {
		return expand.Variable{}
	}
	if len(v.vals) > 0 {
		return expand.Variable{Set: true, Kind: expand.String, Str: v.vals[0]}
	}
	if len(v.lists) > 0 {
		return expand.Variable{Set: true, Kind: expand.Indexed, List: v.lists[0]}
	}
	return expand.Variable{Set: true, Kind: expand.String}
}

func (e *readEnv) Each(func(string, expand.Variable) bool) {}

// wordNames adds the parameter names a word references to names.
func wordNames(n syntax.Node, names map[string]bool) {
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.ParamExp:
			if m.Param != nil {
				names[m.Param.Value] = true
				if m.Param.Value == "*" || m.Param.Value == "@" {
					names["@"], names["*"] = true, true
				}
			}
		case *syntax.Word:
			// a bare name in arithmetic ($((x)), a[i]) reads x too
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		}
		return true
	})
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.ArithmExp, *syntax.ParamExp:
			syntax.Walk(m, func(k syntax.Node) bool {
				if w, ok := k.(*syntax.Word); ok && isName(w.Lit()) {
					names[w.Lit()] = true
				}
				if _, ok := k.(*syntax.CmdSubst); ok {
					return false
				}
				return true
			})
			return false
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		}
		return true
	})
}

// readings expands the words of one simple command under each reading:
// every combination of the values its variables may hold (bounded by
// maxVariants), each with unknown text empty and with unknown text a hole.
// Identical argvs are judged once.
func (j *judge) readings(words []*syntax.Word) [][]arg {
	j.work++
	if allPlain(words) {
		argv := make([]arg, len(words))
		for k, w := range words {
			argv[k] = arg{val: w.Parts[0].(*syntax.Lit).Value, pos: w.Pos()}
		}
		return [][]arg{argv}
	}
	names := map[string]bool{}
	for _, w := range words {
		wordNames(w, names)
	}
	var list []string
	for n := range names {
		if j.lookup(n).choices() > 1 {
			list = append(list, n)
		}
	}
	sort.Strings(list)
	var out [][]arg
	seen := map[string]bool{}
	picks := j.picks(list)
	j.work += 2 * len(picks)
	info := j.wordInfo(words)
	for _, pick := range picks {
		for _, anything := range []bool{false, true} {
			argv := j.expandWords(words, info, &readEnv{j: j, pick: pick, anything: anything})
			key := argvKey(argv)
			if !seen[key] {
				seen[key] = true
				out = append(out, argv)
			}
		}
	}
	return out
}

// allPlain reports words that are each one literal with nothing to expand.
func allPlain(words []*syntax.Word) bool {
	for _, w := range words {
		if len(w.Parts) != 1 {
			return false
		}
		l, ok := w.Parts[0].(*syntax.Lit)
		if !ok || l.Value == "" || strings.ContainsAny(l.Value, "\\~{}*?[$`'\"") {
			return false
		}
	}
	return true
}

func argvKey(argv []arg) string {
	var b strings.Builder
	for _, a := range argv {
		b.WriteString(a.val)
		if a.glob {
			b.WriteByte(1)
		}
		if a.fed {
			b.WriteByte(2)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// picks lists the combinations of value indexes to judge a command under.
func (j *judge) picks(names []string) []map[string]int {
	total := 1
	for _, n := range names {
		total *= j.lookup(n).choices()
		if total > maxVariants {
			break
		}
	}
	if total <= maxVariants {
		out := []map[string]int{{}}
		for _, n := range names {
			c := j.lookup(n).choices()
			var next []map[string]int
			for _, p := range out {
				for k := 0; k < c; k++ {
					q := make(map[string]int, len(p)+1)
					for a, b := range p {
						q[a] = b
					}
					q[n] = k
					next = append(next, q)
				}
			}
			out = next
		}
		return out
	}
	out := []map[string]int{{}}
	for _, n := range names {
		for k := 1; k < j.lookup(n).choices(); k++ {
			out = append(out, map[string]int{n: k})
		}
	}
	return out
}

// expandWords expands words under one reading.
// wordFacts are what a word is, whatever the reading.
type wordFacts struct {
	fed, subst, glob bool
}

func (j *judge) wordInfo(words []*syntax.Word) []wordFacts {
	out := make([]wordFacts, len(words))
	for k, w := range words {
		out[k] = wordFacts{fed: j.wordFed(w), subst: hasCmdSubst(w), glob: hasGlob(w) || j.globVar(w)}
	}
	return out
}

func (j *judge) expandWords(words []*syntax.Word, info []wordFacts, e *readEnv) []arg {
	cfg := &expand.Config{
		Env: e,
		CmdSubst: func(w io.Writer, cs *syntax.CmdSubst) error {
			o := j.substOut[cs]
			switch {
			case o != nil && o.text != nil:
				io.WriteString(w, *o.text)
			case e.anything && o != nil && o.num:
				io.WriteString(w, numHole)
			case e.anything:
				io.WriteString(w, hole)
			}
			return nil
		},
		ProcSubst: procPath,
	}
	argv := make([]arg, 0, len(words))
	for k, w := range words {
		if v, ok := literalWord(w); ok {
			argv = append(argv, arg{val: v, pos: w.Pos()})
			continue
		}
		fed, subst := info[k].fed, info[k].subst
		if j.lang != syntax.LangPOSIX {
			var unknown bool
			if w, unknown = argTilde(w, e); unknown {
				if e.anything {
					argv = append(argv, arg{val: hole, pos: w.Pos(), fed: fed})
				}
				continue
			}
			if braceRangeQuotes(w) {
				j.ctx.add(Dangerous, "a brace sequence crosses \\ and `, which bash reads as a quote and a command substitution")
				j.runAnything()
				if e.anything {
					argv = append(argv, arg{val: hole, glob: true, pos: w.Pos(), fed: fed})
				}
				continue
			}
			if braceDisagrees(w) {
				// Unknown, and maybe several words (glob: one or more).
				if e.anything {
					argv = append(argv, arg{val: hole, glob: true, pos: w.Pos(), fed: fed})
				}
				continue
			}
		}
		if found, _ := dqSingleQuotes(w); found || j.paramDisagrees(w, e) {
			// Unknown, and maybe several words (${a[@]:RANDOM}).
			if e.anything {
				argv = append(argv, arg{val: hole, glob: true, pos: w.Pos(), fed: fed})
			}
			continue
		}
		w = promptHoles(ctrlEscapes(w))
		if j.lang != syntax.LangPOSIX && paramBeforeBrace(w) {
			ws := j.bashOrderWords(w)
			if ws == nil {
				if e.anything {
					argv = append(argv, arg{val: hole, pos: w.Pos(), fed: fed})
				}
				continue
			}
			for _, x := range ws {
				fields, err := expand.Fields(cfg, noBraces(x))
				if err != nil {
					fields = []string{hole}
				}
				for _, f := range fields {
					argv = append(argv, arg{val: f, glob: hasGlob(x), pos: w.Pos(), fed: fed, subst: subst})
				}
			}
			continue
		}
		if j.lang == syntax.LangPOSIX {
			w = noBraces(w)
		} else if braceFields(w) > maxBraceFields {
			argv = append(argv, arg{val: hole, pos: w.Pos(), fed: fed})
			continue
		}
		fields, err := expand.Fields(cfg, w)
		if err == nil && braceFields(w) > 1 {
			// An unquoted brace alternative that is empty makes no word.
			fields = slices.DeleteFunc(fields, func(f string) bool { return f == "" })
		}
		if err != nil {
			// Arithmetic on text the judge cannot see, a bad substitution:
			// the word is unknown.
			if e.anything {
				argv = append(argv, arg{val: hole, pos: w.Pos(), fed: fed})
			}
			continue
		}
		g := info[k].glob
		var proc *stream
		if f := fields; len(f) == 1 && f[0] == "/dev/fd/63" {
			s := j.procStream(w)
			proc = &s
		}
		for _, f := range fields {
			argv = append(argv, arg{val: f, glob: g, pos: w.Pos(), fed: fed, subst: subst, proc: proc})
		}
	}
	return argv
}

// globVar reports a word that expands a variable holding a glob: a for
// loop's glob item (for f in *; do cat "$f") stands for every name it
// matches, and an unquoted value with glob characters is globbed.
func (j *judge) globVar(w *syntax.Word) bool {
	found := false
	var walk func(parts []syntax.WordPart, quoted bool)
	walk = func(parts []syntax.WordPart, quoted bool) {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.DblQuoted:
				walk(p.Parts, true)
			case *syntax.ParamExp:
				if p.Param == nil {
					continue
				}
				v := j.lookup(p.Param.Value)
				if v.globs {
					found = true
				}
				if !quoted {
					for _, s := range v.vals {
						if strings.ContainsAny(s, "*?[") {
							found = true
						}
					}
				}
			}
		}
	}
	walk(w.Parts, false)
	return found
}

// wordFed reports a word that holds downloaded or decoded data: a
// substitution whose output is, or a variable that may hold it.
func (j *judge) wordFed(w *syntax.Word) bool {
	fed := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if fed {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			if o := j.substOut[n]; o != nil && o.fed {
				fed = true
			}
			return false
		case *syntax.ProcSubst:
			if o := j.substOut[n]; o != nil && o.fed {
				fed = true
			}
			return false
		case *syntax.ParamExp:
			if n.Param != nil && j.lookup(n.Param.Value).fed {
				fed = true
			}
		}
		return true
	})
	return fed
}

// word expands one word that must be a single string (the target of a
// redirection, the string of sh -c…) under every reading. It returns each
// distinct value; a value with a hole is text the judge cannot see.
func (j *judge) word(w *syntax.Word) []arg {
	if w == nil {
		return []arg{{}}
	}
	var out []arg
	seen := map[string]bool{}
	for _, argv := range j.readings([]*syntax.Word{w}) {
		a := arg{pos: w.Pos()}
		switch len(argv) {
		case 0:
		case 1:
			a = argv[0]
		default:
			parts := make([]string, len(argv))
			for k, x := range argv {
				parts[k] = x.val
				a.fed = a.fed || x.fed
				a.glob = a.glob || x.glob
			}
			a.val = strings.Join(parts, " ")
		}
		if !seen[a.val] {
			seen[a.val] = true
			out = append(out, a)
		}
	}
	return out
}

// knownWord returns the one value a word has under every reading, or
// ok=false when it has several or holds text the judge cannot see.
func (j *judge) knownWord(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	vs := j.word(w)
	if len(vs) != 1 || vs[0].hasHole() {
		return "", false
	}
	return vs[0].val, true
}

// document expands a heredoc body or here-string under every reading.
func (j *judge) document(w *syntax.Word, heredoc bool) []arg {
	names := map[string]bool{}
	wordNames(w, names)
	var list []string
	for n := range names {
		if j.lookup(n).choices() > 1 {
			list = append(list, n)
		}
	}
	sort.Strings(list)
	var out []arg
	seen := map[string]bool{}
	for _, pick := range j.picks(list) {
		for _, anything := range []bool{false, true} {
			e := &readEnv{j: j, pick: pick, anything: anything}
			cfg := &expand.Config{Env: e,
				CmdSubst: func(wr io.Writer, cs *syntax.CmdSubst) error {
					o := j.substOut[cs]
					switch {
					case o != nil && o.text != nil:
						io.WriteString(wr, *o.text)
					case anything:
						io.WriteString(wr, hole)
					}
					return nil
				},
				ProcSubst: procPath,
			}
			var s string
			var err error
			if found, _ := heredocSingleQuotes(w); heredoc && found || j.paramDisagrees(w, e) {
				s = hole
			} else if heredoc {
				s, err = expand.Document(cfg, promptHoles(w))
			} else {
				s, err = expand.Literal(cfg, promptHoles(ctrlEscapes(w)))
			}
			if err != nil {
				s = hole
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, arg{val: s, pos: w.Pos(), fed: j.wordFed(w)})
			}
		}
	}
	return out
}

// noBraces returns w with its unquoted braces escaped: POSIX shells do not
// expand {a,b}.
func noBraces(w *syntax.Word) *syntax.Word {
	cp := *w
	cp.Parts = slices.Clone(w.Parts)
	changed := false
	for i, p := range cp.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "{}") {
			nl := *l
			nl.Value = escapeBraces(l.Value)
			cp.Parts[i] = &nl
			changed = true
		}
	}
	if !changed {
		return w
	}
	return &cp
}

func escapeBraces(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
			continue
		}
		if c == '{' || c == '}' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// hasGlob reports unquoted, unescaped glob characters in a word.
func hasGlob(w *syntax.Word) bool {
	for _, p := range w.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			if _, ok := p.(*syntax.ExtGlob); ok {
				return true
			}
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

// text is the source text of a node.
func (j *judge) text(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(j.src) || s > e {
		return ""
	}
	return j.src[s:e]
}

func hasCmdSubst(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.CmdSubst); ok {
			found = true
		}
		return !found
	})
	return found
}

// procPath is the path a process substitution expands to; bash expands an
// empty one (<() or >()) to nothing.
func procPath(ps *syntax.ProcSubst) (string, error) {
	if len(ps.Stmts) == 0 {
		return "", nil
	}
	return "/dev/fd/63", nil
}

// literalWord is the value of a word with nothing to expand: plain text, or
// text in single quotes.
func literalWord(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		if p.Value != "" && !strings.ContainsAny(p.Value, "\\~{}*?[$`'\"") {
			return p.Value, true
		}
	case *syntax.SglQuoted:
		if !p.Dollar {
			return p.Value, true
		}
	}
	return "", false
}
