package telegram

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/approvaltest"
	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/rulefile"
)

// The message shows the rule "always" would write, and its button
// approves and writes it into the user config.
func TestTelegramAlwaysButton(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	f := newFakeBot(t)
	tg, err := New(Options{APIURL: f.srv.URL, Token: fakeBotToken, ChatIDs: []int64{supChat},
		PollTimeout: time.Second, Notify: &notify.Options{Backoff: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	s := approvaltest.Store(t)
	b := approvaltest.Broker(t, s, func(o *approval.Options) {
		o.Supervisors = append(o.Supervisors, Supervisor(supChat))
		o.Channels = []approval.Channel{tg}
		o.Rules = rulefile.User{Path: path}
	})
	if !tg.Listen(b) {
		t.Fatal("Listen refused")
	}
	t.Cleanup(func() { tg.Close() })

	res := approvaltest.Ask(t.Context(), b, approvaltest.LsReq)
	id := approvaltest.PendingID(t, s)
	p := f.waitCall("sendMessage", nil)
	if !strings.Contains(p["text"].(string), "Always would write: allow command rm -rf build (exactly), in /w") {
		t.Fatalf("message does not show the rule:\n%s", p["text"])
	}
	if !strings.Contains(strings.Join(keyboardData(t, p), " "), "r:"+id) {
		t.Fatalf("no always button: %v", keyboardData(t, p))
	}
	f.push(callback(1, supChat, "private", supChat, "r:"+id))
	if r := <-res; !r.Out.Approved || r.Out.By != "telegram:111" {
		t.Fatalf("outcome %+v %v", r.Out, r.Err)
	}
	f.waitCall("answerCallbackQuery", textHas("Approved always"))
	rs, err := config.FileRules(path)
	if err != nil || len(rs) != 1 || rs[0].RequestID != id || rs[0].Workspace != "/w" || !rs[0].Exact {
		t.Fatalf("written %+v %v", rs, err)
	}
}

// A call whose message redacts a secret offers no "always" (the rule would
// carry the secret into the chat), and a forged button press is refused.
func TestTelegramAlwaysNotForSecrets(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	f := newFakeBot(t)
	tg, err := New(Options{APIURL: f.srv.URL, Token: fakeBotToken, ChatIDs: []int64{supChat},
		PollTimeout: time.Second, Notify: &notify.Options{Backoff: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	s := approvaltest.Store(t)
	b := approvaltest.Broker(t, s, func(o *approval.Options) {
		o.Supervisors = append(o.Supervisors, Supervisor(supChat))
		o.Channels = []approval.Channel{tg}
		o.Rules = rulefile.User{Path: path}
	})
	if !tg.Listen(b) {
		t.Fatal("Listen refused")
	}
	t.Cleanup(func() { tg.Close() })
	req := *approvaltest.LsReq
	req.Args = []byte(`{"command":"deploy --api_key=sk-abcdefghijklmnopqrstuvwx1234 now"}`)
	res := approvaltest.Ask(t.Context(), b, &req)
	id := approvaltest.PendingID(t, s)
	p := f.waitCall("sendMessage", nil)
	if strings.Contains(p["text"].(string), "sk-abc") || strings.Contains(p["text"].(string), "Always would write") ||
		strings.Contains(strings.Join(keyboardData(t, p), " "), "r:") {
		t.Fatalf("always offered for a secret:\n%s %v", p["text"], keyboardData(t, p))
	}
	f.push(callback(1, supChat, "private", supChat, "r:"+id))
	f.waitCall("answerCallbackQuery", textHas("No lasting rule from Telegram"))
	if a, _ := s.Get(t.Context(), id); a.State != "PENDING" {
		t.Fatalf("a forged always decided: %s", a.State)
	}
	b.Decide(t.Context(), id, Supervisor(supChat), false, "no")
	<-res
}
