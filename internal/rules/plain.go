package rules

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/internal/shellpolicy"
	"mvdan.cc/sh/v3/syntax"
)

// MaxLine bounds the command line Plain parses; a longer line is not plain.
const MaxLine = 64 << 10

// maxPlainCommands bounds the simple commands of a plain line.
const maxPlainCommands = 256

// ErrNotPlain is wrapped by Plain's errors: the line holds something an
// allow rule cannot vouch for.
var ErrNotPlain = errors.New("not a plain command line")

// Plain returns the argv of every simple command of a plain line (see the
// package documentation), in order, or an error wrapping ErrNotPlain that
// names what is not plain. Words are read by shellpolicy.Literal, the one
// reader of literal words, so a word is plain only when bash reaches its
// value with no expansion.
func Plain(line string) ([][]string, error) {
	if len(line) > MaxLine {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrNotPlain, MaxLine)
	}
	if !shellpolicy.LiteralLineOK(line) {
		return nil, fmt.Errorf("%w: a carriage return or NUL byte", ErrNotPlain)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPlain, err)
	}
	var out [][]string
	for _, st := range f.Stmts {
		if err := plainStmt(st, &out); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no command", ErrNotPlain)
	}
	return out, nil
}

func plainStmt(st *syntax.Stmt, out *[][]string) error {
	switch {
	case st.Background || st.Coprocess:
		return fmt.Errorf("%w: a background job", ErrNotPlain)
	case st.Negated:
		return fmt.Errorf("%w: a negated command", ErrNotPlain)
	case st.Cmd == nil:
		return fmt.Errorf("%w: a redirection without a command", ErrNotPlain)
	}
	for _, r := range st.Redirs {
		if !harmlessRedirect(r) {
			return fmt.Errorf("%w: the redirection %s", ErrNotPlain, r.Op)
		}
	}
	switch c := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe:
		default:
			return fmt.Errorf("%w: the operator %s", ErrNotPlain, c.Op)
		}
		if len(st.Redirs) > 0 {
			return fmt.Errorf("%w: a redirection of a list", ErrNotPlain)
		}
		if err := plainStmt(c.X, out); err != nil {
			return err
		}
		return plainStmt(c.Y, out)
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 {
			return fmt.Errorf("%w: a variable assignment", ErrNotPlain)
		}
		if len(c.Args) == 0 {
			return fmt.Errorf("%w: no command", ErrNotPlain)
		}
		argv := make([]string, 0, len(c.Args))
		for _, w := range c.Args {
			s, ok := shellpolicy.Literal(w)
			if !ok {
				return fmt.Errorf("%w: the word %q is not literal", ErrNotPlain, wordText(w))
			}
			argv = append(argv, s)
		}
		if len(*out) >= maxPlainCommands {
			return fmt.Errorf("%w: more than %d commands", ErrNotPlain, maxPlainCommands)
		}
		*out = append(*out, argv)
		return nil
	}
	return fmt.Errorf("%w: a compound command", ErrNotPlain)
}

// harmlessRedirect accepts what cannot write a file or feed code: to or
// from /dev/null, and duplicating or closing a descriptor by number.
func harmlessRedirect(r *syntax.Redirect) bool {
	if r.N != nil && !isDigits(r.N.Value) {
		return false // {var}>x assigns a variable
	}
	w, ok := shellpolicy.Literal(r.Word)
	if !ok {
		return false
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrIn, syntax.RdrClob:
		return w == "/dev/null"
	case syntax.DplOut, syntax.DplIn:
		// >&word with a word that is not a number redirects to a file.
		return isDigits(w) || w == "-"
	}
	return false
}

func isDigits(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func wordText(w *syntax.Word) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "?"
	}
	return b.String()
}
