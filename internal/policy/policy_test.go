package policy

import (
	"testing"

	"github.com/wardenhq/warden/internal/config"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	cmd := func(class string) Call {
		return Call{Tool: "run_command", Group: "shell", Sensitive: true, CommandClass: class}
	}
	write := Call{Tool: "write_file", Group: "fs_write", Sensitive: true}
	read := Call{Tool: "read_file", Group: "fs_read"}
	tests := []struct {
		name string
		edit func(*config.Config)
		call Call
		want Action
		rule string
	}{
		{"sensitive default asks for writes", nil, write, Supervised, "confirm_mode=confirm-sensitive"},
		{"sensitive default allows reads", nil, read, Allow, "confirm_mode=confirm-sensitive"},
		{"safe command allowed", nil, cmd("safe"), Allow, "confirm_mode=confirm-sensitive"},
		{"dev command asked", nil, cmd("dev"), Supervised, "confirm_mode=confirm-sensitive"},
		{"dangerous command asked", nil, cmd("dangerous"), Supervised, "confirm_mode=confirm-sensitive"},
		{"yolo allows dangerous", func(c *config.Config) { c.Security.ConfirmMode = "yolo" }, cmd("dangerous"), Allow, "confirm_mode=yolo"},
		{"confirm-all asks reads", func(c *config.Config) { c.Security.ConfirmMode = "confirm-all" }, read, Supervised, "confirm_mode=confirm-all"},
		{"default beats mode", func(c *config.Config) { c.Security.ToolPolicy.Default = "deny" }, read, Deny, "tool_policy.default"},
		{"group beats default", func(c *config.Config) {
			c.Security.ToolPolicy.Default = "deny"
			c.Security.ToolPolicy.Groups = map[string]string{"fs_read": "allow"}
		}, read, Allow, "tool_policy.groups.fs_read"},
		{"tool beats group", func(c *config.Config) {
			c.Security.ToolPolicy.Groups = map[string]string{"fs_write": "deny"}
			c.Security.ToolPolicy.Tools = map[string]string{"write_file": "allow"}
		}, write, Allow, "tool_policy.tools.write_file"},
		{"alias shell names run_command", func(c *config.Config) {
			c.Security.ToolPolicy.Tools = map[string]string{"shell": "deny"}
		}, cmd("safe"), Deny, "tool_policy.tools.shell"},
		{"alias file_write names write_file", func(c *config.Config) {
			c.Security.ToolPolicy.Tools = map[string]string{"file_write": "supervised"}
			c.Security.ConfirmMode = "yolo"
		}, write, Supervised, "tool_policy.tools.file_write"},
		{"strictest of several groups wins", func(c *config.Config) {
			c.Security.ToolGroups = map[string][]string{"edits": {"file_write"}}
			c.Security.ToolPolicy.Groups = map[string]string{"fs_write": "allow", "edits": "deny"}
		}, write, Deny, "tool_policy.groups.edits"},
		{"user group without policy falls through", func(c *config.Config) {
			c.Security.ToolGroups = map[string][]string{"edits": {"write_file"}}
			c.Security.ToolPolicy.Default = "allow"
		}, write, Allow, "tool_policy.default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			if tt.edit != nil {
				tt.edit(cfg)
			}
			agent, err := LookupAgent(cfg, "build")
			if err != nil {
				t.Fatal(err)
			}
			got := Decide(cfg, agent, tt.call)
			if got.Action != tt.want || got.Rule != tt.rule {
				t.Errorf("Decide = %v (%s), want %v (%s)", got.Action, got.Rule, tt.want, tt.rule)
			}
		})
	}
}

func TestAgents(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Agents = map[string]config.Agent{
		"docs":   {AllowedTools: []string{"file_read", "fs_write"}},
		"plan":   {AllowedTools: []string{"read_file", "write_file"}}, // cannot widen plan
		"bare":   {},
		"strict": {AllowedTools: []string{"read_file"}, ConfirmMode: "confirm-all"},
	}
	cases := []struct {
		agent, tool, group string
		want               bool
	}{
		{"build", "write_file", "fs_write", true},
		{"build", "run_command", "shell", true},
		{"plan", "read_file", "fs_read", true},
		{"plan", "write_file", "fs_write", false},
		{"plan", "run_command", "shell", false},
		{"review", "apply_patch", "fs_write", false},
		{"resume", "delete_file", "fs_write", false},
		{"review", "http_request", "network", false},
		{"docs", "read_file", "fs_read", true},
		{"docs", "edit_file", "fs_write", true},
		{"docs", "run_command", "shell", false},
		{"bare", "grep", "fs_read", true},
		{"bare", "write_file", "fs_write", false},
	}
	for _, c := range cases {
		a, err := LookupAgent(cfg, c.agent)
		if err != nil {
			t.Fatal(err)
		}
		if got := AgentHas(cfg, a, c.tool, c.group); got != c.want {
			t.Errorf("agent %s has %s = %v, want %v", c.agent, c.tool, got, c.want)
		}
	}
	if _, err := LookupAgent(cfg, "nobody"); err == nil {
		t.Error("unknown agent accepted")
	}
	strict, _ := LookupAgent(cfg, "strict")
	if m := EffectiveMode(cfg, strict); m != "confirm-all" {
		t.Errorf("agent mode confirm-all not applied: %s", m)
	}
	cfg.Security.ConfirmMode = "confirm-all"
	plan, _ := LookupAgent(cfg, "plan")
	if m := EffectiveMode(cfg, plan); m != "confirm-all" {
		t.Errorf("plan's yolo loosened the configured mode: %s", m)
	}
}

// BenchmarkDecide is one policy decision with a realistic configuration:
// user groups, group and tool policies, falling through to the mode.
func BenchmarkDecide(b *testing.B) {
	cfg := config.Default()
	cfg.Security.ToolGroups = map[string][]string{"edits": {"write_file", "edit_file"}, "net": {"http_request"}}
	cfg.Security.ToolPolicy.Groups = map[string]string{"net": "deny"}
	cfg.Security.ToolPolicy.Tools = map[string]string{"delete_file": "deny"}
	agent, _ := LookupAgent(cfg, "build")
	call := Call{Tool: "run_command", Group: "shell", Sensitive: true, CommandClass: "dev"}
	b.ReportAllocs()
	for b.Loop() {
		if d := Decide(cfg, agent, call); d.Action != Supervised {
			b.Fatal(d)
		}
	}
}
