package shellpolicy

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

func fuzzSeeds(f *testing.F, names ...string) {
	for _, name := range names {
		for _, r := range readCorpus(f, name) {
			f.Add(r.Cmd)
		}
	}
}

// FuzzJudge: Judge never panics; input that does not parse is never
// allowed (blocked, never Safe); a blocked verdict always names a rule; no
// command is worse than the verdict.
func FuzzJudge(f *testing.F) {
	fuzzSeeds(f, "testdata/attacks.jsonl", "testdata/benign.jsonl", "testdata/oracle.jsonl")
	f.Fuzz(func(t *testing.T, cmd string) {
		for _, opts := range []*Options{nil, testOptions(false), testOptions(true)} {
			v := Judge(cmd, opts)
			if v.Blocked && (v.Rule == "" || v.Class != Dangerous) {
				t.Fatalf("%q: blocked without rule or not dangerous: %+v", cmd, v)
			}
			if len(cmd) > MaxInputBytes || strings.IndexByte(cmd, 0) >= 0 {
				if !v.Blocked {
					t.Fatalf("%q: oversized or NUL input not blocked", cmd)
				}
				return
			}
			_, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
			if err != nil && (!v.Blocked || v.Class == Safe) {
				t.Fatalf("%q: does not parse (%v) but verdict %+v", cmd, err, v)
			}
			for _, s := range v.Commands {
				if s.Class > v.Class {
					t.Fatalf("%q: command class %s above verdict class %s", cmd, s.Class, v.Class)
				}
			}
		}
	})
}

// fuzzUnsafe are inputs the bash fuzz oracle does not run: they could
// exhaust the machine (loops, forks) or kill the oracle itself.
var fuzzUnsafe = regexp.MustCompile(`while|until|for|fork|&|\||:\(\)|yes|/dev/zero|sleep|kill|exec|trap|ulimit|select|coproc|wait|read|source|\. |eval|\$\$|/bin/|/usr/|/proc|/sys`)

var (
	fuzzEnvOnce sync.Once
	fuzzEnv     *oracleEnv
)

// FuzzJudgeBash compares the commands the judge lists with what bash
// executes, on inputs the judge does not refuse and that are harmless to
// run (no loops, pipes, background jobs or signals), inside bubblewrap.
func FuzzJudgeBash(f *testing.F) {
	// As a plain test it runs the oracle's own lines (TestShellOracle runs
	// the corpora); fuzzing starts from every corpus.
	fuzzSeeds(f, "testdata/oracle.jsonl")
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		fuzzSeeds(f, "testdata/attacks.jsonl", "testdata/benign.jsonl")
	}
	dir, err := os.MkdirTemp("", "fuzz-oracle-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 200 || !utf8.ValidString(cmd) || strings.ContainsAny(cmd, "\x00\r") || fuzzUnsafe.MatchString(cmd) {
			t.Skip()
		}
		v := Judge(cmd, &Options{EnvKnown: []string{"WARDEN_ORACLE_LOG", "PS4"}})
		if v.Blocked {
			t.Skip()
		}
		fuzzEnvOnce.Do(func() { fuzzEnv = newOracleEnv(t, dir) })
		runs, err := fuzzEnv.run([]string{cmd}, []string{"bash"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Timeout {
				t.Skip()
			}
			if ms := mismatches(r, v.runs); len(ms) > 0 {
				t.Fatalf("bash -c %q: %s\n%s", cmd, strings.Join(ms, "; "), dump(v))
			}
		}
	})
}
