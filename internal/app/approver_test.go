package app

import (
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/approval/notify/telegram"
	"github.com/wardenhq/warden/internal/config"
)

func approvalConfig(mod func(a *config.Approval)) *config.Config {
	cfg := config.Default()
	a := &cfg.Security.Approval
	a.TimeoutSecs, a.OnTimeout = 60, config.PolicyDeny
	a.Supervisors = []config.Supervisor{{ID: "ana", TokenEnv: "ANA_TOKEN"}}
	mod(a)
	return cfg
}

// Every channel the section names is started, the webhook first and then
// in the order of notify_channels; each Telegram private chat becomes a
// supervisor, a group does not.
func TestApprovalOptionsChannels(t *testing.T) {
	t.Setenv("WARDEN_TEST_SLACK_URL", "http://127.0.0.1:1/hook")
	t.Setenv("WARDEN_TEST_DISCORD_URL", "http://127.0.0.1:1/hook")
	t.Setenv("WARDEN_TEST_BOT_TOKEN", "1:abc")
	t.Setenv("WARDEN_TEST_WEBHOOK_SECRET", "0123456789abcdef-secret")
	cfg := approvalConfig(func(a *config.Approval) {
		a.NotifyChannels = []string{"slack", "discord", "telegram", "email", "api"}
		a.NotifyChannel = "Slack"
		a.PageURL = "https://warden.example"
		a.GrantMaxMinutes = 7
		a.Webhook = config.Webhook{URL: "http://127.0.0.1:1/hook", SecretEnv: "WARDEN_TEST_WEBHOOK_SECRET"}
		a.Slack.URLEnv, a.Discord.URLEnv = "WARDEN_TEST_SLACK_URL", "WARDEN_TEST_DISCORD_URL"
		a.Telegram = config.Telegram{APIURL: "http://127.0.0.1:1", BotTokenEnv: "WARDEN_TEST_BOT_TOKEN", ChatIDs: []int64{42, -1001}}
		a.Email = config.Email{SMTPAddr: "127.0.0.1:1", From: "w@example.com", To: []string{"o@example.com"}}
	})
	o, closeFn, err := ApprovalOptions(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var kinds []string
	for _, c := range o.Channels {
		kinds = append(kinds, strings.TrimPrefix(fmt.Sprintf("%T", c), "*"))
	}
	want := []string{"notify.Webhook", "notify.Slack", "notify.Discord", "telegram.Channel", "notify.Email"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ana", "telegram:42"}, o.Supervisors); diff != "" {
		t.Errorf("supervisors (-want +got):\n%s", diff)
	}
	if !o.Remote || o.GrantMax != 7*time.Minute || o.Timeout != time.Minute {
		t.Errorf("options %+v", o)
	}
}

// A channel that cannot start is a problem ChannelProblems names (and
// ApprovalOptions logs), not an error: the other channels still start and
// close (goleak checks). A section that names an unknown channel is an
// error.
func TestApprovalOptionsChannelProblems(t *testing.T) {
	t.Setenv("WARDEN_TEST_SLACK_URL", "http://127.0.0.1:1/hook")
	t.Setenv("WARDEN_TEST_EMPTY", "")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not a certificate")}), 0o600)
	_, closeFn, err := ApprovalOptions(approvalConfig(func(a *config.Approval) { a.NotifyChannels = []string{"telegarm"} }), nil)
	if err == nil || !strings.Contains(err.Error(), `unknown channel "telegarm"`) {
		t.Errorf("unknown channel: %v", err)
	}
	closeFn()
	for name, c := range map[string]struct {
		mod       func(a *config.Approval)
		want      string
		nChannels int
	}{
		"telegram after slack": {func(a *config.Approval) {
			a.NotifyChannels = []string{"slack", "telegram"}
			a.Slack.URLEnv = "WARDEN_TEST_SLACK_URL"
			a.Telegram.ChatIDs = []int64{1}
		}, "security.approval.telegram.bot_token_env is required", 1},
		"email after slack": {func(a *config.Approval) {
			a.NotifyChannels = []string{"slack", "email"}
			a.Slack.URLEnv = "WARDEN_TEST_SLACK_URL"
			a.Email = config.Email{SMTPAddr: "h:25", From: "a@b.c", To: []string{"d@e.f"}, CAFile: caFile}
		}, "security.approval.email: ca_file " + caFile + ": no PEM certificate", 1},
		"webhook": {func(a *config.Approval) {
			a.Webhook = config.Webhook{URL: "https://h.example/x", SecretEnv: "WARDEN_TEST_EMPTY"}
		}, "security.approval.webhook: environment variable WARDEN_TEST_EMPTY", 0},
		"slack variable unset": {func(a *config.Approval) {
			a.NotifyChannels = []string{"slack"}
			a.Slack.URLEnv = "WARDEN_TEST_EMPTY"
		}, "slack: security.approval.slack.url_env: environment variable WARDEN_TEST_EMPTY is empty", 0},
	} {
		cfg := approvalConfig(c.mod)
		o, closeFn, err := ApprovalOptions(cfg, nil)
		if err != nil {
			t.Errorf("%s: %v; a channel that cannot start is no error", name, err)
			continue
		}
		if len(o.Channels) != c.nChannels {
			t.Errorf("%s: %d channels started, want %d", name, len(o.Channels), c.nChannels)
		}
		if err := closeFn(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
		probs := ChannelProblems(cfg)
		if len(probs) != 1 || !strings.Contains(probs[0].Error(), c.want) {
			t.Errorf("%s: problems %v, want one with %q", name, probs, c.want)
		}
	}
}

var (
	_ notify.Channel = (*telegram.Channel)(nil)
)
