package approval

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/config"
)

func approvalConfig(mod func(a *config.Approval)) *config.Config {
	cfg := &config.Config{}
	a := &cfg.Security.Approval
	a.TimeoutSecs, a.OnTimeout = 60, config.PolicyDeny
	a.Supervisors = []config.Supervisor{{ID: "ana", TokenEnv: "ANA_TOKEN"}}
	mod(a)
	return cfg
}

func TestFromConfig(t *testing.T) {
	t.Parallel()
	cfg := approvalConfig(func(a *config.Approval) {
		a.SupervisorID = "bo"
		a.GrantMaxMinutes = 5
		a.NotifyChannels = []string{"Slack", "telegram"}
		a.NotifyChannel = "slack"
		a.AutoApprove = []config.AutoApprove{{Tool: "read_file", PathPattern: `^docs/`}}
	})
	o, err := FromConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ana", "bo"}, o.Supervisors); diff != "" {
		t.Errorf("supervisors (-want +got):\n%s", diff)
	}
	if o.Timeout != time.Minute || o.OnTimeout != config.PolicyDeny || o.GrantMax != 5*time.Minute || !o.Remote {
		t.Errorf("options %+v", o)
	}
	if _, ok := o.Auto.Match("read_file", []byte(`{"path":"docs/a.md"}`)); !ok {
		t.Error("the auto-approve rule does not match")
	}
	if diff := cmp.Diff([]string{"slack", "telegram"}, NotifyChannels(&cfg.Security.Approval)); diff != "" {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
}

// Remote says whether a request may wait for a supervisor deciding from
// elsewhere: a remote channel or a webhook, not the terminal alone.
func TestFromConfigRemote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		mod  func(a *config.Approval)
		want bool
	}{
		{"nothing", func(a *config.Approval) {}, false},
		{"terminal", func(a *config.Approval) { a.NotifyChannel = "terminal" }, false},
		{"api", func(a *config.Approval) { a.NotifyChannel = "api" }, true},
		{"email among others", func(a *config.Approval) { a.NotifyChannels = []string{"terminal", "email"} }, true},
		{"webhook", func(a *config.Approval) { a.Webhook.URL = "https://hooks.example/x" }, true},
	} {
		o, err := FromConfig(approvalConfig(c.mod), nil)
		if err != nil || o.Remote != c.want {
			t.Errorf("%s: remote %v (%v), want %v", c.name, o.Remote, err, c.want)
		}
	}
}

func TestFromConfigErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		mod  func(a *config.Approval)
		want string
	}{
		"unknown channel": {func(a *config.Approval) { a.NotifyChannels = []string{"telegarm"} }, `unknown channel "telegarm"`},
		"bad rule": {func(a *config.Approval) {
			a.AutoApprove = []config.AutoApprove{{Tool: "run_command", CommandPattern: "("}}
		}, "security.approval.auto_approve"},
	} {
		_, err := FromConfig(approvalConfig(c.mod), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
