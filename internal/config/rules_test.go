package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Rules are checked when the file loads: every problem, with its line,
// including an example the rule does not decide as written.
func TestRuleErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, toml, yaml string
		want             []string
	}{
		{"ok", `
[[rules]]
command = ["npm", "run", "test:*"]
decision = "allow"
match = ["npm run test:unit", "npm run test:e2e -- --ci"]
not_match = ["npm run test-evil", "npm run test:unit > x", "npm run test:unit; rm -rf src"]

[[rules]]
command = ["git", "push"]
decision = "deny"
match = ["bash -c 'git push'", "timeout 5 git push origin"]
not_match = ["git pull"]

[[rules]]
tool = "file_write"
path = "docs/**"
decision = "allow"
match = ["docs/a.md"]
not_match = ["src/a.go", "docs/../src/a.go"]

[[rules]]
host = "*.github.com"
decision = "ask"
`, `
rules:
  - command: [npm, run, "test:*"]
    decision: allow
    match: ["npm run test:unit"]
`, nil},
		{"failing match", `
[[rules]]
command = ["npm", "run", "test:*"]
decision = "allow"
match = [
  "npm run test:unit",
  "npm run test-evil",
]
`, `
rules:
  - command: [npm, run, "test:*"]
    decision: allow
    match:
      - npm run test:unit
      - npm run test-evil
`, []string{`7: rules[0].match[1] = "npm run test-evil": this example does not get "allow" from the rule (no allow rule covers npm run test-evil)`}},
		{"failing not_match", `
[[rules]]
command = ["git", "push"]
decision = "deny"
not_match = ["env git push"]
`, "", []string{`5: rules[0].not_match[0] = "env git push": this example gets "deny" from the rule, but is listed under not_match`}},
		{"bad words", `
[[rules]]
command = ["npm", "t*st"]
decision = "allow"
`, "", []string{`2: rules[0]: command word "t*st": * may only end a word`}},
		{"no decision", `
[[rules]]
command = ["npm"]
`, "", []string{`2: rules[0]: needs decision = "allow", "ask" or "deny"`}},
		{"bad decision", `
[[rules]]
command = ["npm"]
decision = "maybe"
`, "", []string{`4: rules[0].decision = "maybe": must be one of allow, ask, deny`}},
		{"unknown tool", `
[[rules]]
tool = "rm_rf"
decision = "deny"
`, "", []string{`3: rules[0].tool = "rm_rf": unknown tool`}},
		{"connection rules", `
[[rules]]
tool = "network_connect"
host = "registry.example:443"
decision = "allow"
match = ["registry.example:443"]
not_match = ["registry.example:80", "x.registry.example:443"]

[[rules]]
tool = "network_connect"
host = "*.evil.example"
decision = "deny"
`, "", nil},
		{"a connection rule for every host", `
[[rules]]
tool = "network_connect"
decision = "allow"
`, "", []string{`2: rules[0]: an allow rule for every host is network = "host"; write host = "name:port" instead`}},
		{"a connection rule's host", `
[[rules]]
tool = "network_connect"
host = "127.1:443"
decision = "allow"
`, "", []string{`2: rules[0]: host "127.1:443": not a dotted-quad IPv4 address, and a name ending in a numeric label is an address to some parsers (decimal, octal, hex and short forms are refused)`}},
		{"unknown key", `
[[rules]]
command = ["npm"]
decision = "allow"
regex = ".*"
`, "", []string{`5: rules[0].regex: unknown key`}},
		{"relative workspace and dup id", `
[[rules]]
command = ["make"]
decision = "allow"
workspace = "proj"
id = "r1"

[[rules]]
command = ["make", "test"]
decision = "allow"
id = "r1"
created = "yesterday"
`, "", []string{
			`5: rules[0].workspace = "proj": must be an absolute path`,
			`11: rules[1].id = "r1": another rule in this file has this id`,
			`12: rules[1].created = "yesterday": must be an RFC 3339 time`,
		}},
		{"every command", `
[[rules]]
tool = "shell"
decision = "allow"
`, "", []string{`2: rules[0]: an allow rule for every command is yolo for run_command; write command = [...] words instead`}},
	} {
		for _, f := range []struct{ name, body string }{{"config.toml", tc.toml}, {"config.yaml", tc.yaml}} {
			if f.body == "" {
				continue
			}
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				_, _, _, err := setup{user: f.body, userName: f.name}.load(t)
				if diff := cmp.Diff(tc.want, shorts(t, err)); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// The workspace file may add ask and deny rules, never allow rules.
func TestWorkspaceRulesOnlyTighten(t *testing.T) {
	t.Parallel()
	allow := "[[rules]]\ncommand = [\"npm\", \"test\"]\ndecision = \"allow\"\n"
	for _, tc := range []struct {
		name, user, ws string
		want           []string
		rules          int
	}{
		{"deny added", "", "[[rules]]\ncommand = [\"git\", \"push\"]\ndecision = \"deny\"\n", nil, 1},
		{"ask added", allow, "[[rules]]\ncommand = [\"npm\", \"test\"]\ndecision = \"ask\"\n", nil, 2},
		{"allow added", "", allow, []string{`1: rules: the rule at line 1 allows; only ask and deny rules tighten, only the user config may loosen it`}, 0},
		{"user's allow repeated", allow, allow, nil, 2},
		{"allow hidden behind deny", "", "[[rules]]\ncommand = [\"x\"]\ndecision = \"deny\"\n\n" + allow,
			[]string{`1: rules: the rule at line 5 allows; only ask and deny rules tighten, only the user config may loosen it`}, 0},
		{"workspace names another", "", "[[rules]]\ncommand = [\"x\"]\ndecision = \"deny\"\nworkspace = \"/\"\n",
			[]string{`1: rules: a workspace file's rule names no workspace, id or request; only the user config may loosen it`}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ld, _, _, err := setup{user: tc.user, ws: tc.ws}.load(t)
			if diff := cmp.Diff(tc.want, shorts(t, err)); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if err == nil && len(ld.Config.Rules) != tc.rules {
				t.Fatalf("got %d rules, want %d", len(ld.Config.Rules), tc.rules)
			}
		})
	}
}

// RuleSet keeps the rules of this workspace and the unscoped ones.
func TestRuleSetScope(t *testing.T) {
	t.Parallel()
	cfg := &Config{Rules: []Rule{
		{Command: []string{"a"}, Decision: "allow"},
		{Command: []string{"b"}, Decision: "allow", Workspace: "/w/one"},
		{Command: []string{"c"}, Decision: "allow", Workspace: "/w/two/"},
	}}
	s, err := RuleSet(cfg, "/w/two")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.Rules() {
		got = append(got, r.Command[0])
	}
	if diff := cmp.Diff([]string{"a", "c"}, got); diff != "" {
		t.Fatal(diff)
	}
}
