package notify

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
)

func TestFromConfigChannels(t *testing.T) {
	t.Setenv("WARDEN_TEST_SLACK_URL", "http://127.0.0.1:1/hook")
	t.Setenv("WARDEN_TEST_DISCORD_URL", "http://127.0.0.1:1/hook")
	t.Setenv("WARDEN_TEST_SMTP_USER", "u")
	t.Setenv("WARDEN_TEST_SMTP_PASS", "p")
	t.Setenv("WARDEN_TEST_WEBHOOK_SECRET", "0123456789abcdef-secret")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, []byte(testCAPEM(t)), 0o600)
	a := &config.Approval{PageURL: "https://warden.example"}
	a.Slack.URLEnv, a.Discord.URLEnv = "WARDEN_TEST_SLACK_URL", "WARDEN_TEST_DISCORD_URL"
	a.Email = config.Email{SMTPAddr: "127.0.0.1:1", From: "w@example.com", To: []string{"o@example.com"},
		UsernameEnv: "WARDEN_TEST_SMTP_USER", PasswordEnv: "WARDEN_TEST_SMTP_PASS", CAFile: caFile}
	for name, want := range map[string]string{"slack": "*notify.Slack", "discord": "*notify.Discord", "email": "*notify.Email",
		"telegram": "<nil>", "api": "<nil>", "terminal": "<nil>"} {
		ch, err := FromConfig(a, name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := typeName(ch); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
		if ch != nil {
			ch.Close()
		}
	}
	if w, err := WebhookFromConfig(a, nil); w != nil || err != nil {
		t.Errorf("no webhook.url: %v %v", w, err)
	}
	a.Webhook = config.Webhook{URL: "http://127.0.0.1:1/hook", SecretEnv: "WARDEN_TEST_WEBHOOK_SECRET"}
	w, err := WebhookFromConfig(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.pageURL != a.PageURL {
		t.Errorf("webhook page %q", w.pageURL)
	}
}

func typeName(ch Channel) string {
	switch ch.(type) {
	case nil:
		return "<nil>"
	case *Slack:
		return "*notify.Slack"
	case *Discord:
		return "*notify.Discord"
	case *Email:
		return "*notify.Email"
	}
	return "?"
}

func TestFromConfigErrors(t *testing.T) {
	t.Setenv("WARDEN_TEST_EMPTY", "")
	t.Setenv("WARDEN_TEST_USER", "u")
	for name, c := range map[string]struct {
		channel string
		mod     func(a *config.Approval)
		want    string
	}{
		"slack without env": {"slack", func(a *config.Approval) {}, "slack.url_env is required"},
		"discord empty env": {"discord", func(a *config.Approval) { a.Discord.URLEnv = "WARDEN_TEST_EMPTY" }, "WARDEN_TEST_EMPTY is empty"},
		"email incomplete":  {"email", func(a *config.Approval) { a.Email.SMTPAddr = "h:25" }, "smtp_addr, from and to are required"},
		"email bad ca": {"email", func(a *config.Approval) {
			a.Email = config.Email{SMTPAddr: "h:25", From: "a@b.c", To: []string{"d@e.f"}, CAFile: "/nonexistent/ca.pem"}
		}, "ca_file"},
		"webhook no secret": {"webhook", func(a *config.Approval) { a.Webhook.URL = "https://hooks.example/x" }, "secret_env is required"},
		"webhook empty env": {"webhook", func(a *config.Approval) {
			a.Webhook = config.Webhook{URL: "https://h.example/x", SecretEnv: "WARDEN_TEST_EMPTY"}
		}, "WARDEN_TEST_EMPTY (secret_env) is empty"},
		"email no user pass": {"email", func(a *config.Approval) {
			a.Email = config.Email{SMTPAddr: "h:25", From: "a@b.c", To: []string{"d@e.f"}, UsernameEnv: "WARDEN_TEST_USER"}
		}, "password_env is required"},
	} {
		a := &config.Approval{}
		c.mod(a)
		var err error
		if c.channel == "webhook" {
			_, err = WebhookFromConfig(a, nil)
		} else {
			_, err = FromConfig(a, c.channel, nil)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func testCAPEM(t *testing.T) string {
	cert, _ := testCert(t)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}))
}
