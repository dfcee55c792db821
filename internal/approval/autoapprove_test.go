package approval

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
)

func TestAutoApproveAnchoring(t *testing.T) {
	t.Parallel()
	for name, judge := range map[string]CommandJudge{"literal": LiteralJudge, "shellpolicy": ShellJudge(nil)} {
		t.Run(name, func(t *testing.T) { testAnchoring(t, judge) })
	}
}

func testAnchoring(t *testing.T, judge CommandJudge) {
	rules := []config.AutoApprove{
		{Tool: "shell", CommandPattern: `^(ls|cat|head|tail|wc|grep|find|echo) `},
		{Tool: "run_command", CommandPattern: `^git status$`},
		{Tool: "file_write", PathPattern: `^src/`},
		{Tool: "http_request", URLPattern: `^https://api\.example\.com/`},
		{Tool: "search_code", ArgsPattern: `^\{"query":"TODO"\}$`},
	}
	aa, err := CompileAutoApprove(rules, judge)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tool, args string
		want       bool
		why        string
	}{
		{"run_command", `{"command":"ls -la src"}`, true, "plain match"},
		{"run_command", `{"command":"ls -la && cat a | wc -l"}`, true, "every simple command matches"},
		{"run_command", `{"command":"ls 'a; rm -rf x'"}`, true, "the ; is inside an argument"},
		{"run_command", `{"command":"git status"}`, true, "second rule"},
		{"run_command", `{"command":"ls x; rm -rf x"}`, false, "chained"},
		{"run_command", `{"command":"ls x && rm -rf x"}`, false, "and-list"},
		{"run_command", `{"command":"ls x || rm -rf x"}`, false, "or-list"},
		{"run_command", `{"command":"ls x\nrm -rf x"}`, false, "newline"},
		{"run_command", `{"command":"ls x | sh"}`, false, "piped into a shell"},
		{"run_command", `{"command":"ls x | bash -c 'ls x'"}`, false, "wrapper in a pipe"},
		{"run_command", `{"command":"ls $(rm -rf x)"}`, false, "command substitution"},
		{"run_command", "{\"command\":\"ls `rm -rf x`\"}", false, "backticks"},
		{"run_command", `{"command":"cat <(rm -rf x)"}`, false, "process substitution"},
		{"run_command", `{"command":"ls \"$(rm -rf x)\""}`, false, "substitution in double quotes"},
		{"run_command", `{"command":"ls ${HOME}"}`, false, "parameter expansion"},
		{"run_command", `{"command":"echo x > ~/.bashrc"}`, false, "redirection"},
		{"run_command", `{"command":"ls x & rm -rf x"}`, false, "background"},
		{"run_command", `{"command":"PATH=/tmp/evil ls x"}`, false, "assignment"},
		{"run_command", `{"command":"find . -delete"}`, false, "find action"},
		{"run_command", `{"command":"find . -exec rm {} ;"}`, false, "find -exec"},
		{"run_command", `{"command":"find . -exec rm {} \\;"}`, false, "find -exec, terminated"},
		{"run_command", `{"command":"grep -r x . | xargs rm"}`, false, "xargs in a pipe"},
		{"run_command", `{"command":"sudo ls x"}`, false, "sudo"},
		{"run_command", `{"command":"cat /dev/zero | dd of=/dev/sda"}`, false, "dd onto a device"},
		{"run_command", `{"command":"(ls x; rm -rf x)"}`, false, "subshell"},
		{"run_command", `{"command":"{ ls x; rm -rf x; }"}`, false, "block"},
		{"run_command", `{"command":"if ls x; then rm -rf x; fi"}`, false, "if"},
		{"run_command", `{"command":"f() { rm -rf x; }; ls x"}`, false, "function"},
		{"run_command", `{"command":"ls *"}`, false, "glob"},
		{"run_command", `{"command":"ls x; "}`, true, "trailing separator only"},
		{"run_command", `{"command":"git status; rm -rf x"}`, false, "anchored rule chained"},
		{"run_command", `{"command":"ls x; echo '"}`, false, "does not parse"},
		{"run_command", `{"command":""}`, false, "empty"},
		{"run_command", `{"cmd":"ls x"}`, false, "no command field"},
		{"read_file", `{"command":"ls x"}`, false, "rule for another tool"},
		{"write_file", `{"path":"src/a.go","content":"x"}`, true, "path under src"},
		{"write_file", `{"path":"./src/../src/a.go"}`, true, "cleaned"},
		{"write_file", `{"path":"src/../../etc/passwd"}`, false, "escapes"},
		{"write_file", `{"path":"src/../.env"}`, false, "cleans to outside src"},
		{"write_file", `{"path":"/src/a.go"}`, false, "absolute"},
		{"write_file", `{"path":"src/a\u0000"}`, false, "NUL"},
		{"write_file", `{"path":"src\\..\\..\\x"}`, false, "backslashes"},
		{"write_file", `{"path":".."}`, false, "parent"},
		{"write_file", `{"path":["src/a"]}`, false, "not a string"},
		{"http_request", `{"url":"https://api.example.com/v1"}`, true, "url"},
		{"http_request", `{"url":"https://API.Example.COM/v1"}`, true, "host case"},
		{"http_request", `{"url":"https://api.example.com@evil.com/"}`, false, "user info"},
		{"http_request", `{"url":"https://api.example.com.evil.com/"}`, false, "suffix host"},
		{"http_request", `{"url":"https://evil.com/#https://api.example.com/"}`, false, "fragment"},
		{"http_request", `{"url":"ftp://api.example.com/"}`, false, "scheme"},
		{"search_code", `{"query":"TODO"}`, true, "args pattern on canonical JSON"},
		{"search_code", `{"query":"TODO","path":"/"}`, false, "args pattern anchored"},
	}
	for _, c := range cases {
		args, err := Canonical(json.RawMessage(c.args))
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		_, got := aa.Match(c.tool, args)
		if got != c.want {
			t.Errorf("%s: Match(%s, %s) = %v, want %v", c.why, c.tool, c.args, got, c.want)
		}
	}
}

// The judge seam: a blocked verdict or a judge error never auto-approves.
func TestAutoApproveJudge(t *testing.T) {
	t.Parallel()
	rules := []config.AutoApprove{{Tool: "run_command", CommandPattern: `.*`}}
	for name, judge := range map[string]CommandJudge{
		"blocked": func(string) (*CommandVerdict, error) {
			return &CommandVerdict{Blocked: true, Commands: []string{"ls"}}, nil
		},
		"error": func(string) (*CommandVerdict, error) { return nil, errors.New("too deep") },
		"empty": func(string) (*CommandVerdict, error) { return &CommandVerdict{}, nil },
	} {
		aa, err := CompileAutoApprove(rules, judge)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := aa.Match("run_command", json.RawMessage(`{"command":"ls"}`)); ok {
			t.Errorf("%s: auto-approved", name)
		}
	}
	// The built-in judge refuses wrappers even under a match-all pattern.
	aa, _ := CompileAutoApprove(rules, nil)
	for _, cmd := range []string{"sh -c 'rm -rf x'", "env rm -rf x", "xargs rm", "/usr/bin/sudo ls", "eval ls", "nohup rm x", "timeout 5 rm x"} {
		b, _ := json.Marshal(map[string]string{"command": cmd})
		if _, ok := aa.Match("run_command", b); ok {
			t.Errorf("wrapper %q auto-approved", cmd)
		}
	}
}

func TestCompileAutoApproveErrors(t *testing.T) {
	t.Parallel()
	_, err := CompileAutoApprove([]config.AutoApprove{
		{Tool: "shell", CommandPattern: `(`, Line: 7},
		{Tool: "shell"},
		{CommandPattern: "^ls"},
	}, nil)
	if err == nil {
		t.Fatal("accepted bad rules")
	}
	for _, want := range []string{"auto_approve[0] (line 7): command_pattern", "auto_approve[1]: a rule needs", "auto_approve[2]: tool is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.50,"<x>"]}`, `{"a":1,"a":2}`, `"x"`, `[]`, `{"\u2028":null}`, `1e400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Canonical(json.RawMessage(s))
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("Canonical(%q) = %q, not JSON", s, c)
		}
		c2, err := Canonical(c)
		if err != nil || string(c2) != string(c) {
			t.Fatalf("not idempotent: %q → %q → %q (%v)", s, c, c2, err)
		}
	})
}

func FuzzLiteralJudge(f *testing.F) {
	for _, s := range []string{"ls -la", "ls; rm -rf x", "ls $(x)", "a | b && c", "ls 'a b'", "find . -exec rm {} ;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := LiteralJudge(s)
		if err != nil {
			return
		}
		// Whatever it vouches for holds only literal simple commands: no
		// expansion or substitution syntax survives unquoted.
		for _, c := range v.Commands {
			if c == "" {
				t.Fatalf("%q: empty simple command", s)
			}
		}
		if strings.ContainsAny(s, "`") && !strings.Contains(s, "'") {
			t.Fatalf("%q: backquote vouched for", s)
		}
	})
}
