package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// promptWith runs a Terminal prompt fed from a pipe with input.
func promptWith(t *testing.T, input string, closeIn bool) (Answer, string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	io.WriteString(w, input)
	if closeIn {
		w.Close()
	} else {
		defer w.Close()
	}
	var out bytes.Buffer
	term := NewTerminal(r, &out)
	term.poll = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	p := &Pending{ID: "id1", Tool: "run_command", Args: json.RawMessage("{\"command\":\"echo \\u001b[2J\\u001b[Hall fine\"}"),
		Risk: "dangerous\n\u202eevil", ExpiresAt: time.Now().Add(time.Minute)}
	ans, err := term.Prompt(ctx, p)
	return ans, out.String(), err
}

func TestTerminalPrompt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Answer
		err  error
	}{
		{"y\n", Answer{Approve: true}, nil},
		{"YES\n", Answer{Approve: true}, nil},
		{"n\nuse make clean\n", Answer{Reason: "use make clean"}, nil},
		{"n not now\n", Answer{Reason: "not now"}, nil},
		{"a\n", Answer{Abort: true}, nil},
		{"maybe\ny\n", Answer{Approve: true}, nil},
		{"", Answer{}, io.EOF},
		{"n\n", Answer{}, io.EOF}, // the reason never comes
	}
	for _, c := range cases {
		ans, out, err := promptWith(t, c.in, true)
		if ans != c.want || !errors.Is(err, c.err) {
			t.Errorf("input %q: %+v %v, want %+v %v", c.in, ans, err, c.want, c.err)
		}
		// Agent-controlled text cannot paint on the terminal.
		if strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, `\u001b[2J`) {
			t.Errorf("input %q: output not escaped:\n%q", c.in, out)
		}
	}
}

// A prompt with nobody typing ends when another channel decides.
func TestTerminalPromptCancelled(t *testing.T) {
	t.Parallel()
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	term := NewTerminal(r, io.Discard)
	term.poll = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := term.Prompt(ctx, &Pending{ID: "x", Args: json.RawMessage(`{}`)}); done <- err }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("prompt did not end when its context did")
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ok":            "ok",
		"a\x1b[31mb":    `a\u001b[31mb`,
		"l1\nl2\tx":     `l1\nl2\tx`,
		"\u202eabc":     `\u202eabc`,
		"\xff":          `\xff`,
		"\u0085next":    `\u0085next`,
		"abcdef":        "abcdef",
		"ünïcødé stays": "ünïcødé stays",
	} {
		if got := Printable(in, 0); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Printable("abcdef", 3); got != "abc…" {
		t.Errorf("cut: %q", got)
	}
}

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
	wh, err := NewWebhook(srv.URL, secret, &WebhookOptions{Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	p := &Pending{ID: "abc", Tool: "run_command", Args: json.RawMessage(`{"command":"curl -H 'Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz123456'"}`)}
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
	wh, _ := NewWebhook(srv.URL, []byte("0123456789abcdef"), &WebhookOptions{Backoff: time.Millisecond, Queue: 1})
	wh.Notify(t.Context(), &Pending{ID: "a", Args: json.RawMessage(`{}`)})
	time.Sleep(200 * time.Millisecond)
	wh.Close()
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
	wh, err := NewWebhook(srv.URL, secret, &WebhookOptions{Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	p := &Pending{ID: "abc", Tool: "write_file", Args: json.RawMessage(`{"path":".env","content":"DEBUG=1\n"}`),
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
