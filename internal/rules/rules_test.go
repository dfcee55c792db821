package rules

import (
	"strings"
	"testing"
)

func cmdRule(d Decision, words ...string) Spec { return Spec{Command: words, Decision: d} }

func mustSet(t *testing.T, specs ...Spec) *Set {
	t.Helper()
	s, err := NewSet(specs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCommandRules is the attack table: each line against a fixed set of
// rules, with why the answer must be what it is.
func TestCommandRules(t *testing.T) {
	t.Parallel()
	set := mustSet(t,
		cmdRule(Allow, "npm", "run", "test:*"),
		cmdRule(Allow, "git", "push"),
		cmdRule(Ask, "git", "push", "--force"),
		cmdRule(Deny, "git", "push", "--mirror"),
		cmdRule(Allow, "go", "test", "*"),
		Spec{Command: []string{"git", "status"}, Exact: true, Decision: Allow},
		cmdRule(Deny, "curl"),
	)
	tests := []struct {
		line string
		want Decision
		why  string
	}{
		{"npm run test:unit", Allow, "prefix word test:* matches test:unit"},
		{"npm run test:unit --watch", Allow, "a prefix rule allows what follows its words"},
		{"npm run 'test:unit'", Allow, "quotes are removed before matching"},
		{`npm run "test:e2e"`, Allow, "double quotes too"},
		{"npm run test-evil", None, "test:* is not test-*"},
		{"npm run test", None, "test:* needs the colon"},
		{"npm run", None, "too few words"},
		{"npm  run   test:unit", Allow, "spacing does not matter"},
		{"npm run test:unit && npm run test:e2e", Allow, "every command allowed"},
		{"npm run test:unit | tee /dev/null", None, "tee has no rule"},
		{"npm run test:unit; rm -rf src", None, "rm has no rule"},
		{"npm run test:unit || rm -rf src", None, "rm has no rule"},
		{"npm run test:unit && curl evil.sh", Deny, "deny rule for curl"},
		{"npm run test:unit $(curl evil.sh)", Deny, "the judge lists the substitution's curl"},
		{"npm run test:unit $(id)", None, "a substitution is not literal"},
		{"npm run test:unit `id`", None, "backquotes too"},
		{"npm run test:unit $HOME", None, "an expansion is not literal"},
		{"npm run test:unit ${x}", None, "braced expansion"},
		{"npm run test:unit > ~/.bashrc", None, "a redirection the rule did not see"},
		{"npm run test:unit >> out.log", None, "appending to a file"},
		{"npm run test:unit 2> err.log", None, "stderr to a file"},
		{"npm run test:unit >&out.log", None, ">&word writes a file"},
		{"npm run test:unit 2>&1", Allow, "duplicating a descriptor is harmless"},
		{"npm run test:unit > /dev/null 2>&1", Allow, "to /dev/null is harmless"},
		{"npm run test:unit < /dev/null", Allow, "from /dev/null is harmless"},
		{"npm run test:unit < input.txt", None, "input from a file"},
		{"npm run test:unit <<< 'x'", None, "here-string"},
		{"npm run test:unit <<EOF\nx\nEOF", None, "heredoc"},
		{"npm run test:unit <(id)", None, "process substitution"},
		{"npm run test:unit &", None, "background job"},
		{"! npm run test:unit", None, "negation"},
		{"(npm run test:unit)", None, "subshell"},
		{"{ npm run test:unit; }", None, "group"},
		{"{ npm run test:unit; } > x", None, "redirected group"},
		{"if true; then npm run test:unit; fi", None, "control flow"},
		{"for i in 1; do npm run test:unit; done", None, "loop"},
		{"npm() { rm -rf src; }; npm run test:unit", None, "function shadowing the command"},
		{"PATH=. npm run test:unit", None, "assignment prefix"},
		{"NODE_OPTIONS=--require=evil npm run test:unit", None, "assignment prefix"},
		{"env npm run test:unit", None, "wrapper: env has no rule"},
		{"timeout 5 npm run test:unit", None, "wrapper: timeout has no rule"},
		{"sh -c 'npm run test:unit'", None, "wrapper: sh has no rule"},
		{"bash -c 'curl x'", Deny, "the judge sees curl inside sh -c"},
		{"eval 'curl x'", Deny, "and inside eval"},
		{"env curl x", Deny, "and behind env"},
		{"./npm run test:unit", None, "a different program"},
		{"/usr/bin/npm run test:unit", None, "the rule names npm, not a path"},
		{"np\\m run test:unit", None, "escapes are not literal"},
		{"npm run test:unit*", None, "globs are not literal"},
		{"npm run test:{a,b}", None, "braces expand"},
		{"npm run test:unit ~", None, "tilde expands"},
		{"npm run test:unit --x=~/y", None, "tilde after = expands"},
		{"npm run $'test:unit'", None, "ANSI-C quoting"},
		{"npm run \"test:$x\"", None, "expansion in double quotes"},
		{"npm run test:unit\r", None, "carriage return"},
		{"git push", Allow, "git push allowed"},
		{"git push origin main", Allow, "prefix"},
		{"git push --force", Ask, "strictest wins: the ask rule"},
		{"git push --force origin main", Ask, "strictest wins"},
		{"git push origin --force", Allow, "prefix rules are positional: write --force as its own rule for each place or deny git push"},
		{"git push --mirror", Deny, "deny beats allow"},
		{"git push --mirror && git push", Deny, "any denied command denies the line"},
		{"git status", Allow, "exact"},
		{"git status --porcelain", None, "exact: no extra word"},
		{"go test ./...", Allow, "* matches one word"},
		{"go test", None, "* needs a word"},
		{"go vet ./...", None, "other subcommand"},
		{"", None, "empty line"},
		{"npm run test:unit; ", Allow, "trailing separator"},
		{"# comment only", None, "no command"},
		{"npm run test:unit # && rm -rf /", Allow, "a comment runs nothing"},
		{"npm run 'test:unit' '' ", Allow, "an empty word is a word"},
		{"x=1", None, "assignment only"},
		{"npm run test:unit |& cat", None, "|& is not plain"},
		{"coproc npm run test:unit", None, "coproc"},
		{"time npm run test:unit", None, "time keyword"},
		{"npm run test:unit {fd}>/dev/null", None, "named descriptor assigns a variable"},
	}
	for _, tt := range tests {
		got := set.Decide(Call{Tool: CommandTool, Command: tt.line})
		if got.Decision != tt.want {
			t.Errorf("%q: got %s (%s), want %s: %s", tt.line, got.Decision, got.Why, tt.want, tt.why)
		}
	}
}

func TestCovered(t *testing.T) {
	t.Parallel()
	set := mustSet(t, cmdRule(Allow, "npm", "test"))
	safe := func(argv []string) bool { return argv[0] == "tail" }
	for _, tt := range []struct {
		line    string
		covered func([]string) bool
		want    Decision
	}{
		{"npm test | tail -5", safe, Allow},
		{"npm test | tail -5", nil, None},
		{"tail -5 x", safe, None}, // no rule took part: the mode decides
		{"npm test | head", safe, None},
	} {
		if got := set.Decide(Call{Tool: CommandTool, Command: tt.line, Covered: tt.covered}); got.Decision != tt.want {
			t.Errorf("%q: got %s (%s), want %s", tt.line, got.Decision, got.Why, tt.want)
		}
	}
}

func TestToolRules(t *testing.T) {
	t.Parallel()
	set := mustSet(t,
		Spec{Tool: "write_file", Path: "docs/**", Decision: Allow},
		Spec{Tool: "write_file", Path: "docs/secret/**", Decision: Deny},
		Spec{Host: "*.github.com", Decision: Allow},
		Spec{Host: "evil.github.com", Decision: Deny},
		Spec{Tool: "mcp__srv__drop", Decision: Deny},
		Spec{Tool: "run_command", Decision: Ask},
	)
	tests := []struct {
		c    Call
		want Decision
	}{
		{Call{Tool: "write_file", Paths: []string{"docs/a.md"}}, Allow},
		{Call{Tool: "write_file", Paths: []string{"docs/a/b/c.md"}}, Allow},
		{Call{Tool: "write_file", Paths: []string{"docs/a.md", "src/a.go"}}, None}, // where it really lands differs
		{Call{Tool: "write_file", Paths: []string{"docs/../src/a.go"}}, None},
		{Call{Tool: "write_file", Paths: []string{"docs/../../etc/passwd"}}, None},
		{Call{Tool: "write_file", Paths: []string{"/docs/a.md"}}, None},
		{Call{Tool: "write_file", Paths: []string{"DOCS/a.md"}}, None},
		{Call{Tool: "write_file", Paths: []string{"docs/secret/k"}}, Deny},
		{Call{Tool: "write_file"}, None},
		{Call{Tool: "edit_file", Paths: []string{"docs/a.md"}}, None},
		{Call{Tool: "http_request", Host: "api.github.com"}, Allow},
		{Call{Tool: "http_request", Host: "API.GitHub.com."}, Allow},
		{Call{Tool: "http_request", Host: "github.com"}, None},
		{Call{Tool: "http_request", Host: "evilgithub.com"}, None},
		{Call{Tool: "http_request", Host: "github.com.evil.io"}, None},
		{Call{Tool: "http_request", Host: "evil.github.com"}, Deny},
		{Call{Tool: "http_request", Host: ""}, None},
		{Call{Tool: "mcp__srv__drop"}, Deny},
		{Call{Tool: "run_command", Command: "ls"}, Ask},
	}
	for _, tt := range tests {
		if got := set.Decide(tt.c); got.Decision != tt.want {
			t.Errorf("%+v: got %s (%s), want %s", tt.c, got.Decision, got.Why, tt.want)
		}
	}
}

// Host rules for connections a jailed command opens read their host as
// [sandbox.egress] reads an entry: one canonical spelling, the port when
// written, names and addresses kept apart.
func TestNetworkRules(t *testing.T) {
	t.Parallel()
	set := mustSet(t,
		Spec{Tool: NetworkTool, Host: "registry.example:443", Decision: Allow},
		Spec{Tool: NetworkTool, Host: "*.pypi.example", Decision: Allow},
		Spec{Tool: NetworkTool, Host: "evil.pypi.example", Decision: Deny},
		Spec{Tool: NetworkTool, Host: "10.0.0.0/8:5432", Decision: Ask},
		Spec{Tool: NetworkTool, Host: "[2001:db8::1]:443", Decision: Allow},
		Spec{Host: "web.example", Decision: Allow}, // http_request's, not a connection's
	)
	for _, tt := range []struct {
		host string
		want Decision
	}{
		{"registry.example:443", Allow},
		{"registry.example:80", None},
		{"registry.example.:443", Allow}, // the same destination, canonically
		{"REGISTRY.example:443", Allow},
		{"registry.example:0443", None},
		{"registry.example", None},
		{"x.registry.example:443", None},
		{"registry.example.evil.io:443", None},
		{"registry.example%00.evil.io:443", None},
		{"files.pypi.example:443", Allow},
		{"a.b.pypi.example:80", Allow},
		{"pypi.example:443", None},
		{"evil.pypi.example:443", Deny},
		{"10.1.2.3:5432", Ask},
		{"10.1.2.3:5433", None},
		{"[2001:db8::1]:443", Allow},
		{"[2001:db8::2]:443", None},
		{"web.example:443", None},
		{"", None},
	} {
		if got := set.Decide(Call{Tool: NetworkTool, Host: tt.host}); got.Decision != tt.want {
			t.Errorf("%q: got %s (%s), want %s", tt.host, got.Decision, got.Why, tt.want)
		}
	}
	// A connection rule never decides http_request, nor the reverse.
	if got := set.Decide(Call{Tool: "http_request", Host: "registry.example"}); got.Decision != None {
		t.Errorf("http_request got %s from a connection rule", got.Decision)
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Command: []string{"npm", "t*st"}, Decision: Allow}, "* may only end a word"},
		{Spec{Command: []string{"np*"}, Decision: Allow}, "command name must be written in full"},
		{Spec{Command: []string{"*"}, Decision: Allow}, "command name must be written in full"},
		{Spec{Command: []string{}, Decision: Allow}, "at least one word"},
		{Spec{Command: []string{"npm", ""}, Decision: Allow}, "empty"},
		{Spec{Command: []string{"npm"}}, "decision"},
		{Spec{Command: []string{"npm"}, Tool: "write_file", Decision: Allow}, "applies to run_command"},
		{Spec{Command: []string{"npm"}, Host: "x.org", Decision: Allow}, "one of command, path or host"},
		{Spec{Tool: "write_file", Path: "/etc/**", Decision: Allow}, "workspace-relative"},
		{Spec{Tool: "write_file", Path: "../x/**", Decision: Allow}, "inside the workspace"},
		{Spec{Tool: "write_file", Path: "docs/../**", Decision: Allow}, "clean"},
		{Spec{Tool: "write_file", Path: "docs/[", Decision: Allow}, "workspace-relative"},
		{Spec{Path: "docs/**", Decision: Allow}, "names its tool"},
		{Spec{Host: "*", Decision: Allow}, "host name"},
		{Spec{Host: "*.*.com", Decision: Allow}, "host name"},
		{Spec{Host: "evil.com/x", Decision: Allow}, "host name"},
		{Spec{Host: "x.org", Tool: "write_file", Decision: Allow}, "applies to http_request"},
		{Spec{Tool: "run_command", Decision: Allow}, "yolo"},
		{Spec{Tool: NetworkTool, Decision: Allow}, `network = "host"`},
		{Spec{Tool: NetworkTool, Host: "*", Decision: Allow}, "host"},
		{Spec{Tool: NetworkTool, Host: "evil\x00.com", Decision: Allow}, "host"},
		{Spec{Tool: NetworkTool, Host: "127.1", Decision: Allow}, "host"},
		{Spec{Tool: NetworkTool, Host: "x.org:99999", Decision: Allow}, "host"},
		{Spec{Tool: NetworkTool, Path: "x", Decision: Allow}, "takes no path rule"},
		{Spec{Decision: Allow}, "needs command"},
		{Spec{Tool: "write_file", Exact: true, Decision: Allow}, "exact"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tt.spec, err, tt.want)
		}
	}
}

func TestExamples(t *testing.T) {
	t.Parallel()
	r, err := Compile(cmdRule(Allow, "npm", "run", "test:*"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CheckExamples([]string{"npm run test:unit", "npm run test:e2e -- --grep x"}, []string{"npm run test-evil", "npm run test:unit > x"}); err != nil {
		t.Fatal(err)
	}
	i, err := r.CheckExamples([]string{"npm run test:unit", "npm run build"}, nil)
	if err == nil || i != 1 || !strings.Contains(err.Error(), `match example "npm run build"`) {
		t.Fatalf("got %d %v", i, err)
	}
	i, err = r.CheckExamples(nil, []string{"npm run test:x"})
	if err == nil || i != 0 || !strings.Contains(err.Error(), "not_match") {
		t.Fatalf("got %d %v", i, err)
	}
	d, _ := Compile(cmdRule(Deny, "git", "push"))
	if _, err := d.CheckExamples([]string{"bash -c 'git push'", "echo $(git push -f)"}, []string{"git pull", "echo 'git push'"}); err != nil {
		t.Fatal(err)
	}
	p, _ := Compile(Spec{Tool: "write_file", Path: "docs/**", Decision: Allow})
	if _, err := p.CheckExamples([]string{"docs/x.md"}, []string{"src/x.go", "docs/../src/x.go"}); err != nil {
		t.Fatal(err)
	}
	tool, _ := Compile(Spec{Tool: "mcp__a__b", Decision: Deny})
	if _, err := tool.CheckExamples([]string{"x"}, nil); err == nil {
		t.Fatal("examples on a tool rule accepted")
	}
}

func TestDenyUnseen(t *testing.T) {
	t.Parallel()
	set := mustSet(t, cmdRule(Deny, "git", "push"), cmdRule(Allow, "make"))
	for _, tt := range []struct {
		line string
		want Decision
	}{
		{"timeout 5 git push", Deny},
		{"xargs git push < /dev/null", Deny},
		{"find . -exec git push ;", Deny},
		{"nice -n 5 env A=1 git push", Deny},
		{`eval "$X"`, Ask},
		{"make", Allow},
		{"make; git push", Deny},
		{"echo git push", Deny},   // deny rules match anywhere in an argv
		{"echo 'git push'", None}, // one word is not two
		{"git commit -m 'git push'", None},
		{"ionice -c3 git push", Deny},
	} {
		if got := set.Decide(Call{Tool: CommandTool, Command: tt.line}); got.Decision != tt.want {
			t.Errorf("%q: got %s (%s), want %s", tt.line, got.Decision, got.Why, tt.want)
		}
	}
}

func TestNarrowest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tool, args string
		paths      []string
		want       []string // rule strings
		err        bool
	}{
		{"run_command", `{"command":"git push origin main"}`, nil, []string{"allow command git push origin main (exactly)"}, false},
		{"run_command", `{"command":"go build ./... && go test ./... && go build ./..."}`, nil,
			[]string{"allow command go build ./... (exactly)", "allow command go test ./... (exactly)"}, false},
		{"run_command", `{"command":"npm test > out"}`, nil, nil, true},
		{"run_command", `{"command":"echo 'a b'"}`, nil, []string{"allow command echo 'a b' (exactly)"}, false},
		{"write_file", `{"path":"docs/a[1].md","content":"x"}`, nil, []string{`allow write_file path docs/a\[1\].md`}, false},
		{"write_file", `{"path":"../x","content":"x"}`, nil, nil, true},
		{"apply_patch", `{"patch":"..."}`, []string{"a.go", "b/c.go"}, []string{"allow apply_patch path a.go", "allow apply_patch path b/c.go"}, false},
		{"http_request", `{"url":"https://API.example.com/x?y"}`, nil, []string{"allow http_request host api.example.com"}, false},
		{"mcp__gh__issue", `{}`, nil, []string{"allow tool mcp__gh__issue"}, false},
		{NetworkTool, `{"host":"registry.example","port":443}`, nil, []string{"allow network_connect host registry.example:443"}, false},
		{NetworkTool, `{"host":"2001:db8::1","port":443}`, nil, []string{"allow network_connect host [2001:db8::1]:443"}, false},
		{NetworkTool, `{"host":"Registry.Example.","port":443}`, nil, []string{"allow network_connect host registry.example:443"}, false},
		{NetworkTool, `{"host":"[2001:db8::1]","port":443}`, nil, []string{"allow network_connect host [2001:db8::1]:443"}, false},
		{NetworkTool, `{"host":"127.1","port":443}`, nil, nil, true},
		{NetworkTool, `{"host":"registry.example","port":0}`, nil, nil, true},
		{NetworkTool, `{"host":"*.example","port":443}`, nil, nil, true},
	} {
		specs, err := Narrowest(tt.tool, []byte(tt.args), tt.paths)
		if (err != nil) != tt.err {
			t.Fatalf("%s %s: err %v", tt.tool, tt.args, err)
		}
		var got []string
		for _, s := range specs {
			r, err := Compile(s)
			if err != nil {
				t.Fatalf("%s: the narrowest rule does not compile: %v", tt.args, err)
			}
			got = append(got, r.String())
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s %s: got %q, want %q", tt.tool, tt.args, got, tt.want)
		}
	}
	// The narrowest rule allows the call and nothing longer.
	specs, _ := Narrowest("run_command", []byte(`{"command":"git push origin main"}`), nil)
	set := mustSet(t, specs...)
	for line, want := range map[string]Decision{"git push origin main": Allow, "git push origin main --force": None, "git push origin": None} {
		if got := set.Decide(Call{Tool: CommandTool, Command: line}).Decision; got != want {
			t.Errorf("%q: got %s, want %s", line, got, want)
		}
	}
	specs, _ = Narrowest("write_file", []byte(`{"path":"docs/a*.md"}`), nil)
	set = mustSet(t, specs...)
	if set.Decide(Call{Tool: "write_file", Paths: []string{"docs/a*.md"}}).Decision != Allow ||
		set.Decide(Call{Tool: "write_file", Paths: []string{"docs/ab.md"}}).Decision != None {
		t.Error("a path rule from a literal path with * matches other paths")
	}
}
