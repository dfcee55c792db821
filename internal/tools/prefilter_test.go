package tools

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// render writes a sequence as a readable pattern: single bytes as
// themselves, classes as [..] with ranges, the trap mark as "!".
func render(s classSeq) string {
	var b strings.Builder
	for i := range s.pos {
		m := s.pos[i].members()
		if len(m) == 1 {
			fmt.Fprintf(&b, "%s", strings.Trim(fmt.Sprintf("%q", string(m)), `"`))
			continue
		}
		b.WriteByte('[')
		for j := 0; j < len(m); {
			k := j
			for k+1 < len(m) && m[k+1] == m[k]+1 {
				k++
			}
			if k-j >= 2 {
				fmt.Fprintf(&b, "%c-%c", m[j], m[k])
			} else {
				for _, c := range m[j : k+1] {
					b.WriteByte(c)
				}
			}
			j = k + 1
		}
		b.WriteByte(']')
	}
	if s.traps {
		b.WriteByte('!')
	}
	return b.String()
}

func requiredFor(t testing.TB, pattern string, ic bool) []string {
	flags := syntax.Perl
	if ic {
		flags |= syntax.FoldCase
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := bestSet(analyze(tree.Simplify()))
	var out []string
	for _, s := range set {
		out = append(out, render(s))
	}
	return out
}

func TestRequiredSequences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		ic      bool
		want    []string // nil: the expression runs over the whole buffer
	}{
		{"func main", false, []string{"func main"}},
		{`func \w+\(ctx context\.Context`, false, []string{"[0-9A-Z_a-z](ctx context.Context"}},
		{"deadline exceeded", true, []string{"[Dd][Ee][Aa][Dd][Ll][Ii][Nn][Ee] [Ee][Xx][Cc][Ee][Ee][Dd][Ee][Dd]"}},
		{"TODO|FIXME|XXX", false, []string{"TODO", "FIXME", "XXX"}},
		// The only literal, "_", is common; the classes around it are not.
		{`[A-Z]{6,}_[0-9]+`, false, []string{"[A-Z][A-Z][A-Z][A-Z][A-Z][A-Z]_[0-9]"}},
		// No literal at all: a class sequence still rules out most text.
		{`[A-Z]{6,}[0-9]+`, false, []string{"[A-Z][A-Z][A-Z][A-Z][A-Z][A-Z][0-9]"}},
		{`x{2,5}y`, false, []string{"xx"}},
		{`(ab)+c`, false, []string{"abc"}},
		{`a+b+c`, false, []string{"bc"}},
		{`foo\bbar`, false, []string{"foobar"}},
		{`(foo|bar)[0-9]`, false, []string{"foo", "bar"}},
		{`(?:foo|ba?r)z`, false, []string{"z"}},
		// k and s fold to KELVIN SIGN and LONG S: marked.
		{"kiss", true, []string{"[Kk][Ii][Ss][Ss]!"}},
		{`(?i)[a-z]k9`, false, []string{"[A-Za-z][Kk]9!"}},
		// Non-ASCII runes: exact bytes, unless folded.
		{"héllo", false, []string{"h\\xc3\\xa9llo"}},
		{"hé", true, []string{"[Hh]"}},
		// U+FFFD also matches invalid bytes; "." any rune.
		{"a\uFFFDb", false, []string{"b"}},
		{"a.b", false, []string{"b"}},
		// A newline is in no line: the empty class never matches.
		{`a\nb`, false, []string{"a[]b"}},
		{"x*", false, nil},
		{"", false, nil},
		{`\w+`, false, nil}, // most bytes are word bytes: not worth it
		{`\d{3,}`, false, []string{"[0-9][0-9][0-9]"}},
	} {
		got := requiredFor(t, tc.pattern, tc.ic)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("required for %q ic=%v (-want +got):\n%s", tc.pattern, tc.ic, diff)
		}
	}
}

func TestRequiredHugeRepeat(t *testing.T) {
	t.Parallel()
	// Expanded, these are thousands of classes; the sequences stay short.
	for _, p := range []string{`[a-z]{1000}`, `(?:[a-z]{100}){9}`, `(?:ab{100}c){9}`, `(?:x{1000})+y`, `(?:x{300}){3,}y`} {
		for _, s := range requiredFor(t, p, false) {
			if len(s) > 8*maxSeq {
				t.Errorf("%q: a sequence of %d bytes rendered", p, len(s))
			}
		}
	}
}

// FuzzPrefilter: the prefilter never rules out a line the expression
// matches, and an occurrence it reports is one.
func FuzzPrefilter(f *testing.F) {
	for _, s := range []struct{ p, d string }{
		{`[A-Z]{6,}_[0-9]+`, "const X_1, ABCDEF_12"}, {"func main", "func main() {"}, {"(?i)kiss", "\u212Aiss"},
		{`x{2,5}y`, "xxxxxy"}, {`(ab)+c`, "ababc"}, {`(?i)[a-z]k9`, "a\u212A9"}, {"héllo", "h\xc3\xa9llo"},
		{`a+b+c`, "aabbc"}, {`\w+_\d+`, "a_1"}, {`(?:foo|ba?r)z`, "brz"}, {`[^a]b`, "\xffb"},
		{"TODO|FIXME|XXX", "a FIXME XXX"}, {"QaZ|QbbZ|cQ", "xQbbZ cQ QaZ"},
	} {
		f.Add(s.p, s.d, false)
	}
	f.Fuzz(func(t *testing.T, pattern, line string, ic bool) {
		if strings.Contains(line, "\n") || len(pattern) > 200 {
			return
		}
		flags := syntax.Perl
		prefix := "(?m)"
		if ic {
			flags |= syntax.FoldCase
			prefix = "(?mi)"
		}
		tree, err := syntax.Parse(pattern, flags)
		if err != nil {
			return
		}
		re, err := regexp.Compile(prefix + pattern)
		if err != nil {
			return
		}
		tree = tree.Simplify()
		if usesTextAnchors(tree) {
			return
		}
		set, _ := bestSet(analyze(tree))
		if set == nil {
			return
		}
		data := []byte(line)
		found := false
		var fds []*seqFinder
		first := -1
		for _, s := range set {
			fd := newSeqFinder(s)
			fds = append(fds, fd)
			i := fd.index(data)
			if i < 0 {
				continue
			}
			if first < 0 || i < first {
				first = i
			}
			if i+len(s.pos) > len(data) {
				t.Fatalf("%q in %q: occurrence at %d runs past the end", render(s), line, i)
			}
			for k := range s.pos {
				if !s.pos[k].has(data[i+k]) {
					t.Fatalf("%q in %q: reported at %d, but byte %d does not match", render(s), line, i, k)
				}
			}
			found = true
		}
		// Finders joined by their byte find the first occurrence of any.
		grouped := -1
		for _, g := range groupFinders(fds) {
			if i := g.index(data); i >= 0 && (grouped < 0 || i < grouped) {
				grouped = i
			}
		}
		if grouped != first {
			t.Fatalf("pattern %q in %q: grouped finders report %d, the finders alone %d", pattern, line, grouped, first)
		}
		if re.MatchString(line) && !found && !(bytes.ContainsRune(data, '\u212A') || bytes.ContainsRune(data, '\u017F')) {
			var rs []string
			for _, s := range set {
				rs = append(rs, render(s))
			}
			t.Fatalf("pattern %q ic=%v matches %q, but the prefilter (%q) rules it out", pattern, ic, line, rs)
		}
	})
}

// BenchmarkScan runs the matcher alone over the Go tree's text files, held
// in memory: the cost of finding lines, without the walk and the reads.
func BenchmarkScan(b *testing.B) {
	var files [][]byte
	err := filepath.WalkDir(goroot(b), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && len(data) <= searchMaxFileSize && bytes.IndexByte(data[:min(len(data), searchBinaryProbe)], 0) < 0 {
			files = append(files, data)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		pattern string
		ic      bool
	}{
		{"func main", false}, {`func \w+\(ctx context\.Context`, false}, {"deadline exceeded", true},
		{"TODO|FIXME|XXX", false}, {`[A-Z]{6,}_[0-9]+`, false}, {`[A-Z]{6,}[0-9]+`, false}, {"_", false},
	} {
		m, err := compileMatcher(tc.pattern, tc.ic)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.pattern, func(b *testing.B) {
			lines := 0
			cpu := cpuTime()
			for b.Loop() {
				lines = 0
				for _, f := range files {
					m.scan(f, func(int, int, int) { lines++ })
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(lines), "lines")
		})
	}
}

// cpuTime is the process's CPU time so far, user and system, in
// nanoseconds: on a shared machine it moves less than the wall clock.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
