package shellpolicy

import (
	"fmt"
	"regexp"

	"mvdan.cc/sh/v3/syntax"
)

// Class is how much a command can do, from least to most: Safe < Dev < Dangerous.
type Class int

const (
	// Safe commands only read, inside the workspace (ls, cat, git status).
	Safe Class = iota
	// Dev commands build, test and edit the project (go test, make, git commit).
	Dev
	// Dangerous is everything else, including anything warden cannot judge.
	Dangerous
)

func (c Class) String() string {
	switch c {
	case Safe:
		return "safe"
	case Dev:
		return "dev"
	case Dangerous:
		return "dangerous"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// MarshalText writes the class as "safe", "dev" or "dangerous".
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads "safe", "dev" or "dangerous".
func (c *Class) UnmarshalText(b []byte) error {
	switch string(b) {
	case "safe":
		*c = Safe
	case "dev":
		*c = Dev
	case "dangerous":
		*c = Dangerous
	default:
		return fmt.Errorf("unknown command class %q (want safe, dev or dangerous)", b)
	}
	return nil
}

// Rule ids are stable: they appear in refusals, audit records and tests.
const (
	RuleRmRecursiveRoot       = "rm-recursive-root"
	RulePrivilegeEscalation   = "privilege-escalation"
	RuleChmodWorldWritable    = "chmod-world-writable"
	RuleChownRecursiveSystem  = "chown-recursive-system"
	RuleDownloadToInterpreter = "download-to-interpreter"
	RuleDDToDevice            = "dd-to-device"
	RuleRedirectToDevice      = "redirect-to-device"
	RuleMkfs                  = "mkfs"
	RuleForkBomb              = "fork-bomb"
	RuleMassKill              = "mass-kill"
	RulePower                 = "power"
	RuleUserPattern           = "user-pattern"
	RuleParseError            = "parse-error"
	RuleTooComplex            = "too-complex"
	// RuleComputedCommand names a command whose name is not known before it
	// runs. It makes a command dangerous; it does not block it.
	RuleComputedCommand = "computed-command"
)

// Limits on what Judge accepts; beyond them the command is denied.
const (
	// MaxInputBytes bounds the command text (heredocs included).
	MaxInputBytes = 256 << 10
	// MaxDepth bounds nesting of re-parsed strings (sh -c, eval, aliases, function calls).
	MaxDepth = 8
	// MaxCommands bounds the number of simple commands judged in one input,
	// nested ones included. It is a cap on work, not a shortcut: beyond it
	// the command is denied, never allowed.
	MaxCommands = 10000
)

// Options adds the user's configuration to the built-in policy. A nil
// *Options is the built-in policy alone, for a command whose environment
// warden does not control. Nothing in Options can remove a built-in
// blocklist rule.
type Options struct {
	// SafeCommands and DevCommands add word sequences ("git status",
	// "make lint"); an entry matches a command whose argv starts with its
	// words. A trailing "$" word ("git branch $") matches only the exact argv.
	// A user's safe entry still loses Safe for a path outside the
	// workspace or a masked name, like the built-in ones.
	SafeCommands []string
	DevCommands  []string
	// BlockedPatterns are the user's RE2 patterns, matched against the raw
	// command and against each simple command (its text and its argv joined
	// by spaces). Compile them with CompilePatterns.
	BlockedPatterns []*regexp.Regexp
	// EnvKnown names the environment variables the command may find set
	// when it runs: warden clears a command's environment down to an
	// allowlist (internal/command.Environ, the jail's JailEnv), and callers
	// pass the names of that allowlist. A name the line does not assign,
	// that bash does not set itself and that is not listed is empty when
	// the line runs, and is judged so (${x:-w} is w). A listed name may
	// hold anything. A nil EnvKnown means warden does not control the
	// environment (another program runs the line): every name the line does
	// not assign may hold anything.
	EnvKnown []string
	// Mask adds doublestar patterns of masked workspace paths
	// (security.mask, sandbox.mask) to the built-in ones (DefaultMask). A
	// safe command may not read a name a mask hides, matched
	// case-insensitively, nor use a glob that could match one.
	Mask []string
	// Jailed says the line runs in the workspace's jail, where masked paths
	// are covered by mounts. It relaxes the mask checks only (see the
	// package documentation): paths outside the workspace, other processes'
	// environments and git's history are judged as on the host.
	Jailed bool
}

// CompilePatterns compiles the user's blocked_patterns.
func CompilePatterns(pats []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(pats))
	for i, p := range pats {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("failed to compile commands.blocked_patterns[%d] %q: %w", i, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Position locates a word in the judged command (1-based line and column,
// 0-based byte offset). For words inside a re-parsed string (sh -c, eval) it
// is the position of that string in the outer command.
type Position struct {
	Offset int `json:"offset"`
	Line   int `json:"line"`
	Col    int `json:"col"`
}

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

func posOf(p syntax.Pos) Position {
	if !p.IsValid() {
		return Position{}
	}
	return Position{Offset: int(p.Offset()), Line: int(p.Line()), Col: int(p.Col())}
}

// Simple is one simple command found in the input, with its judgement.
type Simple struct {
	// Argv is the resolved argument vector (quotes and escapes removed). A
	// word that is not known before run time is kept as its source text.
	Argv []string `json:"argv"`
	// Text is the command's source text.
	Text  string `json:"text"`
	Class Class  `json:"class"`
	// Why explains the class in a few words.
	Why string `json:"why"`
	// Rule is the blocklist rule this command fired, if any.
	Rule string   `json:"rule,omitempty"`
	Pos  Position `json:"pos"`
	// Depth is 0 for commands written in the input, n for commands inside n
	// levels of re-parsed strings (sh -c, eval, function bodies at a call).
	Depth int `json:"depth"`
	// Dialect names the shell whose reading of a re-parsed string this
	// command comes from ("dash", "bash", "mksh", "zsh"), when readings
	// differ: sh -c STRING is judged as dash and as bash would run it, and
	// both lists are kept when they differ.
	Dialect string `json:"dialect,omitempty"`
}

// Verdict is the judgement of one command line.
type Verdict struct {
	// Class is the worst class of its simple commands; Dangerous when blocked.
	Class Class `json:"class"`
	// Blocked is true when a hard rule denies the command in every mode.
	Blocked bool `json:"blocked"`
	// Rule and Reason say why it is blocked (the first rule that fired).
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Pos is where the offending word is.
	Pos        Position `json:"pos"`
	Commands   []Simple `json:"commands"`
	ParseError string   `json:"parse_error,omitempty"`

	// runs records every argv judged, with its depth and dialect, for the
	// differential tests that compare it with what real shells execute.
	runs []judgedRun
}

// judgedRun is one argv the judge resolved (holes are unknown text).
type judgedRun struct {
	argv []string
	glob []bool // the word has unquoted glob characters
	// anything: code the judge cannot see runs here (eval of an unknown
	// string, a script): any command may follow.
	anything bool
	depth    int
	dialect  string
}

// Err returns a *PolicyError when the command is blocked, else nil.
func (v *Verdict) Err() error {
	if !v.Blocked {
		return nil
	}
	return &PolicyError{Rule: v.Rule, Reason: v.Reason, Pos: v.Pos, Class: v.Class}
}

// PolicyError is a command refused by a hard rule.
type PolicyError struct {
	Rule   string
	Reason string
	Pos    Position
	Class  Class
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("command blocked by rule %s at %s: %s", e.Rule, e.Pos, e.Reason)
}

// Runs returns every argv the judge resolved, in the order judged: the
// simple commands and the commands wrappers run (env, timeout, nice,
// xargs, find -exec …), at every depth. A word not known before run time
// is its source text. unseen is true when code the judge cannot see runs
// somewhere (eval of an unknown string, a script): any command may run.
// Rules that must catch a command wherever a line runs it match these.
func (v *Verdict) Runs() (argvs [][]string, unseen bool) {
	for _, r := range v.runs {
		if r.anything {
			unseen = true
			continue
		}
		argvs = append(argvs, r.argv)
	}
	return argvs, unseen
}
