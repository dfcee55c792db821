package shellpolicy

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/testenv"
	"mvdan.cc/sh/v3/syntax"
)

// oraclePrintf is the command every oracle word is the argument of: it
// prints each argument followed by a NUL, with no interpretation.
const oraclePrintf = `printf '%s\0' `

// parseLiteralArgs parses oraclePrintf+words as bash and returns the
// argument words after the format, or nil when the line is not one plain
// printf call (the words made another command, a redirection, a comment…).
func parseLiteralArgs(words string) []*syntax.Word {
	if !LiteralLineOK(words) {
		return nil
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(oraclePrintf+words), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil
	}
	st := f.Stmts[0]
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Background || st.Coprocess || st.Negated || len(st.Redirs) > 0 || len(c.Assigns) > 0 || len(c.Args) < 3 {
		return nil
	}
	return c.Args[2:]
}

func TestLiteralTable(t *testing.T) {
	t.Parallel()
	const refused = "\x00refused"
	for _, tc := range []struct{ word, want string }{
		{`abc`, "abc"},
		{`-rf`, "-rf"},
		{`/usr/bin/x.y`, "/usr/bin/x.y"},
		{`a,b`, "a,b"},
		{`a=b`, "a=b"},
		{`--prefix=/x`, "--prefix=/x"},
		{`a#b`, "a#b"},
		{`a!b`, "a!b"},
		{`!`, "!"},
		{`"!"`, "!"},
		{`a^b%c@d+e`, "a^b%c@d+e"},
		{`HEAD~1`, "HEAD~1"},
		{`'a b'`, "a b"},
		{`'$x'`, "$x"},
		{"'`x`'", "`x`"},
		{`'\'`, `\`},
		{`'a'"b"c`, "abc"},
		{`""`, ""},
		{`''`, ""},
		{`"a b"`, "a b"},
		{`"*"`, "*"},
		{`'*'`, "*"},
		{`"~"`, "~"},
		{`'~'`, "~"},
		{`"{a,b}"`, "{a,b}"},
		{"'a\nb'", "a\nb"},
		{"\"a\nb\"", "a\nb"},
		{"'a\tb'", "a\tb"},
		{`“a”`, "“a”"},
		{`‘a’`, "‘a’"},
		{`é`, "é"},
		{`"é"`, "é"},

		// Expansions and quoting bash decodes.
		{`$"x"`, refused},
		{`$'x'`, refused},
		{`a$'x'`, refused},
		{`"a$b"`, refused},
		{`"a$"`, refused},
		{`a$`, refused},
		{`$`, refused},
		{`$x`, refused},
		{`${x}`, refused},
		{`$(x)`, refused},
		{"a`b`", refused},
		{"\"a`b`\"", refused},
		{`$((1))`, refused},
		{`$[1]`, refused},
		{`<(x)`, refused},
		{`\$`, refused},
		{`\a`, refused},
		{`"\\"`, refused},
		{`"\a"`, refused},
		{`"\$"`, refused},
		{`"a\"b"`, refused},
		{"a\\\nb", refused},
		{"\"a\\\nb\"", refused},
		{"'a'\\\n'b'", refused},
		{"\"a\"\\\nb", refused},
		{"\"a\\\n\"", refused},
		{"\"\\\n\"", refused},

		// Tilde.
		{`~`, refused},
		{`~/x`, refused},
		{`~user`, refused},
		{`~+`, refused},
		{`~-`, refused},
		{`a=~`, refused},
		{`a=~/x`, refused},
		{`x=a:~`, refused},
		{`PATH=/a:~/b`, refused},
		{`''~`, refused},
		{`""~`, refused},
		{`a''~`, refused},
		{`a=''~`, refused},

		// Globs, braces, extglob.
		{`{a,b}`, refused},
		{`{1..3}`, refused},
		{`a{b}`, refused},
		{`{`, refused},
		{`}`, refused},
		{`*`, refused},
		{`a*`, refused},
		{`?`, refused},
		{`[a]`, refused},
		{`a]`, refused},
		{`@(a)`, refused},
		{`!(a)`, refused},
		{`+(a)`, refused},
		{`*(a)`, refused},
		{`?(a)`, refused},

		// Bytes bash or the parser treat specially.
		{"'a\x01b'", refused},
		{"a\x01b", refused},
		{"'a\x7fb'", refused},
		{"\"a\x1bb\"", refused},
		{"'\xff'", refused},
		{"a\xc3", refused},
	} {
		args := parseLiteralArgs(tc.word)
		if len(args) != 1 {
			if tc.want == refused {
				continue // not even one word: nothing to accept
			}
			t.Errorf("%q: parsed as %d words", tc.word, len(args))
			continue
		}
		got, ok := Literal(args[0])
		if !ok {
			got = refused
		}
		if got != tc.want {
			t.Errorf("Literal(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

// TestLiteralLineBytes: a NUL or a CR inside a word is refused by the
// word reader even when the caller did not refuse the line (the parser
// drops a CR before a newline, which bash keeps).
func TestLiteralLineBytes(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"a\x00b", "'a\x00b'", "\"a\x00b\"", "'a\r\nb'", "\"a\r\nb\"", "a\r\nb", "'a\rb'", "a\\\r\nb"} {
		if LiteralLineOK(src) {
			t.Errorf("LiteralLineOK(%q) = true", src)
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(": "+src), "")
		if err != nil {
			continue
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			if w, ok := n.(*syntax.Word); ok {
				raw := (": " + src)[w.Pos().Offset():w.End().Offset()]
				if v, ok := Literal(w); ok && strings.ContainsAny(raw, "\x00\r") {
					t.Errorf("Literal(%q) = %q, want refused", raw, v)
				}
			}
			return true
		})
	}
	if LiteralLineOK("a\r\nb") || !LiteralLineOK("a\nb") {
		t.Error("LiteralLineOK must refuse CR and only CR or NUL")
	}
}

// literalShells are the shells the oracle asks: bash as warden runs it, in
// a byte locale and a UTF-8 one, and dash, which must agree on every
// accepted word (no reading of an accepted word may differ).
var literalShells = []struct {
	name string
	args []string
	env  []string
}{
	{"bash C.UTF-8", []string{"bash", "--noprofile", "--norc", "-c"}, []string{"LC_ALL=C.UTF-8"}},
	{"bash C", []string{"bash", "--noprofile", "--norc", "-c"}, []string{"LC_ALL=C"}},
	{"dash", []string{"dash", "-c"}, []string{"LC_ALL=C.UTF-8"}},
}

// literalOracle runs oraclePrintf+words under every literal shell and
// returns a description of the first disagreement with want, or "".
func literalOracle(t testing.TB, words string, want []string) string {
	t.Helper()
	var exp bytes.Buffer
	for _, v := range want {
		exp.WriteString(v)
		exp.WriteByte(0)
	}
	home := t.TempDir()
	for _, sh := range literalShells {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, sh.args[0], append(sh.args[1:], oraclePrintf+words)...)
		cmd.Args[0] = sh.args[0]
		cmd.Dir = home
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "USER=oracle"}, sh.env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			return fmt.Sprintf("%s: %v: %s", sh.name, err, stderr.Bytes())
		}
		if !bytes.Equal(out, exp.Bytes()) {
			return fmt.Sprintf("%s printed %q, Literal read %q", sh.name, out, exp.Bytes())
		}
	}
	return ""
}

// checkLiteralWords runs the oracle on the word sources srcs, whose values
// Literal read as vals: one printf per batch of words, and a batch that
// disagrees is rerun a word at a time to name the word.
func checkLiteralWords(t *testing.T, srcs, vals []string) {
	t.Helper()
	const batch = 200
	for i := 0; i < len(srcs); i += batch {
		j := min(i+batch, len(srcs))
		if literalOracle(t, strings.Join(srcs[i:j], " "), vals[i:j]) == "" {
			continue
		}
		for k := i; k < j; k++ {
			if msg := literalOracle(t, srcs[k], vals[k:k+1]); msg != "" {
				t.Errorf("%q: %s", srcs[k], msg)
			}
		}
	}
}

// literalCorpusWords returns the source text and value of every word of
// lines that Literal accepts, each once.
func literalCorpusWords(lines []string) (srcs, vals []string) {
	seen := map[string]bool{}
	for _, line := range lines {
		if !LiteralLineOK(line) {
			continue
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
		if err != nil {
			continue
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			w, ok := n.(*syntax.Word)
			if !ok {
				return true
			}
			v, ok := Literal(w)
			if !ok {
				return true
			}
			src := line[w.Pos().Offset():w.End().Offset()]
			if !seen[src] {
				seen[src] = true
				srcs, vals = append(srcs, src), append(vals, v)
			}
			return true
		})
	}
	return srcs, vals
}

// TestLiteralOracle checks every word Literal accepts in the table, the
// judge corpora and the fuzz seeds against what real bash (and dash)
// print for it, byte for byte.
func TestLiteralOracle(t *testing.T) {
	testenv.Need(t, "bash", "dash")
	var lines []string
	for _, name := range []string{"testdata/attacks.jsonl", "testdata/benign.jsonl", "testdata/oracle.jsonl"} {
		for _, r := range readCorpus(t, name) {
			lines = append(lines, r.Cmd)
		}
	}
	for _, s := range literalSeeds {
		lines = append(lines, oraclePrintf+s)
	}
	srcs, vals := literalCorpusWords(lines)
	if len(srcs) < 500 {
		t.Fatalf("only %d accepted words in the corpora", len(srcs))
	}
	checkLiteralWords(t, srcs, vals)
	t.Logf("%d accepted words agree with bash and dash", len(srcs))
}

// literalFragments are the pieces TestLiteralGenerated builds words from:
// every quoting form, the bytes that start an expansion, and text around
// them.
var literalFragments = []string{
	"a", "Z9", "-", "--x", "=", ":", "~", "~u", "a=", "x+=", "a[1]=", "p=a:", "--o=", "/", ".", ",", "!", "#", "%", "^", "@", "+",
	"'b c'", "''", `""`, `"d e"`, `"!"`, `"~"`, `"*"`, `"'"`, `'"'`, "'\\'", "'$x'", "'`x`'",
	"\"\n\"", "'\t'", "é", "“", "’", "\u00a0", "日本",
	"$", "$x", `$"x"`, "$'x'", "`x`", "\\", "\\$", `"\\"`, `"$"`, `"$x"`, "{", "}", "{a,b}", "*", "?", "[a]",
	"@(a)", "!(a)", "(", ")", "\\\n",
}

// TestLiteralGenerated builds words from literalFragments with a fixed
// seed and checks every one Literal accepts against bash and dash.
func TestLiteralGenerated(t *testing.T) {
	testenv.Need(t, "bash", "dash")
	r := rand.New(rand.NewPCG(1, 2))
	var srcs, vals []string
	for len(srcs) < 5000 {
		var b strings.Builder
		for n := 1 + r.IntN(6); n > 0; n-- {
			b.WriteString(literalFragments[r.IntN(len(literalFragments))])
		}
		args := parseLiteralArgs(b.String())
		if len(args) != 1 {
			continue
		}
		if v, ok := Literal(args[0]); ok {
			srcs, vals = append(srcs, b.String()), append(vals, v)
		}
	}
	t.Logf("%d generated words accepted", len(srcs))
	checkLiteralWords(t, srcs, vals)
}

// literalSeeds are the fuzz seeds; TestLiteralOracle checks them too.
var literalSeeds = []string{
	`abc`, `'a b'`, `"a b"`, `$"x"`, `$'x'`, `"a$b"`, "a`b`", `\$`, `"\\"`, `~`, `~user`, `a=~`,
	`HEAD~1`, `x=a:~`, `{a,b}`, `*`, `?`, `[a]`, `@(a)`, "'a\nb'", `“a”`, "a\\\nb", `a!b`, `a#b`,
	`'a'"b"c`, `""`, `é`, `a=b`, `--x=~`, `-`, `--`, `=`, `%`, `a:b`, `:~`, `"!x"`, `'\'`,
}

// literalAlphabet is what FuzzLiteral maps each byte to when asked to:
// the bytes that matter to a reader of literal words, so the fuzzer
// spends its time on words bash might read differently.
const literalAlphabet = "a0-=:~'\"$` \\!#{},*?[]()@+%^/.;|&<>\n\té“"

// FuzzLiteral parses one printf argument list and checks every word
// Literal accepts against real bash and dash. With alphabet, each input
// byte picks a character of literalAlphabet instead of standing for
// itself.
func FuzzLiteral(f *testing.F) {
	testenv.Need(f, "bash", "dash")
	for _, s := range literalSeeds {
		f.Add(s, false)
	}
	f.Add("\x00\x01\x02\x03\x06\x00", true)
	f.Add("\x0b\x00\x0c\x0c\x05\x06\x00", true)
	alphabet := []rune(literalAlphabet)
	f.Fuzz(func(t *testing.T, words string, mapped bool) {
		if len(words) > 512 {
			return
		}
		if mapped {
			var b strings.Builder
			for i := 0; i < len(words); i++ {
				b.WriteRune(alphabet[int(words[i])%len(alphabet)])
			}
			words = b.String()
		}
		args := parseLiteralArgs(words)
		if args == nil {
			return
		}
		vals := make([]string, 0, len(args))
		for _, w := range args {
			v, ok := Literal(w)
			if !ok {
				return // only lines of accepted words have a known output
			}
			vals = append(vals, v)
		}
		if msg := literalOracle(t, words, vals); msg != "" {
			t.Fatalf("%q: %s", words, msg)
		}
	})
}
