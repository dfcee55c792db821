package shellpolicy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUserOptions(t *testing.T) {
	t.Parallel()
	pats, err := CompilePatterns([]string{`^terraform\s+destroy`, `\bprod-db\b`})
	if err != nil {
		t.Fatal(err)
	}
	opts := &Options{
		SafeCommands:    []string{"make lint", "kubectl logs"},
		DevCommands:     []string{"docker compose up", "bin/check $"},
		BlockedPatterns: pats,
	}
	for _, tc := range []struct {
		cmd     string
		class   Class
		blocked string
	}{
		{cmd: "make lint", class: Safe},
		{cmd: "make lint-all", class: Dev}, // a different word: only "make" matches
		{cmd: "make", class: Dev},
		{cmd: "kubectl logs pod", class: Safe},
		{cmd: "docker compose up -d", class: Dev},
		{cmd: "docker compose down", class: Dangerous},
		{cmd: "terraform destroy -auto-approve", blocked: RuleUserPattern},
		{cmd: "ls && terraform destroy", blocked: RuleUserPattern},        // each simple command's text
		{cmd: `"terraform" destroy`, blocked: RuleUserPattern},            // its argv joined
		{cmd: "bash -c 'terraform destroy'", blocked: RuleUserPattern},    // nested
		{cmd: "psql -h prod-db", blocked: RuleUserPattern},                // raw
		{cmd: "echo 'sudo' && sudo id", blocked: RulePrivilegeEscalation}, // built-ins stay
		{cmd: "make lint > /dev/null 2>&1", class: Safe},
		{cmd: "make lint > report.txt", class: Dangerous},
	} {
		v := Judge(tc.cmd, opts)
		if tc.blocked != "" {
			if !v.Blocked || v.Rule != tc.blocked {
				t.Errorf("%q: blocked=%v rule=%q, want rule %q", tc.cmd, v.Blocked, v.Rule, tc.blocked)
			}
			continue
		}
		if v.Blocked || v.Class != tc.class {
			t.Errorf("%q: class %s blocked %v (%s), want %s", tc.cmd, v.Class, v.Blocked, v.Reason, tc.class)
		}
	}
	// User safe entries cannot whitelist a built-in rule.
	v := Judge("sudo id", &Options{SafeCommands: []string{"sudo"}})
	if !v.Blocked || v.Rule != RulePrivilegeEscalation {
		t.Errorf("safe_commands = [sudo] unblocked sudo: %+v", v)
	}
	if _, err := CompilePatterns([]string{"("}); err == nil || !strings.Contains(err.Error(), "blocked_patterns[0]") {
		t.Errorf("bad pattern error = %v", err)
	}
}

func TestVerdictShape(t *testing.T) {
	t.Parallel()
	v := Judge("git status &&\n  sudo rm -rf /tmp/x", nil)
	if !v.Blocked || v.Rule != RulePrivilegeEscalation || v.Pos != (Position{Offset: 16, Line: 2, Col: 3}) {
		t.Fatalf("verdict %+v", v)
	}
	var pe *PolicyError
	if err := v.Err(); !errors.As(err, &pe) || pe.Rule != RulePrivilegeEscalation || !strings.Contains(err.Error(), "2:3") {
		t.Errorf("Err() = %v", err)
	}
	got := []string{}
	for _, s := range v.Commands {
		got = append(got, s.Class.String()+" "+strings.Join(s.Argv, " ")+" "+s.Rule)
	}
	want := []string{"safe git status ", "dangerous sudo rm -rf /tmp/x privilege-escalation"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"class":"dangerous"`, `"blocked":true`, `"rule":"privilege-escalation"`, `"commands":[`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
	if Judge("", nil).Class != Safe || Judge("", nil).Commands == nil {
		t.Error("empty command: want safe with an empty, non-nil command list")
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cmd, rule string
	}{
		{"size", strings.Repeat("a", MaxInputBytes+1), RuleTooComplex},
		{"nul", "ls\x00rm", RuleParseError},
		{"depth", nested(MaxDepth + 2), RuleTooComplex},
		{"wrappers", strings.Repeat("nice ", maxWrappers+2) + "ls", RuleTooComplex},
		{"fanout", "f(){ g;g;g;g; }; g(){ h;h;h;h; }; h(){ i;i;i;i; }; i(){ k;k;k;k; }; k(){ m;m;m;m; }; m(){ n;n;n;n; }; n(){ o;o;o;o; }; o(){ p;p;p;p; }; p(){ ls;ls;ls;ls; }; f", RuleTooComplex},
		{"nested loops", strings.Repeat("for a in 1; do ", 40) + "ls" + strings.Repeat("; done", 40), RuleTooComplex},
	} {
		v := Judge(tc.cmd, nil)
		if !v.Blocked || v.Rule != tc.rule {
			t.Errorf("%s: blocked=%v rule=%q (%s), want %s", tc.name, v.Blocked, v.Rule, v.Reason, tc.rule)
		}
	}
	// Just under the depth limit is judged, not refused.
	if v := Judge(nested(MaxDepth-1), nil); v.Blocked {
		t.Errorf("depth %d: %s", MaxDepth-1, v.Reason)
	}
	// Huge brace expansions are computed, not expanded.
	v := Judge("echo {1..100000000}{a,b}", nil)
	if v.Blocked || len(v.Commands) != 1 || len(v.Commands[0].Argv) != 2 {
		t.Errorf("brace bomb: %+v", v)
	}
}

// nested wraps ls in n levels of bash -c.
func nested(n int) string {
	s := "ls"
	for range n {
		s = "bash -c " + shellQuote(s)
	}
	return s
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestClassString(t *testing.T) {
	t.Parallel()
	for c, s := range map[Class]string{Safe: "safe", Dev: "dev", Dangerous: "dangerous"} {
		var back Class
		if c.String() != s || back.UnmarshalText([]byte(s)) != nil || back != c {
			t.Errorf("%d: %q", c, c.String())
		}
	}
	var c Class
	if c.UnmarshalText([]byte("unsafe")) == nil {
		t.Error("unknown class accepted")
	}
}
