package shellpolicy

import (
	"slices"
	"strconv"
	"strings"
)

// hole stands for text the judge cannot see (a variable warden's
// environment may hold, a command's output). It is a private-use rune: a
// line that writes it literally is only judged more strictly.
const hole = "\uE000"

// numHole stands for a number the judge cannot see ($?, $RANDOM, the
// output of wc -l): harmless where bash evaluates it as arithmetic.
const numHole = "\uE002"

// wsRoot stands for the workspace's absolute path ($PWD at the start of the
// line). Its parents stand for the directories above the workspace: the
// real depth is unknown, so it is deep enough that ${PWD%/*} and
// ${PWD%/*/*} still name a parent.
const wsRoot = "/\uE001w1/\uE001w2/\uE001w3/\uE001ws"

// hasHole reports text the judge cannot see in s.
func hasHole(s string) bool { return strings.Contains(s, hole) || strings.Contains(s, numHole) }

// baseEnvNames are the variables warden's runners may pass to a command
// (internal/command.Environ and the jail's JailEnv), whatever
// Options.EnvKnown says: a name listed here may hold anything.
var baseEnvNames = []string{
	"PATH", "LANG", "LANGUAGE", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL", "TZ",
	"COLORTERM", "NO_COLOR", "WARDEN_SANDBOX", "GIT_CONFIG_PARAMETERS",
}

// bashSet are the variables bash sets itself: their values are unknown.
var bashSet = map[string]bool{
	"BASH": true, "BASHOPTS": true, "BASHPID": true, "BASH_ALIASES": true, "BASH_ARGC": true,
	"BASH_ARGV": true, "BASH_ARGV0": true, "BASH_CMDS": true, "BASH_COMMAND": true,
	"BASH_EXECUTION_STRING": true, "BASH_LINENO": true, "BASH_SOURCE": true, "BASH_SUBSHELL": true,
	"BASH_VERSINFO": true, "BASH_VERSION": true, "COLUMNS": true, "LINES": true, "DIRSTACK": true,
	"EPOCHREALTIME": true, "EPOCHSECONDS": true, "EUID": true, "FUNCNAME": true, "GROUPS": true,
	"HISTCMD": true, "HOSTNAME": true, "HOSTTYPE": true, "LINENO": true, "MACHTYPE": true,
	"OLDPWD": true, "OPTARG": true, "OPTERR": true, "OPTIND": true, "OSTYPE": true, "PIPESTATUS": true,
	"PPID": true, "RANDOM": true, "SECONDS": true, "SHELLOPTS": true, "SHLVL": true, "SRANDOM": true,
	"UID": true, "_": true, "?": true, "$": true, "!": true, "-": true, "REPLY": true, "COPROC": true,
	"MAPFILE": true, "BASH_REMATCH": true, "READLINE_LINE": true, "BASH_XTRACEFD": true,
}

// numericSet are the variables bash sets to numbers.
var numericSet = map[string]bool{
	"BASHPID": true, "EPOCHSECONDS": true, "EUID": true, "HISTCMD": true, "LINENO": true, "OPTIND": true,
	"PPID": true, "RANDOM": true, "SECONDS": true, "SHLVL": true, "SRANDOM": true, "UID": true,
	"?": true, "$": true, "!": true, "BASH_SUBSHELL": true,
}

// value is what one variable may hold at some point of the line: the
// union of what every path through the line up to that point gives it.
type value struct {
	vals    []string   // known scalar values
	lists   [][]string // known array values
	unset   bool       // may be unset (empty)
	unknown bool       // may hold text the judge cannot see
	num     bool       // what it may hold unseen is a number
	fed     bool       // may hold downloaded or decoded data
	exp     bool       // exported: reaches child processes
	integer bool       // declare -i: every assignment is arithmetic
	nameref bool       // declare -n: its value names another variable
	globs   bool       // its values are glob patterns a for loop expanded
}

func (v *value) clone() *value {
	c := *v
	c.vals = slices.Clone(v.vals)
	c.lists = slices.Clone(v.lists)
	return &c
}

// union adds o's possibilities to v.
func (v *value) union(o *value) {
	for _, s := range o.vals {
		v.addVal(s)
	}
	for _, l := range o.lists {
		v.addList(l)
	}
	v.num = (v.num || !v.unknown) && (o.num || !o.unknown)
	v.unset = v.unset || o.unset
	v.unknown = v.unknown || o.unknown
	v.fed = v.fed || o.fed
	v.exp = v.exp || o.exp
	v.integer = v.integer || o.integer
	v.nameref = v.nameref || o.nameref
	v.globs = v.globs || o.globs
}

// maxValues bounds the known values one variable keeps; beyond it the
// variable may hold anything.
const maxValues = 16

// maxValueLen bounds a known value; a longer one is unknown text (values
// built by doubling would grow without bound).
const maxValueLen = 4096

func (v *value) addVal(s string) {
	if len(s) > maxValueLen {
		v.unknown = true
		return
	}
	if slices.Contains(v.vals, s) {
		return
	}
	if len(v.vals) >= maxValues {
		v.unknown = true
		return
	}
	v.vals = append(v.vals, s)
}

func (v *value) addList(l []string) {
	n := 0
	for _, s := range l {
		n += len(s)
	}
	if n > maxValueLen || len(l) > maxValueLen {
		v.unknown = true
		return
	}
	for _, x := range v.lists {
		if slices.Equal(x, l) {
			return
		}
	}
	if len(v.lists) >= maxValues {
		v.unknown = true
		return
	}
	v.lists = append(v.lists, l)
}

func (v *value) equal(o *value) bool {
	if v.unset != o.unset || v.unknown != o.unknown || v.num != o.num || v.fed != o.fed || v.exp != o.exp ||
		v.integer != o.integer || v.nameref != o.nameref || v.globs != o.globs || len(v.vals) != len(o.vals) || len(v.lists) != len(o.lists) {
		return false
	}
	for _, s := range v.vals {
		if !slices.Contains(o.vals, s) {
			return false
		}
	}
	for _, l := range v.lists {
		if !slices.ContainsFunc(o.lists, func(x []string) bool { return slices.Equal(x, l) }) {
			return false
		}
	}
	return true
}

// choices is how many distinct values a reading may pick for v.
func (v *value) choices() int {
	n := len(v.vals) + len(v.lists)
	if v.unset || v.unknown {
		n++
	}
	return max(n, 1)
}

// scope maps names to what they may hold; a name it lacks is at its
// initial value (see judge.initial).
type scope struct {
	m map[string]*value
}

func newScope() *scope { return &scope{m: map[string]*value{}} }

func (s *scope) clone() *scope {
	c := &scope{m: make(map[string]*value, len(s.m))}
	for k, v := range s.m {
		c.m[k] = v.clone()
	}
	return c
}

// lookup returns the value of name without recording it. The caller must
// not change it.
func (j *judge) lookup(name string) *value {
	if v, ok := j.sc.m[name]; ok {
		return v
	}
	return j.initialRO(name)
}

// initialRO is initial(name), shared: the caller must not change it.
func (j *judge) initialRO(name string) *value {
	if name == "PWD" {
		return j.initial(name) // depends on cd
	}
	if v, ok := j.initials[name]; ok {
		return v
	}
	v := j.initial(name)
	if j.initials == nil {
		j.initials = map[string]*value{}
	}
	j.initials[name] = v
	return v
}

// initial is what name holds when the line starts (or a shell the line
// starts), before the line assigns it.
func (j *judge) initial(name string) *value {
	switch {
	case name == "HOME":
		return &value{vals: []string{"~"}, exp: true}
	case name == "PWD":
		if j.cwd == "" {
			return &value{vals: []string{wsRoot}, exp: true}
		}
		if j.cwd != "?" {
			if strings.HasPrefix(j.cwd, "/") || strings.HasPrefix(j.cwd, "~") {
				return &value{vals: []string{j.cwd}, exp: true}
			}
			return &value{vals: []string{wsRoot + "/" + j.cwd}, exp: true}
		}
		return &value{unknown: true, exp: true}
	case name == "IFS":
		return &value{unset: true} // the default, space, tab and newline
	case name == "PS4":
		return &value{vals: []string{"+ "}}
	case name == "0":
		// The runner starts bash by name or by path.
		return &value{vals: []string{"bash", "/bin/bash", "/usr/bin/bash"}}
	case name == "#":
		return &value{vals: []string{"0"}}
	case name == "@" || name == "*":
		return &value{lists: [][]string{{}}}
	case isDigits(name):
		return &value{unset: true}
	case numericSet[name]:
		return &value{unknown: true, num: true}
	case bashSet[name]:
		return &value{unknown: true, unset: true}
	case j.envUnknown(name):
		return &value{unknown: true, unset: true, exp: true}
	}
	return &value{unset: true}
}

// envUnknown reports whether name may come set from warden's environment.
func (j *judge) envUnknown(name string) bool {
	if j.opts.EnvKnown == nil {
		return true
	}
	return slices.Contains(baseEnvNames, name) || strings.HasPrefix(name, "LC_") || slices.Contains(j.opts.EnvKnown, name)
}

// merge makes the current scope the union of itself and o (two paths
// through the line meeting again).
func (j *judge) merge(o *scope) {
	for k, v := range o.m {
		if cur, ok := j.sc.m[k]; ok {
			cur.union(v)
			continue
		}
		init := j.initial(k)
		init.union(v)
		j.sc.m[k] = init
	}
	for k, v := range j.sc.m {
		if _, ok := o.m[k]; !ok {
			v.union(j.initialRO(k))
		}
	}
}

// sameScope reports whether two scopes hold the same possibilities.
func sameScope(a, b *scope) bool {
	if len(a.m) != len(b.m) {
		return false
	}
	for k, v := range a.m {
		w, ok := b.m[k]
		if !ok || !v.equal(w) {
			return false
		}
	}
	return true
}

// assign records that name now holds v (an assignment that certainly ran).
func (j *judge) assign(name string, v *value) {
	old := j.lookup(name)
	v.exp = v.exp || old.exp || j.allExport
	v.integer = v.integer || old.integer
	v.nameref = v.nameref || old.nameref
	j.sc.m[name] = v
}

// setUnknown assigns something the judge cannot see.
func (j *judge) setUnknown(name string, fed bool) {
	j.assign(name, &value{unknown: true, fed: fed})
}

// childScope is the scope a new shell process (sh -c, bash script) starts
// with: warden's environment and what the line exported; a variable the
// line did not export is unset there.
func (j *judge) childScope() *scope {
	c := newScope()
	for k, v := range j.sc.m {
		if isDigits(k) || k == "@" || k == "*" || k == "#" || k == "0" {
			continue
		}
		if v.exp || j.allExport {
			n := v.clone()
			if !v.exp {
				n.unset = true
			}
			c.m[k] = n
		}
	}
	return c
}

// bindPositional sets $0…$9, $@, $* and $# from argv (argv[0] is $0).
func (j *judge) bindPositional(argv []arg) {
	for _, n := range positionalNames {
		delete(j.sc.m, n)
	}
	list := []string{}
	fed := false
	for k, a := range argv {
		if k < 10 {
			j.sc.m[strconv.Itoa(k)] = &value{vals: []string{a.val}, fed: a.fed}
		}
		if k > 0 {
			list = append(list, a.val)
			fed = fed || a.fed
		}
	}
	for k := len(argv); k < 10; k++ {
		j.sc.m[strconv.Itoa(k)] = &value{unset: true}
	}
	all := &value{lists: [][]string{list}, fed: fed}
	j.sc.m["@"], j.sc.m["*"] = all, all.clone()
	j.sc.m["#"] = &value{vals: []string{strconv.Itoa(max(len(argv)-1, 0))}}
}

var positionalNames = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*", "#"}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
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
