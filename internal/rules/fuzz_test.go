package rules

import (
	"encoding/json"
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

// FuzzNetworkAlways: the rule "always" writes for a connection allows that
// destination and nothing else the fuzzer offers: not another port, not
// another host, not a spelling that names another destination.
func FuzzNetworkAlways(f *testing.F) {
	for _, s := range []struct {
		host  string
		port  int
		other string
		oport int
	}{
		{"registry.example", 443, "registry.example", 80},
		{"registry.example", 443, "x.registry.example", 443},
		{"Registry.Example.", 443, "registry.example", 443},
		{"2001:db8::1", 443, "[2001:db8::1]", 443},
		{"10.0.0.5", 5432, "10.0.0.50", 5432},
		{"xn--bcher-kva.example", 443, "bücher.example", 443},
		{"a\x00.example", 443, "a.example", 443},
	} {
		f.Add(s.host, s.port, s.other, s.oport)
	}
	f.Fuzz(func(t *testing.T, host string, port int, other string, oport int) {
		args, _ := json.Marshal(map[string]any{"host": host, "port": port})
		specs, err := Narrowest(NetworkTool, args, nil)
		if err != nil {
			return
		}
		target, err := NetworkTarget(args)
		if err != nil {
			t.Fatalf("Narrowest wrote a rule for arguments NetworkTarget refuses: %v", err)
		}
		set, err := NewSet(specs)
		if err != nil {
			t.Fatalf("the narrowest rule %+v does not compile: %v", specs, err)
		}
		if d := set.Decide(Call{Tool: NetworkTool, Host: target}).Decision; d != Allow {
			t.Fatalf("the rule for %s does not allow it: %s", target, d)
		}
		oargs, _ := json.Marshal(map[string]any{"host": other, "port": oport})
		otarget, err := NetworkTarget(oargs)
		if err != nil {
			return
		}
		if d := set.Decide(Call{Tool: NetworkTool, Host: otarget}).Decision; d == Allow && otarget != target {
			t.Fatalf("the rule for %s also allows %s", target, otarget)
		}
	})
}
