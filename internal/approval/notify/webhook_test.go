package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
)

func TestWebhook(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef-secret")
	var calls atomic.Int64
	var mu sync.Mutex
	var got WebhookEvent
	delivered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(SignatureHeader) != Sign(secret, body) {
			t.Errorf("bad signature %q", r.Header.Get(SignatureHeader))
		}
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		json.Unmarshal(body, &got)
		mu.Unlock()
		close(delivered)
	}))
	defer srv.Close()
	wh, err := NewWebhook(srv.URL, secret, &Options{Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	p := &approval.Pending{ID: "abc", Tool: "run_command", Args: json.RawMessage(`{"command":"curl -H 'Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz123456'"}`)}
	start := time.Now()
	if err := wh.Notify(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 50*time.Millisecond {
		t.Error("Notify blocked")
	}
	select {
	case <-delivered:
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered after retries")
	}
	mu.Lock()
	defer mu.Unlock()
	if got.Request == nil || got.Request.ID != "abc" || calls.Load() != 3 {
		t.Fatalf("got %+v after %d calls", got, calls.Load())
	}
	if strings.Contains(string(got.Request.Args), "sk-abcdefghijklmnop") {
		t.Errorf("secret sent to the webhook: %s", got.Request.Args)
	}

	if _, err := NewWebhook(srv.URL, []byte("short"), nil); err == nil {
		t.Error("accepted a short secret")
	}
}

// A 4xx answer is not retried; a dead receiver never blocks Notify.
func TestWebhookNoRetryOn4xx(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	wh, _ := NewWebhook(srv.URL, []byte("0123456789abcdef"), &Options{Backoff: time.Millisecond, Queue: 1})
	wh.Notify(t.Context(), &approval.Pending{ID: "a", Args: json.RawMessage(`{}`)})
	wh.Close() // drains: the one attempt is made before Close returns
	if calls.Load() != 1 {
		t.Errorf("%d calls for a 400, want 1", calls.Load())
	}
}

// The risk summary carries file contents (a write's diff shows the old
// lines too): a secret in it is redacted before it reaches the webhook,
// as the arguments' are.
func TestWebhookRedactsRisk(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef-secret")
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bodies <- body
	}))
	defer srv.Close()
	wh, err := NewWebhook(srv.URL, secret, &Options{Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	p := &approval.Pending{ID: "abc", Tool: "write_file", Args: json.RawMessage(`{"path":".env","content":"DEBUG=1\n"}`),
		Risk: "--- a/.env\n+++ b/.env\n@@ -1,2 +1 @@\n-OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456\n-AWS=AKIAABCDEFGHIJKLMNOP\n+DEBUG=1\n"}
	if err := wh.Notify(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	var body []byte
	select {
	case body = <-bodies:
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered")
	}
	for _, s := range []string{"sk-proj-abcdefghijklmnop", "AKIAABCDEFGHIJKLMNOP"} {
		if strings.Contains(string(body), s) {
			t.Errorf("secret %q of the risk sent to the webhook: %s", s, body)
		}
	}
	var got WebhookEvent
	if err := json.Unmarshal(body, &got); err != nil || !strings.Contains(got.Request.Risk, "+DEBUG=1") {
		t.Errorf("risk not delivered readable: %v %+v", err, got.Request)
	}
}
