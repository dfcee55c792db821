package rules

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	egresspolicy "github.com/wardenhq/warden/internal/egress/policy"
)

// Decision is what a rule decides, from loosest to strictest.
type Decision int

// The decisions. None means no rule matched.
const (
	None Decision = iota
	Allow
	Ask
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return "none"
}

// ParseDecision reads "allow", "ask" or "deny".
func ParseDecision(s string) (Decision, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "ask":
		return Ask, nil
	case "deny":
		return Deny, nil
	}
	return None, fmt.Errorf("unknown decision %q (want allow, ask or deny)", s)
}

// CommandTool is the tool command rules apply to.
const CommandTool = "run_command"

// NetworkTool names a connection a jailed command opens under network =
// "allowlist" to a host [sandbox.egress] leaves to a person: not a tool a
// model calls, but a request of the network group that host rules decide
// (host = "registry.example.com:443").
const NetworkTool = "network_connect"

// Spec is one rule as configured. Tool names are canonical (the config
// loader resolves aliases).
type Spec struct {
	// Command is the word prefix of a command rule; Tool is then
	// run_command (or empty).
	Command []string
	// Exact makes a command rule match only an argv of exactly its words.
	Exact bool
	// Tool names the tool; with Path it is a file tool, with Host
	// http_request (the default for a host rule) or NetworkTool.
	Tool string
	// Path is a doublestar pattern over workspace-relative slash paths.
	Path string
	// Host is a host name, or "*." and a domain for its subdomains; for
	// NetworkTool an egress entry ("github.com:443", "*.pypi.org",
	// "10.0.0.0/8"), read as [sandbox.egress] reads its allow list.
	Host     string
	Decision Decision
	// Source says where the rule is written ("/home/u/.config/warden/config.toml:12"),
	// and ID names it when it has one; both are for messages.
	Source string
	ID     string
}

// Rule is a compiled Spec.
type Rule struct {
	Spec
	words []word
	// dest is a NetworkTool host rule's destination pattern.
	dest *egresspolicy.Rule
}

// word is one word of a command rule: literal text, optionally a prefix
// (its written form ended in "*"); "*" alone is a prefix of "".
type word struct {
	text   string
	prefix bool
}

func (w word) match(s string) bool {
	if w.prefix {
		return strings.HasPrefix(s, w.text)
	}
	return s == w.text
}

// Limits on a rule, so a rule is something a person reads.
const (
	maxWords   = 64
	maxWordLen = 4096
)

// Compile checks s and returns the rule.
func Compile(s Spec) (*Rule, error) {
	if s.Decision < Allow || s.Decision > Deny {
		return nil, errors.New("decision must be allow, ask or deny")
	}
	r := &Rule{Spec: s}
	kinds := 0
	for _, set := range []bool{s.Command != nil, s.Path != "", s.Host != ""} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return nil, errors.New("a rule has one of command, path or host")
	}
	if s.Exact && s.Command == nil {
		return nil, errors.New("exact applies to command rules only")
	}
	switch {
	case s.Command != nil:
		if s.Tool != "" && s.Tool != CommandTool {
			return nil, fmt.Errorf("a command rule applies to %s, not %s", CommandTool, s.Tool)
		}
		r.Tool = CommandTool
		if len(s.Command) == 0 {
			return nil, errors.New("command must name at least one word")
		}
		if len(s.Command) > maxWords {
			return nil, fmt.Errorf("command has more than %d words", maxWords)
		}
		for i, w := range s.Command {
			cw, err := compileWord(w, i)
			if err != nil {
				return nil, err
			}
			r.words = append(r.words, cw)
		}
	case s.Path != "":
		if s.Tool == "" {
			return nil, errors.New("a path rule names its tool (write_file, edit_file, …)")
		}
		if s.Tool == CommandTool || s.Tool == "http_request" || s.Tool == NetworkTool {
			return nil, fmt.Errorf("%s takes no path rule", s.Tool)
		}
		if strings.HasPrefix(s.Path, "/") || !doublestar.ValidatePattern(s.Path) {
			return nil, fmt.Errorf("path %q is not a workspace-relative pattern", s.Path)
		}
		if c := path.Clean(s.Path); c != s.Path || c == ".." || strings.HasPrefix(c, "../") {
			return nil, fmt.Errorf("path %q must be clean and inside the workspace (write %q)", s.Path, c)
		}
	case s.Host != "" && s.Tool == NetworkTool:
		d, err := egresspolicy.ParseRule(s.Host)
		if err != nil {
			return nil, fmt.Errorf("host %v", err)
		}
		r.dest = &d
	case s.Host != "":
		if s.Tool == "" {
			r.Tool = "http_request"
		} else if s.Tool != "http_request" {
			return nil, fmt.Errorf("a host rule applies to http_request, not %s", s.Tool)
		}
		h := strings.TrimPrefix(strings.ToLower(strings.TrimSuffix(s.Host, ".")), "*.")
		if h == "" || strings.ContainsAny(h, "*/:@ ") || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
			return nil, fmt.Errorf("host %q must be a host name, or *. and a domain", s.Host)
		}
		r.Host = strings.ToLower(strings.TrimSuffix(s.Host, "."))
	default:
		if s.Tool == "" {
			return nil, errors.New("a rule needs command, tool, path or host")
		}
		if s.Tool == CommandTool && s.Decision == Allow {
			return nil, errors.New("an allow rule for every command is yolo for run_command; write command = [...] words instead")
		}
		if s.Tool == NetworkTool && s.Decision == Allow {
			return nil, errors.New(`an allow rule for every host is network = "host"; write host = "name:port" instead`)
		}
	}
	return r, nil
}

func compileWord(w string, i int) (word, error) {
	if len(w) > maxWordLen {
		return word{}, fmt.Errorf("command word %d is longer than %d bytes", i+1, maxWordLen)
	}
	body, star := strings.CutSuffix(w, "*")
	if strings.Contains(body, "*") {
		return word{}, fmt.Errorf("command word %q: * may only end a word", w)
	}
	if i == 0 && star {
		return word{}, fmt.Errorf("command word %q: the command name must be written in full", w)
	}
	if w == "" {
		return word{}, fmt.Errorf("command word %d is empty", i+1)
	}
	return word{text: body, prefix: star}, nil
}

// matchArgv reports whether the command rule matches argv.
func (r *Rule) matchArgv(argv []string) bool {
	if len(argv) < len(r.words) || r.Exact && len(argv) != len(r.words) {
		return false
	}
	for i, w := range r.words {
		if !w.match(argv[i]) {
			return false
		}
	}
	return true
}

// matchAnywhere reports whether the rule's words match argv at any
// position: ask and deny rules match there, so a wrapper the judge does not
// unwrap (xargs, find -exec, ionice, a script runner) cannot hide the
// command. "echo git push" matches a deny rule for git push: strict, on
// the safe side.
func (r *Rule) matchAnywhere(argv []string) bool {
	for i := range argv {
		if r.matchArgv(argv[i:]) {
			return true
		}
	}
	return false
}

// matchHost reports whether the host rule matches host: for NetworkTool
// a canonical "host:port" target, which must parse as one.
func (r *Rule) matchHost(host string) bool {
	if r.dest != nil {
		t, err := egresspolicy.ParseTarget(host)
		return err == nil && r.dest.Match(t)
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" {
		return false
	}
	if dom, ok := strings.CutPrefix(r.Host, "*."); ok {
		return strings.HasSuffix(host, "."+dom)
	}
	return host == r.Host
}

// matchPaths reports whether every path matches the path rule; an empty
// list matches nothing.
func (r *Rule) matchPaths(paths []string) bool {
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if p == "" || strings.HasPrefix(p, "/") {
			return false
		}
		c := path.Clean(p)
		if c == ".." || strings.HasPrefix(c, "../") {
			return false
		}
		if ok, _ := doublestar.Match(r.Path, c); !ok {
			return false
		}
	}
	return true
}

// Name names the rule in audit records and refusals: its id, else where it
// is written, else the rule itself.
func (r *Rule) Name() string {
	if r.ID != "" {
		return r.ID
	}
	if r.Source != "" {
		return r.Source
	}
	return r.String()
}

// String renders the rule for a person.
func (r *Rule) String() string {
	var b strings.Builder
	b.WriteString(r.Decision.String())
	switch {
	case r.Command != nil:
		b.WriteString(" command ")
		b.WriteString(r.Words())
		if r.Exact {
			b.WriteString(" (exactly)")
		} else {
			b.WriteString(" …")
		}
	case r.Path != "":
		fmt.Fprintf(&b, " %s path %s", r.Tool, r.Path)
	case r.Host != "":
		fmt.Fprintf(&b, " %s host %s", r.Tool, r.Host)
	default:
		b.WriteString(" tool " + r.Tool)
	}
	return b.String()
}

// Words renders a command rule's words: quoted as a shell would need, a
// trailing * left bare.
func (r *Rule) Words() string {
	out := make([]string, len(r.words))
	for i, w := range r.words {
		switch {
		case w.prefix && w.text == "":
			out[i] = "*"
		case w.prefix:
			out[i] = JoinArgv([]string{w.text}) + "*"
		default:
			out[i] = JoinArgv([]string{w.text})
		}
	}
	return strings.Join(out, " ")
}

// JoinArgv renders argv with single quotes where a word needs them (a
// quote itself as '"'"'), so that Plain reads it back as argv.
func JoinArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		// A first word with = would read as an assignment.
		if a != "" && !(i == 0 && strings.Contains(a, "=")) && !strings.ContainsFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ',' || r == ':' || r == '=' || r == '+' || r == '@' ||
				('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
		}) {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	return strings.Join(out, " ")
}
