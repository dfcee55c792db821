package telegram

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/approvaltest"
	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/store"
)

const fakeBotToken = "123456:TEST-token_abcdefghijklmnop"

// fakeBot speaks the Bot API methods warden uses (sendMessage, getUpdates,
// answerCallbackQuery, editMessageText) as documented at
// https://core.telegram.org/bots/api: POST /bot<token>/<method> with a JSON
// body, answered {"ok": true, "result": …} or {"ok": false, "error_code",
// "description"}.
type fakeBot struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	calls   []botCall
	updates []string // raw updates served to the next getUpdates
	raw     []string // whole bodies served instead, once each (malformed answers)
	nextMsg int64
	wake    chan struct{}
}

type botCall struct {
	Method string
	Params map[string]any
}

func newFakeBot(t *testing.T) *fakeBot {
	f := &fakeBot{t: t, nextMsg: 100, wake: make(chan struct{}, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBot) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+fakeBotToken+"/")
	if !ok || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	var params map[string]any
	if err := json.NewDecoder(r.Body).Decode(&params); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: can't parse JSON"}`)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, botCall{method, params})
	f.mu.Unlock()
	switch method {
	case "getUpdates":
		deadline := time.After(time.Duration(params["timeout"].(float64)) * time.Second)
		for {
			f.mu.Lock()
			if len(f.raw) > 0 {
				body := f.raw[0]
				f.raw = f.raw[1:]
				f.mu.Unlock()
				io.WriteString(w, body)
				return
			}
			if len(f.updates) > 0 {
				ups := f.updates
				f.updates = nil
				f.mu.Unlock()
				fmt.Fprintf(w, `{"ok":true,"result":[%s]}`, strings.Join(ups, ","))
				return
			}
			f.mu.Unlock()
			select {
			case <-f.wake:
			case <-deadline:
				io.WriteString(w, `{"ok":true,"result":[]}`)
				return
			case <-r.Context().Done():
				return
			}
		}
	case "sendMessage":
		f.mu.Lock()
		f.nextMsg++
		id := f.nextMsg
		f.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"chat":{"id":%v,"type":"private"},"date":0,"text":"x"}}`, id, params["chat_id"])
	case "answerCallbackQuery", "editMessageText":
		io.WriteString(w, `{"ok":true,"result":true}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`)
	}
}

// push queues raw updates for the poller.
func (f *fakeBot) push(raw ...string) {
	f.mu.Lock()
	f.updates = append(f.updates, raw...)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeBot) pushRaw(body string) {
	f.mu.Lock()
	f.raw = append(f.raw, body)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// callsTo returns the calls made to method so far.
func (f *fakeBot) callsTo(method string) []botCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []botCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// waitCall waits for a call to method whose params satisfy ok.
func (f *fakeBot) waitCall(method string, ok func(map[string]any) bool) map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range f.callsTo(method) {
			if ok == nil || ok(c.Params) {
				return c.Params
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("no %s call as wanted; calls: %+v", method, f.callsTo(method))
	return nil
}

func textHas(sub string) func(map[string]any) bool {
	return func(p map[string]any) bool { s, _ := p["text"].(string); return strings.Contains(s, sub) }
}

const (
	supChat   = 111  // a supervisor's private chat
	groupChat = -100 // a configured group: told, never decides
	strangerC = 222  // someone else who found the bot
)

// tgSetup is a real broker on a real SQLite store with a Telegram channel
// on a fake Bot API, polling.
func tgSetup(t *testing.T) (*fakeBot, *approval.Broker, *Channel, store.Store) {
	t.Helper()
	return tgSetupWith(t, nil)
}

// tgSetupWith is tgSetup with the channel's options changed by mod.
func tgSetupWith(t *testing.T, mod func(*Options)) (*fakeBot, *approval.Broker, *Channel, store.Store) {
	t.Helper()
	f := newFakeBot(t)
	o := Options{APIURL: f.srv.URL, Token: fakeBotToken, ChatIDs: []int64{supChat, groupChat},
		PageURL: "https://warden.example/", PollTimeout: time.Second, Notify: &notify.Options{Backoff: 5 * time.Millisecond}}
	if mod != nil {
		mod(&o)
	}
	tg, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	s := approvaltest.Store(t)
	b := approvaltest.Broker(t, s, func(o *approval.Options) {
		o.Supervisors = append(o.Supervisors, Supervisor(supChat))
		o.Channels = []approval.Channel{tg}
	})
	if !tg.Listen(b) {
		t.Fatal("Listen refused")
	}
	t.Cleanup(func() { tg.Close() })
	return f, b, tg, s
}

func callback(update int64, chat int64, chatType string, from int64, data string) string {
	return fmt.Sprintf(`{"update_id":%d,"callback_query":{"id":"cb%d","from":{"id":%d,"is_bot":false,"first_name":"x"},`+
		`"message":{"message_id":7,"chat":{"id":%d,"type":%q},"date":0,"text":"warden: approval needed for run_command"},"chat_instance":"1","data":%q}}`,
		update, update, from, chat, chatType, data)
}

func message(update int64, chat int64, chatType string, from int64, text string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"from":{"id":%d,"is_bot":false,"first_name":"x"},"chat":{"id":%d,"type":%q},"date":0,"text":%q}}`,
		update, 1000+update, from, chat, chatType, text)
}

var secretReq = &approval.Request{Tool: "run_command", Args: json.RawMessage(`{"command":"deploy --api_key=sk-abcdefghijklmnopqrstuvwx1234 now"}`),
	Workspace: "/w", Session: "s1", Agent: "build", Risk: "network"}
