package mcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/config"
)

const (
	aliceToken = "alice-0123456789abcdef0123"
	bobToken   = "bob-0123456789abcdef012345"
)

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

func newHTTP(t *testing.T) (url string, failures *[]int) {
	t.Helper()
	f := newFixture(t, fixtureOpts{mode: config.ModeYolo})
	srv := NewServer(f.eng, &ServerOptions{ForSession: func(string) (Engine, error) { return f.eng, nil }})
	var mu sync.Mutex
	var fails []int
	h, err := NewHTTPHandler(HTTPOptions{
		Server: func(ws string) *sdk.Server {
			if ws == "proj" {
				return srv
			}
			return nil
		},
		Tokens: map[string]string{"alice": aliceToken, "bob": bobToken},
		OnAuthFailure: func(_ context.Context, status int, _ string) {
			mu.Lock()
			fails = append(fails, status)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp/", h)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs.URL, &fails
}

func httpClient(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c"}, nil).Connect(t.Context(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestHTTPToken(t *testing.T) {
	t.Parallel()
	url, fails := newHTTP(t)
	cs, err := httpClient(t, url+"/mcp/proj", aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs, "list_files", `{}`); res.IsError {
		t.Fatalf("list_files: %q", text(res))
	}
	if !strings.HasPrefix(cs.ID(), "mcp-") {
		t.Errorf("session id %q", cs.ID())
	}
	for _, tc := range []struct{ name, path, token string }{
		{"no token", "/mcp/proj", ""},
		{"wrong token", "/mcp/proj", "alice-0123456789abcdef0124"},
		{"token prefix", "/mcp/proj", aliceToken[:len(aliceToken)-1]},
		{"unknown workspace", "/mcp/other", aliceToken},
		{"bad workspace", "/mcp/..", aliceToken},
	} {
		if _, err := httpClient(t, url+tc.path, tc.token); err == nil {
			t.Errorf("%s: connected", tc.name)
		}
	}
	if len(*fails) < 3 {
		t.Errorf("auth failures reported: %v", *fails)
	}

	// Raw requests: the token is required on every request, and a session
	// belongs to the client that opened it.
	post := func(token, session string) int {
		req, _ := http.NewRequest("POST", url+"/mcp/proj", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", session)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(aliceToken, cs.ID()); code != http.StatusOK {
		t.Errorf("alice on her session: %d", code)
	}
	if code := post("", cs.ID()); code != http.StatusUnauthorized {
		t.Errorf("no token on a live session: %d", code)
	}
	if code := post(bobToken, cs.ID()); code != http.StatusForbidden {
		t.Errorf("bob on alice's session: %d", code)
	}
}

func TestHTTPOptions(t *testing.T) {
	t.Parallel()
	srv := func(string) *sdk.Server { return nil }
	if _, err := NewHTTPHandler(HTTPOptions{Server: srv, Tokens: map[string]string{"a": "short"}}); err == nil {
		t.Error("short token accepted")
	}
	if _, err := NewHTTPHandler(HTTPOptions{Tokens: map[string]string{}}); err == nil {
		t.Error("no Server accepted")
	}
	got, err := TokensFromEnv([]string{"PATH=/bin", "WARDEN_MCP_TOKEN_CI=" + aliceToken, "WARDEN_MCP_TOKEN_Bob=" + bobToken})
	if err != nil || len(got) != 2 || got["ci"] != aliceToken || got["bob"] != bobToken {
		t.Fatalf("%v %v", got, err)
	}
	for _, env := range [][]string{{"WARDEN_MCP_TOKEN_X=short"}, {"WARDEN_MCP_TOKEN_=" + aliceToken}} {
		if _, err := TokensFromEnv(env); err == nil || !strings.Contains(err.Error(), "WARDEN_MCP_TOKEN_") {
			t.Errorf("%v: err %v", env, err)
		}
	}
}

func TestWorkspaceFromPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"/mcp/proj": "proj", "/mcp/proj/": "proj", "/mcp/a.b-c_d": "a.b-c_d",
		"/mcp/": "", "/mcp/..": "", "/mcp/.x": "", "/mcp/a/b": "", "/mcp/a%2Fb": "", "/x/proj": "", "/mcp/proj//": "",
	} {
		got, ok := WorkspaceFromPath(p)
		if got != want || ok != (want != "") {
			t.Errorf("%q: %q %v, want %q", p, got, ok, want)
		}
	}
}

func FuzzWorkspaceFromPath(f *testing.F) {
	for _, s := range []string{"/mcp/proj", "/mcp/../x", "/mcp/a/", "/mcp/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ws, ok := WorkspaceFromPath(p)
		if !ok {
			return
		}
		if ws == "" || ws == "." || ws == ".." || strings.ContainsAny(ws, "/\\\x00%") || strings.HasPrefix(ws, ".") {
			t.Fatalf("%q names workspace %q", p, ws)
		}
	})
}

// A refused client gets warden's message and a WWW-Authenticate naming the
// error and no authorization server, so it shows the message instead of
// starting an OAuth flow.
func TestHTTPUnauthorizedSaysWhy(t *testing.T) {
	t.Parallel()
	url, _ := newHTTP(t)
	for _, c := range []struct{ auth, errCode, msg string }{
		{"", `error="invalid_request"`, "no bearer token"},
		{"Bearer wrong-token-0123456789abcdef", `error="invalid_token"`, "not that of any MCP client"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/mcp/proj", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wa := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != 401 || !strings.HasPrefix(wa, `Bearer realm="warden"`) || !strings.Contains(wa, c.errCode) ||
			strings.Contains(wa, "resource_metadata") || !strings.HasPrefix(string(body), "warden: ") || !strings.Contains(string(body), c.msg) || !strings.Contains(string(body), TokenEnvPrefix) {
			t.Errorf("%q: %d %q %q", c.auth, resp.StatusCode, wa, body)
		}
	}
}
