package approval

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/internal/shellpolicy"
	"mvdan.cc/sh/v3/syntax"
)

// maxJudgedCommand bounds the command LiteralJudge parses.
const maxJudgedCommand = 16 << 10

// wrappers run another command from their arguments; a command that starts
// with one cannot be judged by its text and is never auto-approved here.
var wrappers = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "fish": true, "busybox": true,
	"eval": true, "exec": true, "command": true, "builtin": true, "source": true, ".": true,
	"env": true, "nice": true, "nohup": true, "timeout": true, "time": true, "xargs": true,
	"stdbuf": true, "ionice": true, "setsid": true, "chroot": true, "unshare": true, "nsenter": true,
	"sudo": true, "su": true, "doas": true, "pkexec": true, "watch": true, "flock": true, "strace": true,
	"script": true, "parallel": true, "chrt": true, "taskset": true, "unbuffer": true,
}

// findActions run or delete; find with one of them is never auto-approved here.
var findActions = []string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}

// errUnjudgeable marks a command LiteralJudge will not vouch for.
var errUnjudgeable = errors.New("command is not plain enough to auto-approve")

// LiteralJudge is the conservative structural half of ShellJudge. It accepts only simple commands made of literal words
// (shellpolicy.Literal, the reader rules use too: quoted or not, with no
// expansion of any kind), joined by ;, &&, || or |, without redirections,
// assignments, expansions, substitutions, subshells, functions, control
// flow, background jobs or wrapper commands. Anything else is an error, so
// it is never auto-approved and a person is asked. It does not know the
// blocklist; ShellJudge adds that.
func LiteralJudge(cmd string) (*CommandVerdict, error) {
	if len(cmd) > maxJudgedCommand {
		return nil, fmt.Errorf("%w: longer than %d bytes", errUnjudgeable, maxJudgedCommand)
	}
	if !shellpolicy.LiteralLineOK(cmd) {
		return nil, fmt.Errorf("%w: a carriage return or NUL byte", errUnjudgeable)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUnjudgeable, err)
	}
	v := &CommandVerdict{}
	for _, st := range f.Stmts {
		if err := judgeStmt(st, v); err != nil {
			return nil, err
		}
	}
	if len(v.Commands) == 0 {
		return nil, fmt.Errorf("%w: no command", errUnjudgeable)
	}
	return v, nil
}

func judgeStmt(st *syntax.Stmt, v *CommandVerdict) error {
	if st.Background || st.Coprocess || st.Negated || len(st.Redirs) > 0 || st.Cmd == nil {
		return fmt.Errorf("%w: background, negation or redirection", errUnjudgeable)
	}
	switch c := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe:
		default:
			return fmt.Errorf("%w: operator %s", errUnjudgeable, c.Op)
		}
		if err := judgeStmt(c.X, v); err != nil {
			return err
		}
		return judgeStmt(c.Y, v)
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 || len(c.Args) == 0 {
			return fmt.Errorf("%w: assignment", errUnjudgeable)
		}
		argv := make([]string, 0, len(c.Args))
		for _, w := range c.Args {
			s, ok := shellpolicy.Literal(w)
			if !ok {
				return fmt.Errorf("%w: a word that is not literal", errUnjudgeable)
			}
			argv = append(argv, s)
		}
		name := argv[0]
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		if wrappers[name] || strings.ContainsAny(argv[0], "*?[") {
			return fmt.Errorf("%w: %s runs other commands", errUnjudgeable, argv[0])
		}
		if name == "find" {
			for _, a := range argv[1:] {
				for _, act := range findActions {
					if a == act {
						return fmt.Errorf("%w: find %s", errUnjudgeable, a)
					}
				}
			}
		}
		v.Commands = append(v.Commands, joinArgv(argv))
		return nil
	default:
		return fmt.Errorf("%w: compound command", errUnjudgeable)
	}
}

// joinArgv renders argv with single quotes where a word needs them, so a
// pattern sees one unambiguous text per simple command.
func joinArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ',' || r == ':' || r == '=' || r == '+' || r == '@' ||
				('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
		}) {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
