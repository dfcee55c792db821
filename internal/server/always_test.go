package server

import (
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/rulefile"
	"github.com/wardenhq/warden/internal/store"
)

// setupAlways is setup with a broker that writes lasting rules into path.
func setupAlways(t *testing.T, path string) *fixture {
	t.Helper()
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.New(t.Context(), approval.Options{Store: st, Supervisors: []string{"alice", "bob"}, Remote: true, Rules: rulefile.User{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Broker: b, Tokens: map[string]string{aliceTok: "alice", bobTok: "bob"}, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close(); st.Close() })
	return &fixture{st, b, srv}
}

// "always" through the API: the proposal is shown first, the approval
// writes it (or an edit that still covers the call) into the user config,
// and what does not fit is refused with the request left pending.
func TestAPIAlways(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	f := setupAlways(t, path)
	alice := "Bearer " + aliceTok
	id := f.newRequest(t)

	code, out := f.do(t, "GET", "/api/approvals/"+id+"/always", alice, "")
	if code != 200 || out["text"] != "allow command make (exactly), in /w" {
		t.Fatalf("proposal: %d %v", code, out)
	}
	if code, _ := f.do(t, "GET", "/api/approvals/"+id+"/always", "", ""); code != 401 {
		t.Fatalf("proposal without a token: %d", code)
	}
	for _, tc := range []struct{ path, body, want string }{
		{"approve", `{"always":true,"grant_minutes":5}`, "exclude each other"},
		{"approve", `{"rules":[{"command":["make"],"decision":"allow","workspace":"/w"}]}`, "rules need always"},
		{"deny", `{"reason":"no","always":true}`, "a denial writes no rule"},
		{"approve", `{"always":true,"rules":[{"command":["make","install"],"decision":"allow","workspace":"/w"}]}`, "do not allow the call"},
		{"approve", `{"always":true,"rules":[{"command":["make"],"decision":"allow","workspace":"/"}]}`, "request's workspace"},
		{"approve", `{"always":true,"rules":[{"command":["make"],"decision":"allow","workspace":"/w","bogus":1}]}`, "unknown field"},
	} {
		code, out := f.do(t, "POST", "/api/approvals/"+id+"/"+tc.path, alice, tc.body)
		if code != 400 || !strings.Contains(out["error"].(string), tc.want) {
			t.Errorf("%s %s: %d %v, want 400 %q", tc.path, tc.body, code, out, tc.want)
		}
	}
	if a, _ := f.st.Get(t.Context(), id); a.State != store.Pending {
		t.Fatalf("a refused always decided the request: %s", a.State)
	}
	code, out = f.do(t, "POST", "/api/approvals/"+id+"/approve", alice, `{"always":true,"rules":[{"command":["make"],"decision":"allow","workspace":"/w"}]}`)
	if code != 200 || out["state"] != "APPROVED" || out["decided_by"] != "alice" {
		t.Fatalf("approve always: %d %v", code, out)
	}
	rs, err := config.FileRules(path)
	if err != nil || len(rs) != 1 || rs[0].Exact || rs[0].RequestID != id || rs[0].Workspace != "/w" {
		t.Fatalf("written %+v %v", rs, err)
	}
	if code, _ := f.do(t, "POST", "/api/approvals/"+id+"/approve", "Bearer "+bobTok, `{"always":true}`); code != 409 {
		t.Fatalf("late always: %d", code)
	}
	if rs, _ := config.FileRules(path); len(rs) != 1 {
		t.Fatalf("a late always wrote: %+v", rs)
	}

	// A server that cannot write rules says so.
	plain := setup(t)
	id = plain.newRequest(t)
	if code, out := plain.do(t, "POST", "/api/approvals/"+id+"/approve", alice, `{"always":true}`); code != 501 {
		t.Fatalf("no writer: %d %v", code, out)
	}
}

// The page shows the rule "always" would write and lets the person shorten
// its words before approving; the form needs the CSRF token like the rest.
func TestWebAlways(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	f := setupAlways(t, path)
	alice := newBrowser(t, f)
	csrf := alice.signIn(aliceTok)
	id := f.newRequest(t)
	resp, body := alice.do("GET", "/requests/"+id, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "allow command make (exactly), in /w") || !strings.Contains(body, `action="/requests/`+id+`/always"`) {
		t.Fatalf("card: %d\n%s", resp.StatusCode, body)
	}
	if resp, _ := alice.do("POST", "/requests/"+id+"/always", url.Values{"words": {"make"}}, nil); resp.StatusCode != 403 {
		t.Fatalf("always without CSRF: %d", resp.StatusCode)
	}
	// An edit that does not cover the call is refused, nothing written.
	if resp, body := alice.do("POST", "/requests/"+id+"/always", url.Values{"csrf": {csrf}, "words": {"make install"}, "exact": {"1"}}, map[string]string{csrfHeader: csrf}); resp.StatusCode != 400 || !strings.Contains(body, "do not allow the call") {
		t.Fatalf("bad edit: %d %s", resp.StatusCode, body)
	}
	resp, body = alice.do("POST", "/requests/"+id+"/always", url.Values{"csrf": {csrf}, "words": {"make"}}, map[string]string{csrfHeader: csrf})
	if resp.StatusCode != 200 || !strings.Contains(body, "allow command make …") {
		t.Fatalf("always: %d %s", resp.StatusCode, body)
	}
	rs, err := config.FileRules(path)
	if err != nil || len(rs) != 1 || rs[0].Exact || rs[0].Command[0] != "make" {
		t.Fatalf("written %+v %v", rs, err)
	}
}
