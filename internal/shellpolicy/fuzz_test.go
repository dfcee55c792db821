package shellpolicy

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzJudge: Judge never panics; input that does not parse is never
// allowed (blocked, never Safe); a blocked verdict always names a rule.
func FuzzJudge(f *testing.F) {
	for _, r := range readCorpus(f, "testdata/attacks.jsonl") {
		f.Add(r.Cmd)
	}
	for _, r := range readCorpus(f, "testdata/benign.jsonl") {
		f.Add(r.Cmd)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		v := Judge(cmd, nil)
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
	})
}
