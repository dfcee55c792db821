package config

import (
	"fmt"
	"strings"
)

// Error is one problem found in one configuration source. File is the path of
// the file (or "environment" or "flags"); Line and Col are 1-based and zero
// when unknown; Key is the dotted key path (or the variable or flag name).
type Error struct {
	File  string
	Line  int
	Col   int
	Key   string
	Value string // the offending value as written, "" when not relevant
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		if e.Value != "" {
			b.WriteString(" = ")
			b.WriteString(e.Value)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found while loading: Load and CheckFile collect
// all of them rather than stopping at the first. It prints one per line.
type Errors struct {
	List []*Error
}

func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, x := range e.List {
		lines[i] = x.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual errors, for errors.As on *Error.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, x := range e.List {
		out[i] = x
	}
	return out
}

// errList accumulates errors for one source.
type errList struct {
	file string
	list []*Error
}

func (l *errList) add(p pos, key, value, format string, a ...any) {
	l.list = append(l.list, &Error{File: l.file, Line: p.line, Col: p.col, Key: key, Value: value, Msg: fmt.Sprintf(format, a...)})
}

func (l *errList) err() error {
	if len(l.list) == 0 {
		return nil
	}
	return &Errors{List: l.list}
}

// pos is a position in a file; zero when unknown.
type pos struct{ line, col int }
