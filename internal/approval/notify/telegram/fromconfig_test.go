package telegram

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/config"
)

// Each private chat decides as telegram:<id>; a group (negative id) never
// does, and a chat listed twice is one supervisor.
func TestSupervisors(t *testing.T) {
	t.Parallel()
	got := Supervisors(&config.Approval{Telegram: config.Telegram{ChatIDs: []int64{5, -9, 7, 5}}})
	if diff := cmp.Diff([]string{"telegram:5", "telegram:7"}, got); diff != "" {
		t.Error(diff)
	}
}

func TestFromConfig(t *testing.T) {
	t.Setenv("WARDEN_TEST_BOT_TOKEN", "1:abc")
	t.Setenv("WARDEN_TEST_EMPTY", "")
	a := &config.Approval{PageURL: "https://warden.example",
		Telegram: config.Telegram{APIURL: "http://127.0.0.1:1", BotTokenEnv: "WARDEN_TEST_BOT_TOKEN", ChatIDs: []int64{42, -1001}}}
	tg, err := FromConfig(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.token != "1:abc" || tg.pageURL != a.PageURL || !cmp.Equal(tg.chats, []int64{42, -1001}) {
		t.Errorf("channel %+v", tg)
	}
	for name, c := range map[string]struct {
		tc   config.Telegram
		want string
	}{
		"no token env":    {config.Telegram{ChatIDs: []int64{1}}, "bot_token_env is required"},
		"empty token env": {config.Telegram{BotTokenEnv: "WARDEN_TEST_EMPTY", ChatIDs: []int64{1}}, "WARDEN_TEST_EMPTY is empty"},
		"no chats":        {config.Telegram{BotTokenEnv: "WARDEN_TEST_BOT_TOKEN"}, "security.approval.telegram: telegram needs at least one chat id"},
		"plain http":      {config.Telegram{BotTokenEnv: "WARDEN_TEST_BOT_TOKEN", ChatIDs: []int64{1}, APIURL: "http://api.telegram.org"}, "api_url"},
	} {
		tg, err := FromConfig(&config.Approval{Telegram: c.tc}, nil)
		if err == nil {
			tg.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
