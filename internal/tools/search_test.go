package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// envAt returns an Env over the existing directory dir.
func envAt(t testing.TB, dir string) *Env {
	t.Helper()
	root, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &Env{FS: root, Root: root, Config: config.Default()}
}

// runTool runs tool with args (marshalled to JSON), through its Guard first
// as the engine does.
func runTool(t testing.TB, tool *Tool, env *Env, args any) (string, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Guard != nil {
		if _, err := tool.Guard(env, b); err != nil {
			return "", err
		}
	}
	return tool.Run(context.Background(), env, b)
}

func goroot(tb testing.TB) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skipf("go env GOROOT: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("no Go source tree: %v", err)
	}
	return dir
}

func BenchmarkGrep(b *testing.B) {
	env := envAt(b, goroot(b))
	for _, pat := range []string{"func main", `func \w+\(ctx context\.Context`, "deadline exceeded", "TODO|FIXME|XXX", `[A-Z]{6,}_[0-9]+`} {
		for _, ic := range []bool{false, true} {
			name := pat
			if ic {
				name += "/i"
			}
			b.Run(name, func(b *testing.B) {
				cpu := cpuTime()
				for b.Loop() {
					if _, err := runTool(b, Grep(), env, map[string]any{"pattern": pat, "ignore_case": ic}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

func TestGrepFixture(t *testing.T) {
	t.Parallel()
	env, _ := fixture(t)
	const skipped = "[skipped files: 1 binary, 1 unreadable]\n[5 entries ignored by .gitignore not shown]\n"
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "needle"}, "a.go:2: // needle here\nkeep.log:1: needle kept\nsub/deeper/b.txt:3: needle again\nsub/deeper/local.txt:1: needle\n" + skipped},
		{map[string]any{"pattern": "NEEDLE", "ignore_case": true, "path": "sub"}, "sub/deeper/b.txt:1: NEEDLE upper\nsub/deeper/b.txt:3: needle again\nsub/deeper/local.txt:1: needle\n[2 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "needle", "glob": "*.txt"}, "sub/deeper/b.txt:3: needle again\nsub/deeper/local.txt:1: needle\n" + "[skipped files: 1 unreadable]\n[5 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "needle", "glob": "deeper/**", "path": "sub"}, "sub/deeper/b.txt:3: needle again\nsub/deeper/local.txt:1: needle\n[2 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "^needle (kept|again)$"}, "keep.log:1: needle kept\nsub/deeper/b.txt:3: needle again\n" + skipped},
		{map[string]any{"pattern": "needle", "path": "sub/deeper/b.txt"}, "sub/deeper/b.txt:3: needle again\n"},
		{map[string]any{"pattern": "needle", "path": "build"}, "build/out.txt:1: needle\n"},
		{map[string]any{"pattern": "absent"}, "No matches for \"absent\" in the workspace root (6 files searched).\n" + skipped},
	}
	for _, tc := range tests {
		for _, tool := range []*Tool{Grep(), SearchCode()} {
			got, err := runTool(t, tool, env, tc.args)
			if err != nil {
				t.Errorf("%s %v: %v", tool.Name, tc.args, err)
				continue
			}
			if tool.Name == "search_code" {
				continue // same matches; context is checked below
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s %v (-want +got):\n%s", tool.Name, tc.args, diff)
			}
		}
	}
}

func TestGrepRefusals(t *testing.T) {
	t.Parallel()
	env, _ := fixture(t)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "needle", "path": ".env"}, "masked"},
		{map[string]any{"pattern": "needle", "path": "keys/server.pem"}, "masked"},
		{map[string]any{"pattern": "needle", "path": "passwd"}, "escapes"},
		{map[string]any{"pattern": "needle", "path": "escape"}, "escapes"},
		{map[string]any{"pattern": "needle", "path": "../../etc"}, "escapes"},
		{map[string]any{"pattern": "needle", "path": "hard.txt"}, "hard link"},
		{map[string]any{"pattern": "needle", "path": "envlink"}, "masked"},
		{map[string]any{"pattern": "("}, "not a valid RE2"},
		{map[string]any{"pattern": `(?P<x>a)\1`}, "not a valid RE2"},
		{map[string]any{"pattern": "a", "glob": "[x"}, "not a valid pattern"},
		{map[string]any{"pattern": "a", "max_results": 0}, "max_results"},
		{map[string]any{"pattern": "a", "max_results": 1001}, "max_results"},
		{map[string]any{"pattern": "a", "context": 3}, "unknown field"},
		{map[string]any{"pattern": strings.Repeat("a", searchMaxPattern+1)}, "too long"},
	} {
		for _, tool := range []*Tool{Grep(), SearchCode()} {
			got, err := runTool(t, tool, env, tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %v = %q, %v; want an error mentioning %q", tool.Name, tc.args, got, err, tc.want)
			}
		}
	}
}

func TestSearchCodeContext(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	makeTree(t, ws, "f.txt=1\n2\n3 hit\n4\n5\n6\n7\n8 hit\n9 hit\n10\n11\n12\n13\n14 hit", "g.txt=hit\nz\n", "h.txt=hit\n2\n3\n4\n5\n6\n7\nhit\n")
	got, err := runTool(t, SearchCode(), envAt(t, ws), map[string]any{"pattern": "hit"})
	if err != nil {
		t.Fatal(err)
	}
	want := `f.txt-1- 1
f.txt-2- 2
f.txt:3: 3 hit
f.txt-4- 4
f.txt-5- 5
f.txt-6- 6
f.txt-7- 7
f.txt:8: 8 hit
f.txt:9: 9 hit
f.txt-10- 10
f.txt-11- 11
f.txt-12- 12
f.txt-13- 13
f.txt:14: 14 hit
--
g.txt:1: hit
g.txt-2- z
--
h.txt:1: hit
h.txt-2- 2
h.txt-3- 3
--
h.txt-6- 6
h.txt-7- 7
h.txt:8: hit
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("search_code (-want +got):\n%s", diff)
	}
}

func TestGrepCap(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	var specs []string
	for i := range 40 {
		specs = append(specs, fmt.Sprintf("d%d/f%02d.txt=x\nhit a\nhit b\nhit c\n", i%3, i))
	}
	specs = append(specs, "long.txt="+strings.Repeat("é", 300)+" hit "+strings.Repeat("z", 300)+"\n")
	makeTree(t, ws, specs...)
	env := envAt(t, ws)
	got, err := runTool(t, Grep(), env, map[string]any{"pattern": "hit", "max_results": 7})
	if err != nil {
		t.Fatal(err)
	}
	want := `d0/f00.txt:2: hit a
d0/f00.txt:3: hit b
d0/f00.txt:4: hit c
d0/f03.txt:2: hit a
d0/f03.txt:3: hit b
d0/f03.txt:4: hit c
d0/f06.txt:2: hit a
[114 more matching lines not shown (121 matching lines in 41 files); narrow the pattern, path or glob, or raise max_results (at most 1000)]
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grep cap (-want +got):\n%s", diff)
	}
	// A long match starting early, and a long line of invalid UTF-8.
	makeTree(t, ws, "early.txt=x"+strings.Repeat("a", 500)+"\n", "junk.bin.txt=hit"+strings.Repeat("\x80", 600)+"\n")
	for _, tc := range []struct{ glob, pattern string }{{"early.txt", "a+"}, {"junk.bin.txt", "hit"}} {
		got, err := runTool(t, Grep(), env, map[string]any{"pattern": tc.pattern, "glob": tc.glob})
		if err != nil || !strings.Contains(got, "[line cut, ") || !utf8.ValidString(got) {
			t.Errorf("grep %q in %s: %q, %v", tc.pattern, tc.glob, got, err)
		}
	}
	got, err = runTool(t, Grep(), env, map[string]any{"pattern": "hit", "glob": "long.txt"})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSuffix(got, "\n")
	if !strings.HasPrefix(line, "long.txt:1: …") || !strings.Contains(line, " hit ") || !strings.HasSuffix(line, "… [line cut, 905 bytes]") || len(line) > searchMaxLine+80 || !utf8.ValidString(line) {
		t.Errorf("long line rendered as %q", line)
	}
}

// TestGrepMatchesRipgrep is a differential test: on a copy of part of the
// Go source tree, grep must report the same (path, line) pairs as ripgrep.
func TestGrepMatchesRipgrep(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test against rg")
	}
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("rg not installed")
	}
	ws := t.TempDir()
	src := goroot(t)
	for _, d := range []string{"regexp", "strings", "unicode/utf8", "bufio"} {
		copyText(t, filepath.Join(src, d), filepath.Join(ws, d))
	}
	makeTree(t, ws, ".gitignore=*_test.go\n!example_test.go\n", "regexp/syntax/.gitignore=perl*.go\n",
		"unicode/x/crlf.txt=func a\r\nfunc b\r\n", "unicode/x/nonl.txt=no newline func", "unicode/x/fold.txt=KELVIN \u212Aelvin kelvin\nſtring\n")
	env := envAt(t, ws)
	for _, tc := range []struct {
		pattern string
		ic      bool
		path    string // broad patterns search a smaller part
	}{
		{`func \w+\(`, false, "."}, {"error", true, "."}, {`^\s*// Deprecated`, false, "."}, {"TODO|BUG|XXX", false, "."},
		{`[0-9]{3,}`, false, "."}, {`\bre\b`, false, "."}, {`é|ü|\x{212A}`, false, "."},
		{"kelvin", true, "."}, {"string", true, "unicode"}, {`Regexp\)`, false, "."}, {`(?i)Rune(Error|Self)`, false, "."},
		{`[[:upper:]]{4}`, false, "unicode"}, {`a\sb`, false, "."},
		{"x*", false, "unicode"}, {"$", false, "unicode"}, {"func", false, "unicode"}, {`\.`, false, "unicode"},
	} {
		got, err := runTool(t, Grep(), env, map[string]any{"pattern": tc.pattern, "ignore_case": tc.ic, "path": tc.path, "max_results": searchMaxResults})
		if err != nil {
			t.Fatalf("grep %q: %v", tc.pattern, err)
		}
		if strings.Contains(got, "more matching lines not shown") {
			t.Fatalf("grep %q: too many matches for a differential test", tc.pattern)
		}
		args := []string{"--no-config", "-n", "--no-heading", "--hidden", "--no-require-git", "-g", "!.git", "-e", tc.pattern, tc.path}
		if tc.ic {
			args = append([]string{"-i"}, args...)
		}
		cmd := exec.Command(rg, args...)
		cmd.Dir = ws
		out, err := cmd.Output()
		if err != nil && len(out) > 0 {
			t.Fatalf("rg %q: %v", tc.pattern, err)
		}
		want := locations(string(out), ":")
		if len(want) == 0 {
			t.Errorf("rg found nothing for %q: the case tests nothing", tc.pattern)
		}
		if diff := cmp.Diff(want, locations(got, ": ")); diff != "" {
			t.Errorf("grep %q ignore_case=%v differs from rg (-rg +grep):\n%s", tc.pattern, tc.ic, diff)
		}
	}
}

// locations returns the sorted "path:line" pairs of grep-style output.
func locations(out, sep string) []string {
	var locs []string
	for _, l := range strings.Split(out, "\n") {
		p, rest, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, "[") {
			continue
		}
		n, _, ok := strings.Cut(rest, sep)
		if !ok {
			continue
		}
		locs = append(locs, strings.TrimPrefix(p, "./")+":"+n)
	}
	slices.Sort(locs)
	return locs
}

// copyText copies the regular files without NUL bytes under src to dst.
func copyText(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// naiveLines is the definition scan must meet: the lines of data (split on
// "\n", no empty last line after a final newline) that re matches alone.
func naiveLines(re *regexp.Regexp, data []byte) []int {
	var out []int
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if re.Match(l) {
			out = append(out, i+1)
		}
	}
	return out
}

func FuzzMatcher(f *testing.F) {
	for _, s := range []struct{ p, d string }{
		{"needle", "a\nneedle\nb"}, {"(?i)KS", "ks\n\u212As\nx"}, {`a\sb`, "a\nb\na b\n"}, {"^$", "\n\nx\n"},
		{"x*", "abc\n\n"}, {`\Aa`, "a\na\n"}, {`foo|bar|baz`, "xbaz\nfoo"}, {`[^a]`, "a\naa\n\n"}, {`\x{FFFD}`, "\xff\n"},
		{`(ab)+c{2}`, "ababcc\nabc"}, {`\bis\b`, "this is\nis"}, {"a+", "x" + strings.Repeat("a", 300)},
		{"h", "h" + strings.Repeat("\x80", 300)},
	} {
		f.Add(s.p, []byte(s.d), false)
	}
	f.Fuzz(func(t *testing.T, pattern string, data []byte, ic bool) {
		m, err := compileMatcher(pattern, ic)
		if err != nil {
			return
		}
		var got []int
		m.scan(data, func(n, start, end int) {
			if start < 0 || end > len(data) || start > end || bytes.IndexByte(data[start:end], '\n') >= 0 {
				t.Fatalf("bad line range [%d,%d) of %d bytes", start, end, len(data))
			}
			got = append(got, n)
		})
		for _, l := range bytes.Split(data, []byte("\n")) {
			// Each run of invalid bytes becomes one U+FFFD (3 bytes): at most 3x.
			if s := m.cutLine(l); len(s) > 3*searchMaxLine+40 || !utf8.ValidString(s) {
				t.Fatalf("cutLine rendered a %d-byte line as %d bytes: %q", len(l), len(s), s)
			}
		}
		if want := naiveLines(m.re, data); !slices.Equal(got, want) {
			t.Fatalf("pattern %q ic=%v on %q: scan found lines %v, want %v", pattern, ic, data, got, want)
		}
	})
}

// TestGrepDeterministic: however the workers interleave, the same call
// gives the same output, and the cap keeps the first matches in path order.
func TestGrepDeterministic(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	var specs []string
	for i := range 300 {
		specs = append(specs, fmt.Sprintf("d%d/e%d/f%03d.txt=%s", i%7, i%5, i, strings.Repeat("hit\n", 1+i%4)))
	}
	makeTree(t, ws, specs...)
	env := envAt(t, ws)
	first, err := runTool(t, Grep(), env, map[string]any{"pattern": "hit", "max_results": 50})
	if err != nil {
		t.Fatal(err)
	}
	locs := locations(first, ": ")
	if len(locs) != 50 || !slices.IsSortedFunc(strings.Split(strings.TrimSpace(first), "\n")[:50], func(a, b string) int {
		pa, _, _ := strings.Cut(a, ":")
		pb, _, _ := strings.Cut(b, ":")
		return strings.Compare(pa, pb)
	}) {
		t.Fatalf("first 50 matches not in path order:\n%s", first)
	}
	for range 10 {
		again, err := runTool(t, Grep(), env, map[string]any{"pattern": "hit", "max_results": 50})
		if err != nil || again != first {
			t.Fatalf("output changed between runs (err %v):\n%s\nvs\n%s", err, first, again)
		}
	}
}

func TestGrepCancelled(t *testing.T) {
	t.Parallel()
	env, _ := fixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Grep().Run(ctx, env, json.RawMessage(`{"pattern":"needle"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestGrepBinaryDetection: a NUL in the first 8 KiB marks a file binary
// whatever its size (large files are read in two steps), and one further
// in does not.
func TestGrepBinaryDetection(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	pad := func(n int) string { return strings.Repeat("x\n", n/2) }
	makeTree(t, ws,
		"small-bin.txt=a\x00b\nneedle\n",
		"large-bin.txt=\x00"+pad(200<<10)+"needle\n",
		"late-nul.txt="+pad(searchBinaryProbe)+"\x00\nneedle\n",
		"large-late-nul.txt="+pad(100<<10)+"\x00\n"+pad(100<<10)+"needle\n",
		"edge.txt="+pad(searchFirstRead-2)+"needle\n"+pad(searchFirstRead),
	)
	got, err := runTool(t, Grep(), envAt(t, ws), map[string]any{"pattern": "needle"})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("edge.txt:%d: needle\nlarge-late-nul.txt:%d: needle\nlate-nul.txt:%d: needle\n[skipped files: 2 binary]\n",
		(searchFirstRead-2)/2+1, 100<<10+2, searchBinaryProbe/2+2)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
