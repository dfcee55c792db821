package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
)

// Rules decide over the mode, never over the hard guards: each call is
// run through the engine (a person who says no is asked when the call is
// supervised) and what happened is checked: ran unasked, asked, refused.
func TestRulesInTheEngine(t *testing.T) {
	t.Parallel()
	cfgRules := []config.Rule{
		{Command: []string{"touch", "test:*"}, Decision: "allow", File: "user.toml", Line: 1},
		{Command: []string{"git", "push"}, Decision: "deny", File: "user.toml", Line: 5},
		{Command: []string{"ls"}, Decision: "ask", File: "ws.toml", Line: 2},
		{Command: []string{"rm"}, Decision: "allow", File: "user.toml", Line: 9},
		{Tool: "write_file", Path: "docs/**", Decision: "allow", File: "user.toml", Line: 12},
		{Tool: "write_file", Path: "docs/private/**", Decision: "deny", File: "user.toml", Line: 15},
	}
	const (
		ran     = "ran"
		asked   = "asked"
		refused = "refused"
	)
	tests := []struct {
		tool, args string
		want       string
		rule       string
		why        string
	}{
		{"run_command", `{"command":"touch test:unit"}`, ran, "rules:user.toml:1", "allowed by a rule"},
		{"run_command", `{"command":"touch test:unit && wc -l test:unit"}`, ran, "rules:user.toml:1", "wc is safe: the mode allows it without a rule"},
		{"run_command", `{"command":"touch test:unit > out.txt"}`, asked, "confirm_mode=confirm-sensitive", "a redirection the rule did not see"},
		{"run_command", `{"command":"touch test:unit; mkdir x"}`, asked, "confirm_mode=confirm-sensitive", "mkdir has no rule"},
		{"run_command", `{"command":"touch test-evil"}`, asked, "confirm_mode=confirm-sensitive", "test:* is not test-*"},
		{"run_command", `{"command":"echo test-evil"}`, ran, "confirm_mode=confirm-sensitive", "echo is safe anyway"},
		{"run_command", `{"command":"git push"}`, refused, "rules:user.toml:5", "deny rule"},
		{"run_command", `{"command":"sh -c 'git push'"}`, refused, "rules:user.toml:5", "deny rule inside sh -c"},
		{"run_command", `{"command":"ls"}`, asked, "rules:ws.toml:2", "ask rule over a safe command"},
		{"run_command", `{"command":"rm -rf /"}`, refused, "rm-recursive-root", "an allow rule never passes the blocklist"},
		{"run_command", `{"command":"rm -f gone.txt"}`, ran, "rules:user.toml:9", "allow rule"},
		{"write_file", `{"path":"docs/a.md","content":"x"}`, ran, "rules:user.toml:12", "path rule"},
		{"write_file", `{"path":"docs/private/a.md","content":"x"}`, refused, "rules:user.toml:15", "strictest wins"},
		{"write_file", `{"path":"src/a.go","content":"x"}`, asked, "confirm_mode=confirm-sensitive", "outside the rule"},
		{"write_file", `{"path":"docs/link/a.go","content":"x"}`, asked, "confirm_mode=confirm-sensitive", "docs/link leads to src: where it lands must match too"},
		{"write_file", `{"path":"docs/.env","content":"x"}`, refused, "masked-path", "an allow rule never passes a mask"},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(c *config.Config) { c.Rules = cfgRules }, func(o *Options) {
				o.Env.Runner = &command.Local{Root: o.Env.Root.Dir()}
			})
			if err := os.MkdirAll(filepath.Join(f.dir, "src"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(f.dir, "docs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../src", filepath.Join(f.dir, "docs", "link")); err != nil {
				t.Fatal(err)
			}
			f.appr.answer = approval.Outcome{Approved: false}
			x := f.eng.Explain(tt.tool, json.RawMessage(tt.args))
			res := f.eng.Call(context.Background(), tt.tool, json.RawMessage(tt.args))
			got := ran
			switch {
			case len(f.appr.asked) > 0:
				got = asked
			case !res.Success:
				got = refused
			}
			if got != tt.want {
				t.Fatalf("%s: got %s (%+v), want %s", tt.why, got, res, tt.want)
			}
			rec := f.sink.recs[len(f.sink.recs)-1]
			if rec.Rule != tt.rule {
				t.Errorf("audit rule %q, want %q (%s)", rec.Rule, tt.rule, tt.why)
			}
			if want := map[string]string{ran: "allow", asked: "ask", refused: "deny"}[tt.want]; x.Decision != want || x.Rule != tt.rule {
				t.Errorf("explain says %s by %s, the engine did %s by %s", x.Decision, x.Rule, want, tt.rule)
			}
			if tt.want == refused && strings.HasPrefix(tt.rule, "rules:") && !strings.Contains(res.Error, "Refused by policy") {
				t.Errorf("refusal %q does not say it was the policy", res.Error)
			}
		})
	}
}
