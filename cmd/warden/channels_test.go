package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

// tgBot is a Bot API stand-in (https://core.telegram.org/bots/api):
// getUpdates hands out queued updates; every call is recorded.
type tgBot struct {
	mu      sync.Mutex
	updates []string
	methods []string
}

func (b *tgBot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot1234:serve-test-token/")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	io.Copy(io.Discard, r.Body)
	b.mu.Lock()
	b.methods = append(b.methods, method)
	ups := b.updates
	if method == "getUpdates" {
		b.updates = nil
	}
	b.mu.Unlock()
	switch method {
	case "getUpdates":
		if len(ups) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
		fmt.Fprintf(w, `{"ok":true,"result":[%s]}`, strings.Join(ups, ","))
	case "sendMessage":
		io.WriteString(w, `{"ok":true,"result":{"message_id":5,"chat":{"id":111,"type":"private"},"date":0}}`)
	default:
		io.WriteString(w, `{"ok":true,"result":true}`)
	}
}

func (b *tgBot) called(method string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.methods {
		if m == method {
			return true
		}
	}
	return false
}

// warden serve with "telegram" in notify_channels polls the bot and decides
// as telegram:<chat id>, a supervisor it adds; a stranger's press is refused.
func TestServeTelegramDecides(t *testing.T) {
	t.Parallel()
	bot := &tgBot{}
	api := httptest.NewServer(bot)
	defer api.Close()
	dir := t.TempDir()
	exe := filepath.Join(dir, "warden")
	if err := os.Symlink(os.Args[0], exe); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "warden.toml")
	os.WriteFile(cfgFile, []byte(fmt.Sprintf(`[security.approval]
supervisors = [{id = "alice", token_env = "ALICE_TOKEN"}]
notify_channels = ["telegram"]
telegram = { api_url = %q, bot_token_env = "WARDEN_TEST_TG_TOKEN", chat_ids = [111] }
`, api.URL)), 0o600)
	db := filepath.Join(dir, "warden.db")
	st, err := store.OpenSQLite(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	args := json.RawMessage(`{"command":"make deploy"}`)
	now := time.Now()
	id := approval.NewID()
	if err := st.Create(t.Context(), &store.Approval{ID: id, Tool: "run_command", Args: args, ArgsHash: approval.BindingHash("run_command", args, "/w", "s"),
		Workspace: "/w", Session: "s", State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute), Owner: store.CurrentOwner()}, nil); err != nil {
		t.Fatal(err)
	}

	serve := exec.Command(exe, "--config", cfgFile, "serve", "--addr", "127.0.0.1:0", "--db", db)
	serve.Env = append(os.Environ(), "ALICE_TOKEN=alice-token-0123456789abcdef", "WARDEN_TEST_TG_TOKEN=1234:serve-test-token",
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	var out strings.Builder
	serve.Stdout, serve.Stderr = &out, &out
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(syscall.SIGINT)
		serve.Wait()
		if t.Failed() {
			t.Logf("warden serve said:\n%s", out.String())
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); !bot.called("getUpdates"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("warden serve never polled the bot")
		}
	}
	press := func(update, chat int64, data string) string {
		return fmt.Sprintf(`{"update_id":%d,"callback_query":{"id":"q%d","from":{"id":%d,"is_bot":false,"first_name":"x"},`+
			`"message":{"message_id":5,"chat":{"id":%d,"type":"private"},"date":0,"text":"warden"},"chat_instance":"1","data":%q}}`, update, update, chat, chat, data)
	}
	bot.mu.Lock()
	bot.updates = append(bot.updates, press(1, 222, "a:"+id), press(2, 111, "a:"+id))
	bot.mu.Unlock()
	var a *store.Approval
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if a, err = st.Get(t.Context(), id); err == nil && a.State != store.Pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not decided")
		}
	}
	if a.State != store.Approved || a.DecidedBy != "telegram:111" {
		t.Errorf("state %s by %q", a.State, a.DecidedBy)
	}
	rows, err := st.Audit(t.Context(), store.AuditFilter{Event: "auth_failure"})
	if err != nil || len(rows) != 1 || !strings.Contains(rows[0].Record.Error, "chat 222") {
		t.Errorf("auth failures %v %v", rows, err)
	}
}
