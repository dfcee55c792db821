package shellpolicy

import (
	"path"
	"slices"
	"strings"
)

// DefaultMask are the workspace's built-in masks (internal/workspace's
// DefaultMask; a test keeps them equal). Options.Mask adds the user's.
var DefaultMask = []string{
	".env", ".env.*", "**/.env", "**/.env.*",
	"**/*.pem", "**/*.key",
	"**/.ssh", "**/.ssh/**", "**/.aws", "**/.aws/**", "**/.gnupg", "**/.gnupg/**",
	"warden.toml", "warden.yaml",
}

// secretNames look like credentials wherever they are. A safe command
// naming one loses Safe on the host and in the jail alike (the jail masks
// only the configured masks); recursive readers and globs are checked
// against the masks only.
var secretNames = []string{
	"**/.kube", "**/.kube/**", "**/.docker", "**/.docker/**", "**/.netrc", "**/.git-credentials",
	"**/.npmrc", "**/.pypirc", "**/credentials", "**/.password-store", "**/.password-store/**",
	"**/.vault-token", "**/id_rsa", "**/id_ed25519", "**/id_ecdsa", "**/id_dsa", "**/id_ed25519_sk", "**/id_ecdsa_sk",
	"**/*.p12", "**/*.pfx", "**/*.kdbx", "**/shadow", "**/gshadow", "**/.bash_history",
	"**/.zsh_history", "**/.pgpass", "**/.my.cnf",
}

// maskPat is a mask compiled to lowercase path components ("**" matches
// any number of them).
type maskPat struct {
	src   string
	comps []globComp
}

// defaultMasks are DefaultMask compiled once.
var defaultMasks = func() []maskPat {
	var out []maskPat
	for _, p := range DefaultMask {
		out = append(out, compileMask(p))
	}
	return out
}()

func compileMasks(user []string) []maskPat {
	if len(user) == 0 {
		return defaultMasks
	}
	out := slices.Clone(defaultMasks)
	for _, p := range user {
		out = append(out, compileMask(p))
	}
	return out
}

var secretPats = func() []maskPat {
	var out []maskPat
	for _, p := range secretNames {
		out = append(out, compileMask(p))
	}
	return out
}()

func compileMask(p string) maskPat {
	c := strings.TrimPrefix(path.Clean(strings.ToLower(p)), "./")
	m := maskPat{src: p}
	for _, s := range strings.Split(c, "/") {
		m.comps = append(m.comps, parseComp(s, false))
	}
	return m
}

// globComp is one path component of a pattern: "**" or a list of
// elements, each a literal rune, ? or *, or a bracket class.
type globComp struct {
	any   bool // **
	elems []globElem
}

type globElem struct {
	kind  byte // 'c' literal, '?', '*', '[' class
	r     rune
	neg   bool
	chars []rune
	rng   [][2]rune
}

// parseComp parses one component. literal treats every rune as itself.
func parseComp(s string, literal bool) globComp {
	if s == "**" && !literal {
		return globComp{any: true}
	}
	var c globComp
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if literal {
			c.elems = append(c.elems, globElem{kind: 'c', r: r})
			continue
		}
		switch r {
		case '\\':
			if i+1 < len(rs) {
				i++
				c.elems = append(c.elems, globElem{kind: 'c', r: rs[i]})
				continue
			}
			c.elems = append(c.elems, globElem{kind: 'c', r: r})
		case '*':
			if n := len(c.elems); n > 0 && c.elems[n-1].kind == '*' {
				continue
			}
			c.elems = append(c.elems, globElem{kind: '*'})
		case '?':
			c.elems = append(c.elems, globElem{kind: '?'})
		case '[':
			e, n, ok := parseClass(rs[i:])
			if !ok {
				c.elems = append(c.elems, globElem{kind: 'c', r: r})
				continue
			}
			c.elems = append(c.elems, e)
			i += n - 1
		default:
			c.elems = append(c.elems, globElem{kind: 'c', r: r})
		}
	}
	return c
}

// parseClass parses a bracket expression at the start of rs; n is its
// length in runes.
func parseClass(rs []rune) (globElem, int, bool) {
	e := globElem{kind: '['}
	i := 1
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		e.neg = true
		i++
	}
	first := true
	for ; i < len(rs); i++ {
		r := rs[i]
		if r == ']' && !first {
			return e, i + 1, true
		}
		first = false
		if r == '[' && i+1 < len(rs) && rs[i+1] == ':' {
			// [:alpha:] and friends: treat as any character.
			k := strings.Index(string(rs[i:]), ":]")
			if k < 0 {
				return e, 0, false
			}
			e.rng = append(e.rng, [2]rune{0, 0x10FFFF})
			i += len([]rune(string(rs[i:])[:k+2])) - 1
			continue
		}
		if i+2 < len(rs) && rs[i+1] == '-' && rs[i+2] != ']' {
			e.rng = append(e.rng, [2]rune{r, rs[i+2]})
			i += 2
			continue
		}
		e.chars = append(e.chars, r)
	}
	return e, 0, false
}

func (e globElem) matches(r rune) bool {
	switch e.kind {
	case 'c':
		return e.r == r
	case '?', '*':
		return true
	}
	in := false
	for _, c := range e.chars {
		if c == r || lowerRune(c) == r {
			in = true
		}
	}
	for _, g := range e.rng {
		if g[0] <= r && r <= g[1] || g[0] <= upperRune(r) && upperRune(r) <= g[1] {
			in = true
		}
	}
	return in != e.neg
}

func lowerRune(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

func upperRune(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - 'a' + 'A'
	}
	return r
}

// candidates are the runes tried when deciding whether two single-rune
// elements can match the same rune.
func candidates(a, b globElem) []rune {
	out := []rune{'a', '0', '.', '_', '-', 'z', '\uFFFD'}
	for _, e := range []globElem{a, b} {
		out = append(out, e.r)
		out = append(out, e.chars...)
		for _, g := range e.rng {
			out = append(out, g[0], g[1], lowerRune(g[0]), lowerRune(g[1]))
		}
	}
	return out
}

func elemsMeet(a, b globElem) bool {
	for _, r := range candidates(a, b) {
		if a.matches(r) && b.matches(r) {
			return true
		}
	}
	return false
}

// compsMeet reports whether some name matches both components. g is a
// shell glob component: unless dotOK, its wildcards cannot match a
// leading dot, so a mask component that starts with "." is only met by a
// glob that starts with one.
func compsMeet(g, m globComp, dotOK bool) bool {
	if !dotOK && len(g.elems) > 0 && g.elems[0].kind != 'c' && len(m.elems) > 0 && m.elems[0].kind == 'c' && m.elems[0].r == '.' {
		if g.elems[0].kind != '[' || !g.elems[0].matches('.') {
			return false
		}
	}
	// memo: 0 unknown, 1 false (or in progress), 2 true.
	w := len(m.elems) + 1
	memo := make([]byte, (len(g.elems)+1)*w)
	var f func(p, q int) bool
	f = func(p, q int) bool {
		if v := memo[p*w+q]; v != 0 {
			return v == 2
		}
		memo[p*w+q] = 1
		var r bool
		switch {
		case p == len(g.elems) && q == len(m.elems):
			r = true
		case p < len(g.elems) && g.elems[p].kind == '*':
			r = f(p+1, q) || q < len(m.elems) && f(p, q+1)
		case q < len(m.elems) && m.elems[q].kind == '*':
			r = f(p, q+1) || p < len(g.elems) && f(p+1, q)
		case p < len(g.elems) && q < len(m.elems):
			r = elemsMeet(g.elems[p], m.elems[q]) && f(p+1, q+1)
		}
		if r {
			memo[p*w+q] = 2
		}
		return r
	}
	return f(0, 0)
}

// pathsMeet reports whether some path matches both component lists ("**"
// matching any number of components).
func pathsMeet(g, m []globComp, dotOK bool) bool {
	type key struct{ i, k int }
	memo := map[key]bool{}
	var f func(i, k int) bool
	f = func(i, k int) bool {
		key := key{i, k}
		if v, ok := memo[key]; ok {
			return v
		}
		memo[key] = false
		var r bool
		switch {
		case i == len(g) && k == len(m):
			r = true
		case k < len(m) && m[k].any:
			r = f(i, k+1) || i < len(g) && f(i+1, k)
		case i < len(g) && g[i].any:
			r = f(i+1, k) || k < len(m) && f(i, k+1)
		case i < len(g) && k < len(m):
			r = compsMeet(g[i], m[k], dotOK) && f(i+1, k+1)
		}
		memo[key] = r
		return r
	}
	return f(0, 0)
}

// masked reports the first mask a workspace path (or a glob over such
// paths) could fall under: the mask matches it or one of its parents.
// rel is relative to the workspace root, lowercased inside.
func masked(pats []maskPat, rel string, glob, dotOK bool) (string, bool) {
	if rel == "." || rel == "" {
		return "", false
	}
	if !glob {
		return maskedLiteral(pats, strings.ToLower(rel))
	}
	var g []globComp
	for _, s := range strings.Split(strings.ToLower(rel), "/") {
		c := parseComp(s, !glob)
		if c.any && !dotOK {
			c = parseComp("*", false) // ** is * without globstar
		}
		g = append(g, c)
	}
	for _, m := range pats {
		withBelow := append(append([]globComp(nil), m.comps...), globComp{any: true})
		if pathsMeet(g, withBelow, dotOK) {
			return m.src, true
		}
	}
	return "", false
}

// harmlessDevice reports device files reading or writing which is harmless.
func harmlessDevice(t string) bool {
	c := path.Clean(t)
	switch c {
	case "/dev/null", "/dev/zero", "/dev/full", "/dev/stdout", "/dev/stderr", "/dev/stdin",
		"/dev/tty", "/dev/random", "/dev/urandom":
		return true
	}
	return strings.HasPrefix(c, "/dev/fd/") || strings.HasPrefix(c, "/dev/pts/")
}

// where says where a path operand points: the workspace-relative path,
// or why it is outside the workspace. Paths are relative to where a cd in
// the line moved.
func (j *judge) where(p string) (rel string, outside string) {
	switch {
	case p == wsRoot || strings.HasPrefix(p, wsRoot+"/"):
		rel = strings.TrimPrefix(strings.TrimPrefix(p, wsRoot), "/")
		if rel == "" {
			rel = "."
		}
		p = rel
	case strings.HasPrefix(p, "/"):
		return "", "outside the workspace: " + p
	case p == "~" || strings.HasPrefix(p, "~"):
		return "", "outside the workspace: " + p
	}
	switch {
	case j.cwd == "?":
		return "", "relative to a directory a cd made unknown"
	case strings.HasPrefix(j.cwd, "/") || strings.HasPrefix(j.cwd, "~"):
		return "", "outside the workspace after cd " + j.cwd
	}
	c := path.Clean(path.Join(j.cwd, p))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", "outside the workspace: " + p
	}
	return c, ""
}

// readPath judges a path a safe command reads (an operand, an option's
// file, an input redirection). It returns Safe, or Dangerous and why.
func (j *judge) readPath(a arg, what string) (Class, string) {
	v := a.val
	switch {
	case v == "" || v == "-":
		return Safe, ""
	case a.hasHole():
		return Dangerous, what + "reads a path computed at run time: " + a.val
	case strings.HasPrefix(v, "/") && harmlessDevice(v) && !strings.HasPrefix(v, wsRoot):
		return Safe, ""
	}
	rel, out := j.where(v)
	if out != "" {
		return Dangerous, what + "reads " + out
	}
	return j.maskedRead(rel, a.glob, what)
}

// maskedRead judges a workspace path (or glob) against the masks.
func (j *judge) maskedRead(rel string, glob bool, what string) (Class, string) {
	dotOK := j.wideGlob
	if m, ok := masked(secretPats, rel, glob, dotOK); ok && !glob {
		return Dangerous, what + "reads a secret-looking name " + rel + " (" + m + ")"
	}
	if j.opts.Jailed {
		return Safe, ""
	}
	if m, ok := masked(j.masks, rel, glob, dotOK); ok {
		if glob {
			return Dangerous, what + "uses a glob that could match a masked name: " + rel + " (mask " + m + ")"
		}
		return Dangerous, what + "reads a masked name: " + rel + " (mask " + m + ")"
	}
	return Safe, ""
}

// listPath judges a path a safe command lists or looks up without
// reading its contents (ls, stat, du): the same checks as readPath, since
// masks hide names too, except that a glob may match a masked name (the
// command shows names, as ls of the workspace shows .env): only the
// directories before its first wildcard are checked.
func (j *judge) listPath(a arg, what string) (Class, string) {
	if a.glob && !a.hasHole() {
		if strings.HasPrefix(a.val, "/") || strings.HasPrefix(a.val, "~") {
			if _, out := j.where(a.val); out != "" {
				return Dangerous, what + "looks " + out
			}
		}
		a.val, a.glob = literalPrefix(a.val), false
		if a.val == "" {
			a.val = "."
		}
	}
	return j.readPath(a, what)
}

// exclusion is a recursive reader's option that skips names matching a
// glob: files, directories or both, case-sensitively or not.
type exclusion struct {
	glob        string
	files, dirs bool
	ci          bool
}

// recursiveRead judges a reader that reads every file below roots. On the
// host each mask reachable from a root must be excluded case-insensitively
// (grep's --exclude is case-sensitive, so only ".*" and "*" cover a
// name with letters); in the jail the masks are mounts.
func (j *judge) recursiveRead(roots []arg, ex []exclusion, what string, r *res) {
	if j.opts.Jailed {
		return
	}
	for _, root := range roots {
		if root.hasHole() {
			continue // already not safe
		}
		rel, out := j.where(root.val)
		if out != "" {
			continue
		}
		var rc []globComp
		if rel != "." {
			for _, s := range strings.Split(strings.ToLower(rel), "/") {
				rc = append(rc, parseComp(s, !root.glob))
			}
		}
		rc = append(rc, globComp{any: true})
		for _, m := range j.masks {
			withBelow := append(append([]globComp(nil), m.comps...), globComp{any: true})
			if !pathsMeet(rc, withBelow, true) {
				continue
			}
			if coveredMask(m, ex) {
				continue
			}
			r.worse(Dangerous, what+" reads every file below "+root.val+", masked ones too (mask "+m.src+"); exclude them, or run it in the jail")
			return
		}
	}
}

// coveredMask reports whether exclusions keep a recursive reader out of
// everything mask m hides.
func coveredMask(m maskPat, ex []exclusion) bool {
	src := strings.Split(strings.TrimPrefix(path.Clean(strings.ToLower(m.src)), "./"), "/")
	dirOnly := false
	for len(src) > 0 && src[len(src)-1] == "**" {
		src, dirOnly = src[:len(src)-1], true
	}
	if len(src) == 0 {
		return false
	}
	name := src[len(src)-1]
	fileOK, dirOK := dirOnly, false
	for _, e := range ex {
		if !coversName(e, name) {
			continue
		}
		fileOK = fileOK || e.files
		dirOK = dirOK || e.dirs
	}
	return fileOK && dirOK
}

// coversName reports whether exclusion e matches every name the mask
// component name matches, in any case.
func coversName(e exclusion, name string) bool {
	switch {
	case e.glob == "*":
		return true
	case e.glob == ".*" && strings.HasPrefix(name, "."):
		return true
	case e.ci:
		return strings.ToLower(e.glob) == name
	}
	return e.glob == name && strings.ToLower(name) == strings.ToUpper(name)
}

// maskedLiteral matches a literal lowercase path (or one of its parents)
// against the masks, without the glob-against-glob search.
func maskedLiteral(pats []maskPat, rel string) (string, bool) {
	comps := strings.Split(rel, "/")
	for _, m := range pats {
		if literalMeets(comps, m.comps) {
			return m.src, true
		}
	}
	return "", false
}

// literalMeets reports whether mask components m match comps or one of
// its prefixes (a mask covers everything below what it matches).
func literalMeets(comps []string, m []globComp) bool {
	var f func(i, k int) bool
	f = func(i, k int) bool {
		if k == len(m) {
			return true // matched a prefix: the rest is below it
		}
		if m[k].any {
			for x := i; x <= len(comps); x++ {
				if f(x, k+1) {
					return true
				}
			}
			return false
		}
		return i < len(comps) && compMatches(m[k], comps[i]) && f(i+1, k+1)
	}
	return f(0, 0)
}

// compMatches matches one literal component against a mask component.
func compMatches(m globComp, s string) bool {
	rs := []rune(s)
	var f func(p, q int) bool
	f = func(p, q int) bool {
		for p < len(m.elems) {
			e := m.elems[p]
			if e.kind == '*' {
				for x := q; x <= len(rs); x++ {
					if f(p+1, x) {
						return true
					}
				}
				return false
			}
			if q >= len(rs) || !e.matches(rs[q]) {
				return false
			}
			p, q = p+1, q+1
		}
		return q == len(rs)
	}
	return f(0, 0)
}
