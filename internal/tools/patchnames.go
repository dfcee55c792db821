package tools

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// The file names of a patch are those git apply would use, so that the
// paths a person approves, the paths confined and the paths written are the
// ones the patch means under the rules every tool that applies patches
// follows. go-gitdiff strips one leading component (a/, b/) in "diff --git"
// patches, as git does, but takes the names of a plain unified diff
// ("--- x" / "+++ y" with no "diff --git" line) as written, so
// "+++ b/new.txt" would create b/new.txt. fixPlainNames renames those files
// as git apply does:
//
//   - one leading component is stripped (-p1), unless the first plain
//     header's names have no slash at all (or only /dev/null and such a
//     name), in which case none is, for the whole patch (git's guess);
//   - a name with too few components, or empty once stripped, is no name;
//   - of two names, the first is kept when it is a prefix of the second
//     (file.c against file.c.orig), else the second.
//
// Where git's rule strips a directory that is probably part of the path —
// the same first component on both sides that is not a/ or b/
// ("--- src/a.go" / "+++ src/a.go" would patch a.go), or a single name
// whose first component is not a/ or b/ ("+++ src/new.go" would create
// new.go) — the patch is refused as ambiguous and the error says how to
// write it. A patch whose plain headers set -p0 and that has "diff --git"
// headers after them is refused too: git would read those with -p0 as
// well, go-gitdiff with -p1.

// errAmbiguousNames refuses a plain diff whose names git would strip in a
// way the writer probably did not mean.
var errAmbiguousNames = errors.New("the patch's file names are ambiguous")

// plainHeader is the ---/+++ pair of a file in a plain unified diff.
type plainHeader struct {
	old, new string // as written, unquoted, without a timestamp
}

// header is one file header found in a patch, in order: a "diff --git"
// header (plain == nil) or a plain one.
type header struct {
	plain *plainHeader
	line  int // 1-based, for errors
}

// scanHeaders finds the file headers of a patch the way go-gitdiff does: a
// "diff --git" line starts a git header (its ---/+++ lines belong to it); a
// "--- " line followed by "+++ " and "@@ -" outside a git header is a plain
// header; the lines of each hunk are skipped by the counts in its "@@"
// line, so a removed "-- x" line ("--- x") is never taken for a header.
func scanHeaders(patch string) []header {
	lines := strings.SplitAfter(patch, "\n")
	var out []header
	inGit := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "diff --git "):
			out = append(out, header{line: i + 1})
			inGit = true
		case strings.HasPrefix(l, "@@ -"):
			oldN, newN, ok := hunkCounts(l)
			if !ok {
				continue
			}
			i = skipHunk(lines, i+1, oldN, newN) - 1
			inGit = false
		case !inGit && strings.HasPrefix(l, "--- ") && i+2 < len(lines) &&
			strings.HasPrefix(lines[i+1], "+++ ") && strings.HasPrefix(lines[i+2], "@@ -"):
			out = append(out, header{line: i + 1, plain: &plainHeader{
				old: headerName(strings.TrimSuffix(l[4:], "\n")),
				new: headerName(strings.TrimSuffix(lines[i+1][4:], "\n")),
			}})
			i++
		}
	}
	return out
}

// hunkCounts reads the old and new line counts of "@@ -a[,b] +c[,d] @@".
func hunkCounts(l string) (oldN, newN int, ok bool) {
	rest, _ := strings.CutPrefix(l, "@@ -")
	oldR, rest, ok1 := strings.Cut(rest, " +")
	newR, _, ok2 := strings.Cut(rest, " @@")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	count := func(r string) (int, bool) {
		_, n, has := strings.Cut(r, ",")
		if !has {
			return 1, true
		}
		v, err := strconv.Atoi(n)
		return v, err == nil && v >= 0
	}
	oldN, ok1 = count(oldR)
	newN, ok2 = count(newR)
	return oldN, newN, ok1 && ok2
}

// skipHunk returns the index of the first line after a hunk body starting
// at lines[i] with oldN old and newN new lines.
func skipHunk(lines []string, i, oldN, newN int) int {
	for ; i < len(lines) && (oldN > 0 || newN > 0); i++ {
		switch l := lines[i]; {
		case l == "\n" || strings.HasPrefix(l, " "):
			oldN--
			newN--
		case strings.HasPrefix(l, "-"):
			oldN--
		case strings.HasPrefix(l, "+"):
			newN--
		case strings.HasPrefix(l, "\\"):
		default:
			return i
		}
	}
	// A "\ No newline at end of file" after the last line belongs to it.
	if i < len(lines) && strings.HasPrefix(lines[i], "\\") {
		i++
	}
	return i
}

// headerName reads a name from a ---/+++ line as go-gitdiff does: a
// C-quoted name, or everything up to a tab (GNU diff puts the timestamp
// after one).
func headerName(s string) string {
	if strings.HasPrefix(s, `"`) {
		for n := 1; n < len(s); n++ {
			if s[n] == '"' && s[n-1] != '\\' {
				if name, err := strconv.Unquote(s[:n+1]); err == nil {
					return name
				}
				break
			}
		}
	}
	name, _, _ := strings.Cut(s, "\t")
	return name
}

// fixPlainNames gives the files of a plain unified diff the names git apply
// would (see the top of this file). files and the headers scanHeaders finds
// must correspond one to one.
func fixPlainNames(patch string, files []*gitdiff.File) error {
	hdrs := scanHeaders(patch)
	if len(hdrs) != len(files) {
		return fmt.Errorf("the patch has %d file headers but %d files parse; send one file header (diff --git, or ---/+++) before each file's hunks", len(hdrs), len(files))
	}
	p, known := 1, false
	for i, h := range hdrs {
		if h.plain == nil {
			if known && p != 1 {
				return fmt.Errorf("%w: line %d is a \"diff --git\" header after plain ---/+++ headers without a/ and b/ prefixes; use one style for every file", errAmbiguousNames, h.line)
			}
			continue
		}
		f := files[i]
		if !known {
			// git's guess_p_value: names without a slash mean -p0.
			g1, g2 := guessP(h.plain.old), guessP(h.plain.new)
			if g1 < 0 {
				g1 = g2
			}
			if g1 >= 0 && g1 == g2 {
				p, known = g1, true
			}
		}
		if err := checkStrip(h, p); err != nil {
			return err
		}
		oldName, newName := stripName(h.plain.old, p, ""), ""
		switch {
		case f.IsNew:
			newName = stripName(h.plain.new, p, "")
		case f.IsDelete:
			oldName = stripName(h.plain.old, p, "")
		default:
			newName = stripName(h.plain.new, p, oldName)
		}
		switch {
		case f.IsNew:
			f.OldName, f.NewName = "", newName
		case f.IsDelete:
			f.OldName, f.NewName = oldName, ""
		default:
			f.OldName, f.NewName = newName, newName
		}
		if (f.IsNew || !f.IsDelete) && f.NewName == "" || f.IsDelete && f.OldName == "" {
			return fmt.Errorf("line %d: no file name is left in %q / %q once %d leading component(s) are removed, as git apply does; write --- a/PATH and +++ b/PATH", h.line, h.plain.old, h.plain.new, p)
		}
	}
	return nil
}

// guessP is git's guess_p_value for a patch applied at the top of the work
// tree: 0 for a name without a slash, -1 (no guess) otherwise.
func guessP(name string) int {
	if name == "/dev/null" || name == "" {
		return -1
	}
	if strings.Contains(name, "/") {
		return -1
	}
	return 0
}

// stripName removes p leading components from name as git's
// find_name_common does, returning def when too few are left; def is also
// preferred when it is a prefix of the result.
func stripName(name string, p int, def string) string {
	if name == "/dev/null" {
		return def
	}
	start := 0
	if p > 0 {
		start = -1
		for i := 0; i < len(name); i++ {
			if name[i] == '/' {
				if p--; p == 0 {
					start = i + 1
					break
				}
			}
		}
		if start < 0 {
			return def
		}
	}
	s := name[start:]
	if s == "" {
		return def
	}
	if def != "" && len(def) < len(s) && strings.HasPrefix(s, def) {
		return def
	}
	return squashSlashes(s)
}

func squashSlashes(s string) string {
	for strings.Contains(s, "//") {
		s = strings.ReplaceAll(s, "//", "/")
	}
	return s
}

// checkStrip refuses a plain header whose -p1 would strip what is
// probably a directory of the path.
func checkStrip(h header, p int) error {
	if p != 1 {
		return nil
	}
	first := func(n string) (string, bool) {
		if n == "/dev/null" {
			return "", false
		}
		c, _, _ := strings.Cut(n, "/")
		return c, true
	}
	o, hasOld := first(h.plain.old)
	n, hasNew := first(h.plain.new)
	prefix := func(c string) bool { return c == "a" || c == "b" }
	switch {
	case hasOld && hasNew && (o != n || prefix(o)):
		return nil
	case hasOld && !hasNew && prefix(o), hasNew && !hasOld && prefix(n):
		return nil
	}
	name := h.plain.new
	if !hasNew {
		name = h.plain.old
	}
	return fmt.Errorf("%w: line %d names %q without the a/ and b/ prefixes; git apply would remove %q and patch %q: write --- a/PATH and +++ b/PATH (or --- /dev/null and +++ b/PATH for a new file)",
		errAmbiguousNames, h.line, name, firstComp(name)+"/", stripName(name, 1, "(nothing)"))
}

func firstComp(s string) string {
	c, _, _ := strings.Cut(s, "/")
	return c
}
