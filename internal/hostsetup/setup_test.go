package hostsetup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/wardenhq/warden/internal/config"
)

func testOptions(t *testing.T, host string) Options {
	t.Helper()
	cfg := config.Default()
	cfg.Security.Approval.Webhook.SecretEnv = "HOOK_SECRET"
	cfg.MCP.Servers = []config.MCPServer{{Name: "gh", URL: "https://example.com/mcp", TokenEnv: "GH_TOKEN"}}
	env := map[string]string{"XDG_CONFIG_HOME": "/cfg", "HOOK_SECRET": "s3cret-value", "GH_TOKEN": "ghp_value", "PATH": "/bin"}
	return Options{Host: host, Warden: "/usr/local/bin/warden", Home: t.TempDir(), Config: cfg,
		Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return time.Unix(1700000000, 0) }}
}

func TestPassEnvByReference(t *testing.T) {
	t.Parallel()
	o := testOptions(t, "claude-code")
	got := PassEnv(o.Config, o.Getenv)
	if strings.Join(got, " ") != "GH_TOKEN HOOK_SECRET XDG_CONFIG_HOME" {
		t.Fatalf("PassEnv = %q", got)
	}
	for _, host := range Hosts {
		o := testOptions(t, host)
		p, err := PlanFor(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.Files {
			if strings.Contains(string(f.After), "s3cret-value") || strings.Contains(string(f.After), "ghp_value") {
				t.Errorf("%s: %s holds a secret's value:\n%s", host, f.Path, f.After)
			}
		}
	}
}

// From nothing: the plan is written, the host then checks clean, and a
// second setup changes nothing.
func TestSetupFromNothing(t *testing.T) {
	t.Parallel()
	for _, host := range Hosts {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			o := testOptions(t, host)
			miss, p, err := Check(o)
			if err != nil {
				t.Fatal(err)
			}
			if len(miss) == 0 {
				t.Fatal("an empty home checks clean")
			}
			if backups, err := p.Apply(o.Now()); err != nil || len(backups) != 0 {
				t.Fatalf("apply: %v, backups %v", err, backups)
			}
			if miss, _, err := Check(o); err != nil || len(miss) != 0 {
				t.Fatalf("after setup: %v %v", miss, err)
			}
			again, err := PlanFor(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range again.Files {
				if f.Changed() {
					t.Errorf("a second setup changes %s:\n%s", f.Path, f.Diff())
				}
			}
		})
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The user's own entries stay, a backup is kept, and warden's old hook
// group is replaced rather than added twice.
func TestSetupKeepsUserEntries(t *testing.T) {
	t.Parallel()
	o := testOptions(t, "claude-code")
	o.Exclusive = true
	settings := filepath.Join(o.Home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o700)
	user := `{"model":"opus","permissions":{"allow":["Bash(npm test:*)"]},"hooks":{"PreToolUse":[
		{"matcher":"Bash","hooks":[{"type":"command","command":"/home/u/lint.sh"}]},
		{"matcher":"*","hooks":[{"type":"command","command":"/old/warden hook claude-code","timeout":5}]}]}}`
	os.WriteFile(settings, []byte(user), 0o600)
	p, err := PlanFor(o)
	if err != nil {
		t.Fatal(err)
	}
	backups, err := p.Apply(o.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(backups) != 1 || !strings.HasPrefix(backups[0], settings+".warden-backup-") {
		t.Fatalf("backups %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != user {
		t.Fatal("the backup is not the old file")
	}
	m := readJSON(t, settings)
	if m["model"] != "opus" {
		t.Error("the user's model setting is gone")
	}
	allow := m["permissions"].(map[string]any)["allow"].([]any)
	if len(allow) != 2 || allow[0] != "Bash(npm test:*)" || allow[1] != "mcp__warden__*" {
		t.Errorf("permissions.allow = %v", allow)
	}
	deny := m["permissions"].(map[string]any)["deny"].([]any)
	if len(deny) != 6 {
		t.Errorf("permissions.deny = %v", deny)
	}
	pre := m["hooks"].(map[string]any)["PreToolUse"].([]any)
	if len(pre) != 2 || !strings.Contains(mustJSON(pre[0]), "lint.sh") || !strings.Contains(mustJSON(pre[1]), "/usr/local/bin/warden hook claude-code") {
		t.Errorf("PreToolUse = %s", mustJSON(pre))
	}
	st, _ := os.Stat(settings)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSetupCodexTOML(t *testing.T) {
	t.Parallel()
	o := testOptions(t, "codex")
	path := filepath.Join(o.Home, ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(path), 0o700)
	user := `# my codex
model = "gpt-5.5" # the best

[features]
web_search = true
unified_exec_tty = true

[mcp_servers.warden]
command = "/old/warden"
args = ["mcp"]

[mcp_servers.warden.env]
FOO = "bar"

[mcp_servers.github]
command = "gh-mcp"
`
	os.WriteFile(path, []byte(user), 0o600)
	p, err := PlanFor(o)
	if err != nil {
		t.Fatal(err)
	}
	after := string(p.Files[0].After)
	var m map[string]any
	if err := toml.Unmarshal([]byte(after), &m); err != nil {
		t.Fatalf("%v\n%s", err, after)
	}
	feat := m["features"].(map[string]any)
	servers := m["mcp_servers"].(map[string]any)
	w := servers["warden"].(map[string]any)
	switch {
	case !strings.Contains(after, "# my codex") || !strings.Contains(after, "# the best"):
		t.Error("the user's comments are gone")
	case feat["web_search"] != true || feat["unified_exec_tty"] != false:
		t.Errorf("features %v", feat)
	case servers["github"] == nil:
		t.Error("the user's other server is gone")
	case w["command"] != "/usr/local/bin/warden" || w["env"] != nil || w["default_tools_approval_mode"] != "approve":
		t.Errorf("warden's server %v", w)
	}
	if got := anyStrings(w["env_vars"]); strings.Join(got, " ") != "GH_TOKEN HOOK_SECRET XDG_CONFIG_HOME" {
		t.Errorf("env_vars %v", got)
	}
	if len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "trust") {
		t.Errorf("no note about hook trust: %v", p.Notes)
	}
}

// A managed requirements.toml: the hook and the feature pinned; other
// managed settings and hooks kept.
func TestSetupCodexManaged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requirements.toml")
	user := "allowed_approval_policies = [\"never\"]\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"/usr/bin/audit\"\n"
	os.WriteFile(path, []byte(user), 0o644)
	f, err := codexRequirements(path, "/usr/local/bin/warden hook codex", 80)
	if err != nil {
		t.Fatal(err)
	}
	after := string(f.After)
	if !strings.Contains(after, "/usr/bin/audit") || !strings.Contains(after, "allowed_approval_policies") {
		t.Fatalf("user entries lost:\n%s", after)
	}
	if miss := f.check(f.After); len(miss) != 0 {
		t.Fatalf("%v\n%s", miss, after)
	}
	// Planned again over the result: warden's groups are not doubled.
	os.WriteFile(path, f.After, 0o644)
	f2, err := codexRequirements(path, "/usr/local/bin/warden hook codex", 80)
	if err != nil || f2.Changed() || strings.Count(string(f2.After), "hook codex") != 2 {
		t.Fatalf("second plan: %v changed=%v\n%s", err, f2.Changed(), f2.After)
	}
}

// A file that is not what setup can edit is refused, and nothing written.
func TestSetupRefusesBrokenFiles(t *testing.T) {
	t.Parallel()
	o := testOptions(t, "gemini-cli")
	path := filepath.Join(o.Home, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"hooks": [1, 2]`), 0o600)
	if _, err := PlanFor(o); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Fatalf("err %v", err)
	}
	os.WriteFile(path, []byte(`{"hooks": [1, 2]}`), 0o600)
	if _, err := PlanFor(o); err == nil || !strings.Contains(err.Error(), "hooks is not an object") {
		t.Fatalf("err %v", err)
	}
	oc := testOptions(t, "codex")
	cp := filepath.Join(oc.Home, ".codex", "config.toml")
	os.MkdirAll(filepath.Dir(cp), 0o700)
	os.WriteFile(cp, []byte("features.unified_exec_tty = true\n"), 0o600)
	if _, err := PlanFor(oc); err == nil || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("err %v", err)
	}
}

func TestHookCommandQuoted(t *testing.T) {
	t.Parallel()
	o := testOptions(t, "claude-code")
	o.Warden, o.Workspace = "/opt/my tools/warden", "/w/it's"
	if got := o.hookCommand(); got != `'/opt/my tools/warden' hook claude-code --workspace '/w/it'\''s'` {
		t.Fatalf("hook command %s", got)
	}
}
