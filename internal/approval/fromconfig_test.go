package approval

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func TestFromConfigChannels(t *testing.T) {
	t.Setenv("WARDEN_TEST_SLACK_URL", "http://127.0.0.1:1/hook")
	t.Setenv("WARDEN_TEST_DISCORD_URL", "http://127.0.0.1:1/hook")
	t.Setenv("WARDEN_TEST_BOT_TOKEN", "1:abc")
	t.Setenv("WARDEN_TEST_SMTP_USER", "u")
	t.Setenv("WARDEN_TEST_SMTP_PASS", "p")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, []byte(testCAPEM(t)), 0o600)
	cfg := approvalConfig(func(a *config.Approval) {
		a.NotifyChannels = []string{"slack", "discord", "telegram", "email"}
		a.NotifyChannel = "Slack"
		a.PageURL = "https://warden.example"
		a.Slack.URLEnv, a.Discord.URLEnv = "WARDEN_TEST_SLACK_URL", "WARDEN_TEST_DISCORD_URL"
		a.Telegram = config.Telegram{APIURL: "http://127.0.0.1:1", BotTokenEnv: "WARDEN_TEST_BOT_TOKEN", ChatIDs: []int64{42, -1001}}
		a.Email = config.Email{SMTPAddr: "127.0.0.1:1", From: "w@example.com", To: []string{"o@example.com"},
			UsernameEnv: "WARDEN_TEST_SMTP_USER", PasswordEnv: "WARDEN_TEST_SMTP_PASS", CAFile: caFile}
	})
	o, closeFn, err := FromConfig(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var kinds []string
	for _, c := range o.Channels {
		switch c.(type) {
		case *Slack:
			kinds = append(kinds, "slack")
		case *Discord:
			kinds = append(kinds, "discord")
		case *Telegram:
			kinds = append(kinds, "telegram")
		case *Email:
			kinds = append(kinds, "email")
		default:
			kinds = append(kinds, "?")
		}
	}
	if diff := cmp.Diff([]string{"slack", "discord", "telegram", "email"}, kinds); diff != "" {
		t.Error(diff)
	}
	// The private chat decides as telegram:42; the group never does.
	if diff := cmp.Diff([]string{"ana", "telegram:42"}, o.Supervisors); diff != "" {
		t.Error(diff)
	}
	if !o.Remote {
		t.Error("not remote")
	}
}

func TestFromConfigErrors(t *testing.T) {
	t.Setenv("WARDEN_TEST_EMPTY", "")
	for name, c := range map[string]struct {
		mod  func(a *config.Approval)
		want string
	}{
		"unknown":           {func(a *config.Approval) { a.NotifyChannels = []string{"telegarm"} }, `unknown channel "telegarm"`},
		"slack without env": {func(a *config.Approval) { a.NotifyChannels = []string{"slack"} }, "slack.url_env is required"},
		"discord empty env": {func(a *config.Approval) { a.NotifyChannel = "discord"; a.Discord.URLEnv = "WARDEN_TEST_EMPTY" }, "WARDEN_TEST_EMPTY is empty"},
		"telegram no token": {func(a *config.Approval) { a.NotifyChannels = []string{"telegram"}; a.Telegram.ChatIDs = []int64{1} }, "bot_token_env is required"},
		"email incomplete":  {func(a *config.Approval) { a.NotifyChannels = []string{"email"}; a.Email.SMTPAddr = "h:25" }, "smtp_addr, from and to are required"},
		"email bad ca": {func(a *config.Approval) {
			a.NotifyChannels = []string{"email"}
			a.Email = config.Email{SMTPAddr: "h:25", From: "a@b.c", To: []string{"d@e.f"}, CAFile: "/nonexistent/ca.pem"}
		}, "ca_file"},
	} {
		_, closeFn, err := FromConfig(approvalConfig(c.mod), nil)
		closeFn()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func testCAPEM(t *testing.T) string {
	cert, _ := testCert(t)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}))
}
