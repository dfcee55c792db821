package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// sedScript is what a sed script does beyond printing.
type sedScript struct {
	bad    string   // why the script is not one warden can read as safe
	runs   []string // commands it runs (e COMMAND)
	sink   bool     // runs its input as commands (e alone, s///e)
	reads  []string // files it reads (r, R)
	writes []string // files it writes (w, W, s///w)
}

// parseSed reads a GNU sed script: commands separated by ; or newlines,
// each with up to two addresses (N, $, /re/ and \cREc with I and M flags,
// first~step, addr,+N, addr,~N) and an optional !. Unknown syntax makes
// the script unreadable (bad), never safe.
func parseSed(s string) sedScript {
	var out sedScript
	i := 0
	n := len(s)
	skipSpace := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// regex reads a delimited regex starting after its delimiter d.
	regex := func(d byte) bool {
		for i < n {
			switch {
			case s[i] == '\\' && i+1 < n:
				i += 2
			case s[i] == d:
				i++
				return true
			case s[i] == '\n':
				return false
			case s[i] == '[' && d != '[':
				// a bracket expression may hold the delimiter
				k := i + 1
				if k < n && s[k] == '^' {
					k++
				}
				if k < n && s[k] == ']' {
					k++
				}
				for k < n && s[k] != ']' && s[k] != '\n' {
					k++
				}
				if k >= n || s[k] != ']' {
					return false
				}
				i = k + 1
			default:
				i++
			}
		}
		return false
	}
	address := func() bool {
		switch {
		case i < n && s[i] >= '0' && s[i] <= '9':
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			if i < n && s[i] == '~' {
				i++
				for i < n && s[i] >= '0' && s[i] <= '9' {
					i++
				}
			}
		case i < n && s[i] == '$':
			i++
		case i < n && s[i] == '/':
			i++
			if !regex('/') {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < n && s[i] == '\\':
			d := s[i+1]
			if d == '\n' || d == '\\' {
				return false
			}
			i += 2
			if !regex(d) {
				return false
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	// rest reads the rest of the line (a filename, a label, text).
	rest := func() string {
		skipSpace()
		k := strings.IndexByte(s[i:], '\n')
		if k < 0 {
			k = n - i
		}
		v := s[i : i+k]
		i += k
		return v
	}
	for i < n && out.bad == "" {
		skipSpace()
		if i >= n {
			break
		}
		if s[i] == ';' || s[i] == '\n' || s[i] == '}' {
			i++
			continue
		}
		if s[i] == '#' {
			rest()
			continue
		}
		start := i
		if !address() {
			out.bad = "unreadable address"
			break
		}
		if i > start {
			skipSpace()
			if i < n && s[i] == ',' {
				i++
				skipSpace()
				if i < n && (s[i] == '+' || s[i] == '~') {
					i++
					for i < n && s[i] >= '0' && s[i] <= '9' {
						i++
					}
				} else if !address() {
					out.bad = "unreadable address"
					break
				}
			}
		}
		skipSpace()
		for i < n && s[i] == '!' {
			i++
			skipSpace()
		}
		if i >= n {
			out.bad = "address without a command"
			break
		}
		c := s[i]
		i++
		switch c {
		case '{':
		case 'p', 'P', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', '=', 'z', 'F':
		case 'q', 'Q', 'l', 'L':
			skipSpace()
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case ':':
			if strings.TrimSpace(rest()) == "" {
				out.bad = "empty label"
			}
		case 'b', 't', 'T':
			skipSpace()
			for i < n && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		case 'a', 'i', 'c':
			if i < n && s[i] == '\\' {
				i++
				// a\ text continues over escaped newlines
				for i < n {
					if s[i] == '\\' && i+1 < n {
						i += 2
						continue
					}
					if s[i] == '\n' {
						break
					}
					i++
				}
			} else {
				rest()
			}
		case 'r', 'R':
			out.reads = append(out.reads, rest())
		case 'w', 'W':
			out.writes = append(out.writes, rest())
		case 'e':
			cmd := rest()
			if strings.TrimSpace(cmd) == "" {
				out.sink = true
			} else {
				out.runs = append(out.runs, cmd)
			}
		case 'v':
			rest()
		case 'y', 's':
			if i >= n || s[i] == '\\' || s[i] == '\n' {
				out.bad = "unreadable " + string(c) + " command"
				break
			}
			d := s[i]
			i++
			// the pattern, then the replacement (or y's two lists)
			ok := regex(d)
			ok = ok && regex(d)
			if !ok {
				out.bad = "unreadable " + string(c) + " command"
				break
			}
			if c == 'y' {
				break
			}
		flagLoop:
			for i < n {
				f := s[i]
				switch {
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					i++
				case f == 'e':
					out.sink = true
					i++
				case f == 'w':
					i++
					out.writes = append(out.writes, rest())
					break flagLoop
				default:
					break flagLoop
				}
			}
		default:
			out.bad = "unknown command " + string(c)
		}
	}
	return out
}

// checkSed judges sed's script and files.
func checkSed(j *judge, p *parsed, r *res) {
	files := p.operands
	scripts := p.values("-e", "--expression")
	if len(scripts) == 0 && len(p.values("-f", "--file")) == 0 {
		if len(files) == 0 {
			r.worse(Dev, "sed without a script")
			return
		}
		scripts, files = files[:1], files[1:]
	}
	if len(p.values("-f", "--file")) > 0 {
		r.worse(Dev, "sed -f runs a script from a file warden cannot see")
	}
	inPlace := p.has("-i", "--in-place")
	sandbox := p.has("--sandbox")
	for _, sc := range scripts {
		if sc.hasHole() {
			r.worse(Dangerous, "sed script computed at run time")
			continue
		}
		if sc.fed {
			r.block(RuleDownloadToInterpreter, j.pos(sc.pos), "sed runs a script from downloaded or decoded data")
			continue
		}
		s := parseSed(sc.val)
		if s.bad != "" {
			r.worse(Dev, "sed script warden cannot read as safe: "+s.bad)
		}
		if sandbox {
			if len(s.runs)+len(s.reads)+len(s.writes) > 0 || s.sink {
				r.worse(Dev, "sed --sandbox refuses this script")
			}
			continue
		}
		for _, c := range s.runs {
			r.worse(Dangerous, "sed e runs a command: "+c)
			j.shellString(c, sc.pos, []syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash}, nil, stream{})
		}
		if s.sink {
			r.sink = true
			r.worse(Dangerous, "sed e runs its input as commands")
		}
		for _, f := range s.reads {
			if c, why := j.readPath(arg{val: f}, "sed r "); c > Safe {
				r.worse(c, why)
			}
		}
		for _, f := range s.writes {
			if f != "/dev/stdout" && f != "/dev/stderr" {
				r.worse(Dangerous, "sed w writes file "+f)
				if rule, reason := writeRule(f); rule != "" {
					r.block(rule, j.pos(sc.pos), "sed w %s", reason)
				}
			}
		}
	}
	for _, f := range files {
		if inPlace {
			if c, why := j.readPath(f, "sed -i "); c > Safe {
				r.worse(c, why)
			}
			if rule, reason := writeRule(f.val); rule != "" {
				r.block(rule, j.pos(f.pos), "sed -i %s", reason)
			}
			continue
		}
		j.checkKind("sed", kPath, nil, f, r)
	}
	if inPlace {
		r.worse(Dev, "sed -i edits files in place")
	}
}
