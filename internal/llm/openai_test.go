package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/llm"
	"github.com/wardenhq/warden/internal/llm/llmtest"
)

const canary = "sk-test-CANARY-0123456789abcdefghij"

func newClient(t *testing.T, base string, mod func(*llm.Options)) *llm.OpenAI {
	t.Helper()
	o := llm.Options{BaseURL: base, Model: "m1", APIKey: canary, Retries: 2, Backoff: time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	c, err := llm.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompleteRoundTrip(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Turn{
		Content:      "reading it",
		ToolCalls:    []llmtest.Call{{ID: "c9", Name: "read_file", Arguments: `{"path":"a.txt"}`}},
		PromptTokens: 120, CompletionTokens: 7,
	})
	defer srv.Close()
	c := newClient(t, srv.BaseURL(), nil)
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "sys"},
			{Role: llm.RoleUser, Content: "task"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "list_files", Arguments: `{}`}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "a.txt"},
		},
		Tools: []llm.Tool{{Name: "read_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}},
	}
	res, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: "reading it",
			ToolCalls: []llm.ToolCall{{ID: "c9", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
		FinishReason: "tool_calls", Model: "scripted",
		Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 7},
	}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("response (-want +got):\n%s", d)
	}

	got := srv.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	if h := r.Header.Get("Authorization"); h != "Bearer "+canary {
		t.Errorf("Authorization = %q", h)
	}
	if r.Model != "m1" {
		t.Errorf("model = %q", r.Model)
	}
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if d := cmp.Diff([]string{"system", "user", "assistant", "tool"}, roles); d != "" {
		t.Errorf("roles (-want +got):\n%s", d)
	}
	if tc := r.Messages[2].ToolCalls; len(tc) != 1 || tc[0].ID != "c1" || tc[0].Function.Name != "list_files" || tc[0].Type != "function" {
		t.Errorf("assistant tool calls = %+v", tc)
	}
	if r.Messages[3].ToolCallID != "c1" || r.Messages[3].Text() != "a.txt" {
		t.Errorf("tool message = %+v", r.Messages[3])
	}
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "read_file" ||
		!strings.Contains(string(r.Tools[0].Function.Parameters), `"path"`) {
		t.Errorf("tools = %s", r.Raw)
	}
}

func TestNoToolsOffered(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Turn{Content: "summary", NoUsage: true})
	defer srv.Close()
	c := newClient(t, srv.BaseURL(), nil)
	res, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "sum up"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "summary" || res.Usage != (llm.Usage{}) {
		t.Errorf("res = %+v", res)
	}
	if strings.Contains(string(srv.Requests()[0].Body), `"tools"`) {
		t.Errorf("a request without tools still offered some: %s", srv.Requests()[0].Body)
	}
}

// The key comes from the variable api_key_env names and from nowhere
// else: the SDK's own environment variables are ignored.
func TestKeyOnlyFromConfiguredVariable(t *testing.T) {
	srv := llmtest.New(llmtest.Turn{Content: "a"}, llmtest.Turn{Content: "b"})
	defer srv.Close()
	decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("OPENAI_BASE_URL was followed: %s", r.URL)
	}))
	defer decoy.Close()
	t.Setenv("OPENAI_API_KEY", "sk-decoy-OPENAI_API_KEY-should-not-be-sent")
	t.Setenv("OPENAI_BASE_URL", decoy.URL)
	t.Setenv("OPENAI_ORG_ID", "org-decoy")
	t.Setenv("OPENAI_PROJECT_ID", "proj-decoy")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Decoy: yes")
	env := map[string]string{"MY_LLM_KEY": canary}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	c, err := llm.FromConfig(config.LLM{BaseURL: srv.BaseURL(), Model: "m", APIKeyEnv: "MY_LLM_KEY", Timeout: 5}, "", lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	// No api_key_env: no key at all, even with OPENAI_API_KEY set.
	c2, err := llm.FromConfig(config.LLM{BaseURL: srv.BaseURL(), Model: "m"}, "", lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+canary {
		t.Errorf("Authorization = %q, want the configured key", got)
	}
	if got := reqs[1].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization without api_key_env = %q, want none", got)
	}
	for _, r := range reqs {
		for k, v := range r.Header {
			s := strings.ToLower(k + ": " + strings.Join(v, ","))
			if strings.Contains(s, "decoy") {
				t.Errorf("header from the environment was sent: %s", s)
			}
		}
	}
}

func TestRetriesOnlyTransient(t *testing.T) {
	t.Parallel()
	ok := llmtest.Turn{Content: "ok"}
	st := func(code int) llmtest.Turn { return llmtest.Turn{Status: code, ErrorMessage: "nope"} }
	tests := []struct {
		name     string
		turns    []llmtest.Turn
		retries  int
		requests int
		status   int // 0: success
	}{
		{"429 then ok", []llmtest.Turn{st(429), ok}, 2, 2, 0},
		{"500 502 then ok", []llmtest.Turn{st(500), st(502), ok}, 2, 3, 0},
		{"503 forever", []llmtest.Turn{st(503), st(503), st(503), ok}, 2, 3, 503},
		{"no retries configured", []llmtest.Turn{st(500), ok}, 0, 1, 500},
		{"400 is final", []llmtest.Turn{st(400), ok}, 2, 1, 400},
		{"401 is final", []llmtest.Turn{st(401), ok}, 2, 1, 401},
		{"403 is final", []llmtest.Turn{st(403), ok}, 2, 1, 403},
		{"404 is final", []llmtest.Turn{st(404), ok}, 2, 1, 404},
		{"408 is final", []llmtest.Turn{st(408), ok}, 2, 1, 408},
		{"409 is final", []llmtest.Turn{st(409), ok}, 2, 1, 409},
		{"422 is final", []llmtest.Turn{st(422), ok}, 2, 1, 422},
		{"x-should-retry is not obeyed", []llmtest.Turn{{Status: 400, Header: map[string]string{"X-Should-Retry": "true"}}, ok}, 2, 1, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(tc.turns...)
			defer srv.Close()
			c := newClient(t, srv.BaseURL(), func(o *llm.Options) { o.Retries = tc.retries })
			_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
			if n := len(srv.Requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			var se *llm.StatusError
			switch {
			case tc.status == 0 && err != nil:
				t.Errorf("err = %v, want success", err)
			case tc.status != 0 && (!errors.As(err, &se) || se.Status != tc.status):
				t.Errorf("err = %v, want HTTP %d", err, tc.status)
			case tc.status != 0 && se.Attempts != tc.requests:
				t.Errorf("Attempts = %d, want %d", se.Attempts, tc.requests)
			}
		})
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		header   map[string]string
		min      time.Duration
		requests int
	}{
		{"seconds", map[string]string{"Retry-After": "1"}, time.Second, 2},
		{"milliseconds", map[string]string{"Retry-After-Ms": "300"}, 300 * time.Millisecond, 2},
		{"too long: no retry", map[string]string{"Retry-After": "3600"}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(llmtest.Turn{Status: 429, Header: tc.header}, llmtest.Turn{Content: "ok"})
			defer srv.Close()
			c := newClient(t, srv.BaseURL(), nil)
			start := time.Now()
			_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
			el := time.Since(start)
			if n := len(srv.Requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d (err %v)", n, tc.requests, err)
			}
			if tc.requests == 2 && (err != nil || el < tc.min) {
				t.Errorf("err %v after %v, want success after at least %v", err, el, tc.min)
			}
			if tc.requests == 1 && (err == nil || el > 5*time.Second) {
				t.Errorf("err %v after %v, want a prompt error", err, el)
			}
		})
	}
}

// A dropped connection is transient and retried.
func TestNetworkErrorRetried(t *testing.T) {
	t.Parallel()
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(llmtest.Completion(llmtest.Turn{Content: "ok"}, n))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL+"/v1", nil)
	res, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if err != nil || res.Message.Content != "ok" || n != 2 {
		t.Fatalf("res %+v err %v after %d requests", res, err, n)
	}

	// Nothing listening: retried, then a NetworkError naming the host.
	// Port 1: nothing listens there (a closed ephemeral port could be
	// taken by a parallel test's server meanwhile).
	addr := "127.0.0.1:1"
	c = newClient(t, "http://"+addr+"/v1", nil)
	_, err = c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	var ne *llm.NetworkError
	if !errors.As(err, &ne) || ne.Attempts != 3 || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want a NetworkError after 3 attempts", err)
	}
}

// Servers echo a wrong key back ("Incorrect API key provided: sk-..."):
// the key never reaches an error message.
func TestKeyScrubbedFromErrors(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(
		llmtest.Turn{Status: 401, ErrorMessage: "Incorrect API key provided: " + canary},
		llmtest.Turn{Status: 500, Body: "upstream said " + canary},
	)
	defer srv.Close()
	c := newClient(t, srv.BaseURL(), func(o *llm.Options) { o.Retries = 0 })
	for range 2 {
		_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
		if err == nil {
			t.Fatal("no error")
		}
		for _, s := range []string{err.Error(), fmtAll(err)} {
			if strings.Contains(s, canary) {
				t.Errorf("the key is in the error: %s", s)
			}
		}
	}
}

func fmtAll(err error) string {
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// A redirect would replay the key to another address: refused, not retried.
func TestRedirectRefused(t *testing.T) {
	t.Parallel()
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed (Authorization %q)", r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		http.Redirect(w, r, elsewhere.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL+"/v1", nil)
	_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if err == nil || !strings.Contains(err.Error(), "redirected") || n != 1 {
		t.Fatalf("err = %v after %d requests, want one refused redirect", err, n)
	}
}

func TestReplyTooLarge(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Turn{Content: strings.Repeat("x", 5000)}, llmtest.Turn{Content: "small"})
	defer srv.Close()
	c := newClient(t, srv.BaseURL(), func(o *llm.Options) { o.MaxBody = 1024 })
	_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if err == nil || !strings.Contains(err.Error(), "larger than 1024 bytes") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests: a reply too large is not transient", n)
	}
}

// A cancelled context ends the wait between retries at once.
func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Turn{Status: 429, Header: map[string]string{"Retry-After": "30"}})
	defer srv.Close()
	c := newClient(t, srv.BaseURL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, o := range []llm.Options{
		{BaseURL: "http://x"},
		{BaseURL: "ftp://host/v1", Model: "m"},
		{BaseURL: "http://user:pass@host/v1", Model: "m"},
		{BaseURL: "/v1", Model: "m"},
	} {
		if _, err := llm.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		} else if strings.Contains(err.Error(), "pass@") {
			t.Errorf("the error repeats the credentials: %v", err)
		}
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	p := llm.Prices{"m": {Input: 3, Output: 15}}
	got, ok := p.Cost("m", llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000})
	if !ok || got != 4.5 {
		t.Errorf("Cost = %v, %v; want 4.5", got, ok)
	}
	if _, ok := p.Cost("other", llm.Usage{PromptTokens: 1}); ok {
		t.Error("a model without a price has a cost")
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"Retry-After": "0"}, 0, true},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After": "1.5"}, 0, false},
		{map[string]string{"Retry-After": "99999999999999"}, 0, false},
		{map[string]string{"Retry-After": now.Add(10 * time.Second).Format(http.TimeFormat)}, 10 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "-5", "Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{}, 0, false},
	}
	for _, tc := range tests {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		got, ok := llm.ParseRetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRetryAfter(%v) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1e3", "Wed, 21 Oct 2015 07:28:00 GMT", "", " 5 ", "NaN", "Inf", "1e308"} {
		f.Add(s, s)
	}
	now := time.Now()
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		d, ok := llm.ParseRetryAfter(h, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, %v", ra, ms, d, ok)
		}
	})
}

// memTransport answers every request with body, in memory.
type memTransport struct {
	status int
	body   []byte
}

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: m.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(string(m.body))), Request: r}, nil
}

// Whatever the server sends, Complete returns a Response or an error,
// never panics, and every tool call it returns has an id and a name.
func FuzzCompleteReply(f *testing.F) {
	seeds := []string{
		`{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{}"}}]}}],"usage":{"prompt_tokens":-5}}`,
		`{"choices":[{"message":{"tool_calls":[{"type":"custom","custom":{"name":"x","input":"y"}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"n"}}]}}]}`,
		`{"choices":[]}`, `null`, `[]`, `{"choices":[null]}`, `{"error":{"message":"x"}}`,
	}
	for _, s := range seeds {
		f.Add(200, []byte(s))
	}
	f.Add(500, []byte(`{"error":{"message":"boom"}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 200 || status > 599 {
			status = 200
		}
		c, err := llm.New(llm.Options{BaseURL: "http://model.test/v1", Model: "m", Transport: memTransport{status, body}, Backoff: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
		if err != nil {
			return
		}
		if res.Usage.PromptTokens < 0 || res.Usage.CompletionTokens < 0 {
			t.Fatalf("negative usage %+v", res.Usage)
		}
		for _, tc := range res.Message.ToolCalls {
			if tc.ID == "" {
				t.Fatalf("tool call without id: %+v", tc)
			}
		}
	})
}

// The security core never imports the LLM layer (DESIGN.md).
func TestSecurityCoreDoesNotImportLLM(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	core := []string{"engine", "tools", "policy", "workspace", "shellpolicy", "sandbox", "approval", "command", "audit", "config"}
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for _, p := range core {
		args = append(args, "github.com/wardenhq/warden/internal/"+p)
	}
	out, err := exec.Command(gobin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "github.com/openai/") || strings.HasPrefix(line, "github.com/wardenhq/warden/internal/llm") ||
			strings.HasPrefix(line, "github.com/wardenhq/warden/internal/agent") {
			t.Errorf("the security core depends on %s", line)
		}
	}
}
