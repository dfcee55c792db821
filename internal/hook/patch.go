package hook

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// Codex edits files with its own patch format (apply_patch):
//
//	*** Begin Patch
//	*** Add File: PATH        then "+" lines
//	*** Delete File: PATH
//	*** Update File: PATH     optionally "*** Move to: NEW", then hunks:
//	@@ [context header]       then " ", "-", "+" lines; "*** End of File"
//	*** End Patch
//
// warden judges it as the unified diff of the same changes, through
// apply_patch's guards (every path written, renamed or deleted; delete
// protection) and shows that diff to a person deciding it.

// patchOp is one file operation of a Codex patch.
type patchOp struct {
	kind  string // add, delete, update
	path  string
	to    string   // update: the new name ("" when not moved)
	lines []string // add: the new lines; update: the hunks' lines, "@@" included
}

// parseCodexPatch reads a Codex patch.
func parseCodexPatch(text string) ([]patchOp, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "*** Begin Patch" || strings.TrimSpace(lines[len(lines)-1]) != "*** End Patch" {
		return nil, errors.New("the patch must start with '*** Begin Patch' and end with '*** End Patch'")
	}
	var ops []patchOp
	var cur *patchOp
	for i, l := range lines[1 : len(lines)-1] {
		n := i + 2 // line number in the patch
		switch {
		case strings.HasPrefix(l, "*** Add File: "):
			ops = append(ops, patchOp{kind: "add", path: strings.TrimPrefix(l, "*** Add File: ")})
		case strings.HasPrefix(l, "*** Delete File: "):
			ops = append(ops, patchOp{kind: "delete", path: strings.TrimPrefix(l, "*** Delete File: ")})
		case strings.HasPrefix(l, "*** Update File: "):
			ops = append(ops, patchOp{kind: "update", path: strings.TrimPrefix(l, "*** Update File: ")})
		case strings.HasPrefix(l, "*** Move to: "):
			if cur == nil || cur.kind != "update" || cur.to != "" || len(cur.lines) > 0 {
				return nil, fmt.Errorf("line %d: '*** Move to:' must follow '*** Update File:'", n)
			}
			cur.to = strings.TrimPrefix(l, "*** Move to: ")
			continue
		case l == "*** End of File":
			if cur == nil || cur.kind != "update" {
				return nil, fmt.Errorf("line %d: '*** End of File' outside an update", n)
			}
			continue
		case strings.HasPrefix(l, "***"):
			return nil, fmt.Errorf("line %d: unknown patch header %q", n, truncate(l, 80))
		default:
			if cur == nil {
				return nil, fmt.Errorf("line %d: a change outside any file", n)
			}
			switch cur.kind {
			case "add":
				if !strings.HasPrefix(l, "+") {
					return nil, fmt.Errorf("line %d: a line of an added file must start with '+'", n)
				}
			case "delete":
				return nil, fmt.Errorf("line %d: a deleted file has no lines", n)
			case "update":
				if l != "" && !strings.HasPrefix(l, "@@") && !strings.ContainsAny(l[:1], " -+") {
					return nil, fmt.Errorf("line %d: a hunk line must start with ' ', '-', '+' or '@@'", n)
				}
			}
			cur.lines = append(cur.lines, l)
			continue
		}
		cur = &ops[len(ops)-1]
		if strings.TrimSpace(cur.path) == "" {
			return nil, fmt.Errorf("line %d: a file operation without a path", n)
		}
	}
	if len(ops) == 0 {
		return nil, errors.New("the patch changes no file")
	}
	return ops, nil
}

// unifiedDiff writes ops as a git-style unified diff whose names are the
// mapped (workspace-relative) ones, and checks that the diff parses back to
// exactly those names, so that the guards judge the files the host changes.
func unifiedDiff(ops []patchOp) (string, error) {
	var b strings.Builder
	type want struct {
		old, new string
		del      bool
	}
	var wants []want
	for _, op := range ops {
		switch op.kind {
		case "add":
			fmt.Fprintf(&b, "diff --git %s %s\nnew file mode 100644\n--- /dev/null\n+++ %s\n", quoteName("a/", op.path), quoteName("b/", op.path), quoteName("b/", op.path))
			if len(op.lines) > 0 {
				fmt.Fprintf(&b, "@@ -0,0 +1,%d @@\n", len(op.lines))
				for _, l := range op.lines {
					b.WriteString(l + "\n")
				}
			}
			wants = append(wants, want{"", op.path, false})
		case "delete":
			fmt.Fprintf(&b, "diff --git %s %s\ndeleted file mode 100644\n--- %s\n+++ /dev/null\n", quoteName("a/", op.path), quoteName("b/", op.path), quoteName("a/", op.path))
			wants = append(wants, want{op.path, "", true})
		case "update":
			to := op.path
			if op.to != "" {
				to = op.to
			}
			fmt.Fprintf(&b, "diff --git %s %s\n", quoteName("a/", op.path), quoteName("b/", to))
			if to != op.path {
				fmt.Fprintf(&b, "rename from %s\nrename to %s\n", quoteName("", op.path), quoteName("", to))
			}
			fmt.Fprintf(&b, "--- %s\n+++ %s\n", quoteName("a/", op.path), quoteName("b/", to))
			writeHunks(&b, op.lines)
			wants = append(wants, want{op.path, to, false})
		}
	}
	diff := b.String()
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		return "", fmt.Errorf("the patch cannot be judged: %v", err)
	}
	if len(files) != len(wants) {
		return "", fmt.Errorf("the patch cannot be judged: %d files read back, %d written", len(files), len(wants))
	}
	for i, f := range files {
		w := wants[i]
		old, nw := f.OldName, f.NewName
		if w.old == "" && f.IsNew {
			old = ""
		}
		if w.del {
			nw = ""
		}
		if (w.old != "" && old != w.old) || (w.new != "" && nw != w.new) || f.IsDelete != w.del {
			return "", fmt.Errorf("the patch cannot be judged: the file names %q and %q do not survive a unified diff", w.old, w.new)
		}
	}
	return diff, nil
}

// writeHunks writes an update's hunks with counts (their line numbers are
// unknown: Codex finds hunks by context).
func writeHunks(b *strings.Builder, lines []string) {
	var hunk []string
	flush := func() {
		if len(hunk) == 0 {
			return
		}
		old, nw := 0, 0
		for _, l := range hunk {
			switch {
			case strings.HasPrefix(l, "-"):
				old++
			case strings.HasPrefix(l, "+"):
				nw++
			default:
				old++
				nw++
			}
		}
		fmt.Fprintf(b, "@@ -1,%d +1,%d @@\n", old, nw)
		for _, l := range hunk {
			if l == "" {
				l = " "
			}
			b.WriteString(l + "\n")
		}
		hunk = hunk[:0]
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "@@") {
			flush()
			continue
		}
		hunk = append(hunk, l)
	}
	flush()
}

// quoteName writes prefix+name as git does: quoted, with C escapes, when
// it holds a space, a quote, a backslash or a byte outside printable ASCII.
func quoteName(prefix, name string) string {
	s := prefix + name
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '"' || c == '\\' || c >= 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
