package shellpolicy

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

func isInput(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.RdrInOut, syntax.DplIn:
		return true
	}
	return false
}

func isOutput(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
		return true
	}
	return false
}

// fdOf is the descriptor a redirection applies to ("0" for <, "1" for >).
func fdOf(r *syntax.Redirect) string {
	if r.N != nil {
		return r.N.Value
	}
	if isInput(r.Op) {
		return "0"
	}
	return "1"
}

// stdinOf is a statement's standard input after its redirections.
func (j *judge) stdinOf(rs []*syntax.Redirect, in stream) stream {
	for _, r := range rs {
		if fdOf(r) != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			in = j.docStream(r.Hdoc, true, "")
		case syntax.WordHdoc:
			in = j.docStream(r.Word, false, "\n")
		case syntax.RdrIn:
			in = stream{}
			for _, t := range j.word(r.Word) {
				if t.fed || j.fedFiles[cleanRel(t.val)] || isNetDev(t.val) {
					in.fed = true
				}
				if t.val == "/dev/fd/63" {
					in = j.procStream(r.Word)
				}
			}
		case syntax.DplIn:
			if t, ok := j.knownWord(r.Word); !ok || t != "0" {
				in = stream{}
			}
		case syntax.RdrInOut:
			in = stream{}
		}
	}
	return in
}

// docStream is the stream a heredoc or here-string gives.
func (j *judge) docStream(w *syntax.Word, heredoc bool, suffix string) stream {
	if w == nil {
		empty := ""
		return stream{text: &empty}
	}
	vs := j.document(w, heredoc)
	s := stream{}
	for _, v := range vs {
		s.fed = s.fed || v.fed
	}
	if len(vs) == 1 && !vs[0].hasHole() {
		t := vs[0].val + suffix
		s.text = &t
	}
	return s
}

// redirects applies the redirection rules to simple i (-1: a compound
// command, for which a pseudo command is recorded when they matter). out
// is what the statement prints: a download written to a file marks the
// file, so that running it later is caught. It returns the class the
// redirections give the command and why.
func (j *judge) redirects(rs []*syntax.Redirect, i int, out stream) (Class, string) {
	class, why := Safe, ""
	worse := func(c Class, w string) {
		if c > class {
			class, why = c, w
		}
	}
	for _, r := range rs {
		fd := fdOf(r)
		switch {
		case r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc:
			continue
		case r.Op == syntax.DplIn || r.Op == syntax.DplOut:
			t, ok := j.knownWord(r.Word)
			switch {
			case !ok:
				worse(Dangerous, "duplicates a file descriptor whose number is computed: "+j.text(r))
			case t == "-" || t == "0" || t == "1" || t == "2":
			case isDigits(strings.TrimSuffix(t, "-")):
				worse(Dangerous, fmt.Sprintf("uses file descriptor %s, opened outside what the judge reads (exec N<, or inherited)", t))
			default:
				// >&file is &>file in bash.
				if r.Op == syntax.DplOut {
					j.writeRedirect(r, t, i, out, fd, worse)
				} else {
					worse(Dangerous, "reads a file descriptor named "+t)
				}
			}
		case r.Op == syntax.RdrIn:
			for _, t := range j.word(r.Word) {
				if c, w := j.readTarget(t, "< "); c > Safe {
					worse(c, w)
				}
			}
		case r.Op == syntax.RdrInOut:
			for _, t := range j.word(r.Word) {
				if c, w := j.readTarget(t, "<> "); c > Safe {
					worse(c, w)
				}
				j.writeRedirect(r, t.val, i, stream{}, fd, worse)
			}
		case isOutput(r.Op):
			for _, t := range j.word(r.Word) {
				j.writeRedirect(r, t.val, i, out, fd, worse)
			}
		}
	}
	if class > Safe && i < 0 {
		j.add(Simple{Text: j.textRedirs(rs), Class: class, Why: why, Pos: j.pos(rs[0].Pos())})
	}
	return class, why
}

// readTarget judges a file an input redirection reads, like a path operand.
func (j *judge) readTarget(t arg, op string) (Class, string) {
	if t.val == "/dev/fd/63" {
		return Safe, "" // a process substitution
	}
	c, why := j.readPath(t, "redirection "+op)
	return c, why
}

// writeRedirect applies the write rules to one output redirection target.
func (j *judge) writeRedirect(r *syntax.Redirect, t string, i int, out stream, fd string, worse func(Class, string)) {
	p := j.pos(r.Word.Pos())
	if hasHole(t) {
		worse(Dangerous, "writes to a file whose name is computed: "+j.text(r.Word))
		if rule, reason := writeRule(strings.ReplaceAll(t, hole, "")); rule != "" {
			j.blockAt(i, rule, "redirection "+reason, p)
		}
		return
	}
	if rule, reason := writeRule(t); rule != "" {
		j.blockAt(i, rule, "redirection "+reason, p)
		return
	}
	if harmlessDevice(t) {
		return
	}
	if out.fed && (fd == "1" || r.Op == syntax.RdrAll || r.Op == syntax.AppAll || r.Op == syntax.RdrAllClob || r.Op == syntax.AppAllClob) {
		j.fedFiles[cleanRel(t)] = true
	}
	worse(Dangerous, "redirection writes to file "+t)
}

func (j *judge) textRedirs(rs []*syntax.Redirect) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, j.text(r))
	}
	return strings.Join(parts, " ")
}

// cleanRel is a path as written, cleaned, for matching files the line
// wrote against files it runs.
func cleanRel(p string) string {
	c := path.Clean(p)
	return strings.TrimPrefix(c, "./")
}

// isNetDev reports bash's /dev/tcp and /dev/udp pseudo-files: reading one
// reads from the network.
func isNetDev(t string) bool {
	c := path.Clean(t)
	return strings.HasPrefix(c, "/dev/tcp/") || strings.HasPrefix(c, "/dev/udp/")
}

// procStream is what the process substitutions of a word print.
func (j *judge) procStream(w *syntax.Word) stream {
	var s stream
	syntax.Walk(w, func(n syntax.Node) bool {
		if ps, ok := n.(*syntax.ProcSubst); ok {
			if o := j.substOut[ps]; o != nil {
				s = *o
			}
			return false
		}
		return true
	})
	return s
}
