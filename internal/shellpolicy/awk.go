package shellpolicy

import (
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// awkProgram is what an awk program does beyond reading its input and
// printing.
type awkProgram struct {
	runs   []string // literal commands it runs (system("…"), print | "…")
	sink   bool     // runs commands it computes (system($0))
	reads  []string // literal files getline reads
	bad    string   // why it is not safe (reads computed files)
	writes string   // why it writes a file
	danger string   // why it is dangerous (loads an extension)
}

type awkTok struct {
	kind byte // 'i' identifier, 's' string, 'n' number, 'r' regex, 'o' operator
	val  string
}

// lexAwk splits an awk program into tokens. A / starts a regex only where
// an operand cannot end (after an operator, a keyword, ( , ; { or a
// newline), so code is never mistaken for a regex.
func lexAwk(s string) ([]awkTok, bool) {
	var out []awkTok
	operandEnded := false
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2
		case c == '\n':
			out = append(out, awkTok{'o', "\n"})
			operandEnded = false
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"':
			k := i + 1
			var b strings.Builder
			for k < len(s) && s[k] != '"' {
				if s[k] == '\\' && k+1 < len(s) {
					b.WriteByte(s[k+1])
					k += 2
					continue
				}
				if s[k] == '\n' {
					return nil, false
				}
				b.WriteByte(s[k])
				k++
			}
			if k >= len(s) {
				return nil, false
			}
			out = append(out, awkTok{'s', b.String()})
			operandEnded = true
			i = k + 1
		case c == '/' && !operandEnded:
			k := i + 1
			inClass := false
			for k < len(s) && (s[k] != '/' || inClass) {
				switch {
				case s[k] == '\\' && k+1 < len(s):
					k++
				case s[k] == '[':
					inClass = true
				case s[k] == ']':
					inClass = false
				case s[k] == '\n':
					return nil, false
				}
				k++
			}
			if k >= len(s) {
				return nil, false
			}
			out = append(out, awkTok{'r', s[i+1 : k]})
			operandEnded = true
			i = k + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			k := i
			for k < len(s) && (s[k] == '_' || s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= '0' && s[k] <= '9') {
				k++
			}
			w := s[i:k]
			out = append(out, awkTok{'i', w})
			operandEnded = !awkKeywords[w]
			i = k
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			k := i
			for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] == '.' || s[k] == 'e' || s[k] == 'E' || s[k] == 'x' || s[k] >= 'a' && s[k] <= 'f') {
				k++
			}
			out = append(out, awkTok{'n', s[i:k]})
			operandEnded = true
			i = k
		default:
			op := string(c)
			if i+1 < len(s) {
				two := s[i : i+2]
				switch two {
				case "||", "&&", ">>", "|&", "==", "!=", "<=", ">=", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "**":
					op = two
				}
			}
			out = append(out, awkTok{'o', op})
			operandEnded = op == ")" || op == "]" || op == "$" || op == "++" || op == "--"
			i += len(op)
		}
	}
	return out, true
}

var awkKeywords = map[string]bool{
	"print": true, "printf": true, "return": true, "in": true, "if": true, "else": true, "while": true, "for": true,
	"do": true, "case": true, "getline": true, "delete": true, "exit": true, "next": true, "nextfile": true,
}

// parseAwk finds what an awk program does beyond printing.
func parseAwk(prog string) awkProgram {
	var out awkProgram
	toks, ok := lexAwk(prog)
	if !ok {
		out.bad = "awk program warden cannot read"
		return out
	}
	depth := 0
	printDepth := -1
	for k, t := range toks {
		next := func(n int) awkTok {
			if k+n < len(toks) {
				return toks[k+n]
			}
			return awkTok{}
		}
		switch {
		case t.kind == 'o' && (t.val == "(" || t.val == "["):
			depth++
		case t.kind == 'o' && (t.val == ")" || t.val == "]"):
			depth--
		case t.kind == 'o' && (t.val == ";" || t.val == "\n" || t.val == "{" || t.val == "}"):
			printDepth = -1
		case t.kind == 'i' && (t.val == "print" || t.val == "printf"):
			printDepth = depth
		case t.kind == 'o' && t.val == "@":
			out.danger = "awk @load/@include loads code"
		case t.kind == 'i' && t.val == "system":
			if next(1).val == "(" && next(2).kind == 's' && next(3).val == ")" {
				out.runs = append(out.runs, next(2).val)
			} else {
				out.sink = true
			}
		case t.kind == 'o' && (t.val == "|" || t.val == "|&"):
			switch {
			case next(1).kind == 's' && (k+2 >= len(toks) || next(2).kind == 'o' && next(2).val != "("):
				out.runs = append(out.runs, next(1).val)
			case k > 0 && toks[k-1].kind == 's' && next(1).val == "getline":
				out.runs = append(out.runs, toks[k-1].val)
			default:
				out.sink = true
			}
		case t.kind == 'i' && t.val == "getline":
			if next(1).val == "<" || next(1).kind == 'i' && next(2).val == "<" {
				f := next(2)
				if next(1).val != "<" {
					f = next(3)
				}
				if f.kind == 's' {
					out.reads = append(out.reads, f.val)
				} else {
					out.bad = "awk getline reads a file named at run time"
				}
			}
		case t.kind == 'o' && (t.val == ">" || t.val == ">>") && printDepth >= 0 && depth == printDepth:
			out.writes = "awk print writes to a file"
		}
	}
	return out
}

var awkAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// checkAwk judges awk's program and files.
func checkAwk(j *judge, p *parsed, r *res) {
	name := p.s.name
	files := p.operands
	progs := p.values("-e", "--source")
	fromFile := append(p.values("-f", "--file"), p.values("-E", "--exec")...)
	for _, f := range fromFile {
		if isStdinPath(f.val) {
			r.sink = true
			r.worse(Dangerous, name+" -f "+f.val+" runs a program read from its standard input")
			continue
		}
		r.worse(Dev, name+" -f runs a program from a file warden cannot see")
		if j.fedFiles[cleanRel(f.val)] {
			r.block(RuleDownloadToInterpreter, j.pos(f.pos), "%s runs %s, which the line wrote from downloaded or decoded data", name, f.val)
		}
	}
	if len(progs) == 0 && len(fromFile) == 0 {
		if len(files) == 0 {
			r.worse(Dev, name+" without a program")
			return
		}
		progs, files = files[:1], files[1:]
	}
	for _, v := range p.values("-i", "--include") {
		r.worse(Dev, name+" -i "+v.val+" loads awk code (inplace edits files)")
	}
	for _, u := range p.opts {
		switch u.name {
		case "-d", "--dump-variables", "-o", "--pretty-print", "-p", "--profile":
			r.worse(Dev, name+" "+u.name+" writes a file")
		case "-D", "--debug":
			r.sink = true
			r.worse(Dev, name+" -D reads debugger commands from its input")
		case "-W":
			r.worse(Dev, name+" -W "+u.val.val+" is not an option warden knows to be safe")
		}
	}
	for _, pr := range progs {
		if pr.fed {
			r.block(RuleDownloadToInterpreter, j.pos(pr.pos), "%s runs a program from downloaded or decoded data", name)
			continue
		}
		if pr.hasHole() {
			r.worse(Dangerous, name+" program computed at run time")
			continue
		}
		a := parseAwk(pr.val)
		if a.danger != "" {
			r.worse(Dangerous, a.danger)
		}
		if a.bad != "" {
			r.worse(Dev, a.bad)
		}
		if a.writes != "" {
			r.worse(Dangerous, a.writes)
		}
		for _, c := range a.runs {
			r.worse(Dangerous, name+" runs a command: "+c)
			out := j.shellString(c, pr.pos, []syntax.LangVariant{syntax.LangPOSIX, syntax.LangBash}, nil, stream{})
			_ = out
			if j.stringIsSink(c) {
				r.sink = true
			}
		}
		if a.sink {
			r.sink = true
			r.worse(Dangerous, name+" runs commands it computes from its input (system, pipes)")
		}
		for _, f := range a.reads {
			if c, why := j.readPath(arg{val: f}, name+" getline "); c > Safe {
				r.worse(c, why)
			}
		}
	}
	for _, f := range files {
		if awkAssign.MatchString(f.val) {
			continue
		}
		j.checkKind(name, kPath, nil, f, r)
	}
}
