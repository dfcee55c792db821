package rules

import (
	"slices"
	"strings"
	"testing"
)

// FuzzDecide compiles a rule from fuzzed words and decides a fuzzed line:
// it must never panic, and an allow must come from a plain line whose
// every command the rule matches, with argvs that survive a round trip
// through JoinArgv (what a person is shown is what runs).
func FuzzDecide(f *testing.F) {
	for _, s := range []struct{ words, line string }{
		{"npm run test:*", "npm run test:unit"},
		{"npm run test:*", "npm run test-evil"},
		{"git push", "git push --force; rm -rf /"},
		{"git push", "bash -c 'git push'"},
		{"go test *", "go test ./... 2>&1 > /dev/null"},
		{"ls", "ls $(id) `id` ${x} ~ {a,b} *.go"},
		{"echo", "echo 'a'\"b\"c $'d' <<EOF\nx\nEOF"},
		{"x", "x | y && z || w; ( a ) & { b; }"},
	} {
		f.Add(s.words, s.line, false)
	}
	f.Fuzz(func(t *testing.T, words, line string, exact bool) {
		w := strings.Fields(words)
		if len(w) == 0 {
			return
		}
		r, err := Compile(Spec{Command: w, Exact: exact, Decision: Allow})
		if err != nil {
			return
		}
		set := &Set{}
		set.add(r)
		res := set.Decide(Call{Tool: CommandTool, Command: line})
		if res.Decision != Allow {
			return
		}
		argvs, err := Plain(line)
		if err != nil {
			t.Fatalf("allowed a line that is not plain: %v", err)
		}
		for _, argv := range argvs {
			if !r.matchArgv(argv) {
				t.Fatalf("allowed %q, which the rule does not match", argv)
			}
			again, err := Plain(JoinArgv(argv))
			if err != nil || len(again) != 1 || !slices.Equal(again[0], argv) {
				t.Fatalf("argv %q does not survive a round trip: %q %v", argv, again, err)
			}
		}
	})
}

// FuzzPlain checks that what Plain accepts round-trips.
func FuzzPlain(f *testing.F) {
	for _, s := range []string{"a b c", "a 'b c' \"d\"", "a && b | c; d", "a 2>&1 >/dev/null", "a $(b)", "a\\ b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		argvs, err := Plain(line)
		if err != nil {
			return
		}
		for _, argv := range argvs {
			again, err := Plain(JoinArgv(argv))
			if err != nil || len(again) != 1 || !slices.Equal(again[0], argv) {
				t.Fatalf("argv %q does not survive a round trip: %q %v", argv, again, err)
			}
		}
	})
}
