package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	aliceTok = "alice-token-0123456789abcdef"
	bobTok   = "bob-token-0123456789abcdef00"
)

type fixture struct {
	st  *store.SQLite
	b   *approval.Broker
	srv *httptest.Server
}

func setup(t *testing.T) *fixture { return setupClock(t, nil) }

// setupClock is setup with the store judging expiry by now (nil: time.Now).
func setupClock(t *testing.T, now func() time.Time) *fixture {
	t.Helper()
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), &store.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	b, srv := serveOn(t, st, 10*time.Millisecond)
	return &fixture{st, b, srv}
}

// serveOn starts a server for alice and bob on st, polling every poll;
// the test's end closes it and st.
func serveOn(t *testing.T, st *store.SQLite, poll time.Duration) (*approval.Broker, *httptest.Server) {
	t.Helper()
	b, err := approval.New(t.Context(), approval.Options{Store: st, Supervisors: []string{"alice", "bob"}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Broker: b, Tokens: map[string]string{aliceTok: "alice", bobTok: "bob"}, Poll: poll})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		srv.Close()
		st.Close()
	})
	return b, srv
}

// newRequest stores a pending request as another process would.
func (f *fixture) newRequest(t *testing.T) string { return f.newRequestIn(t, "") }

// newRequestIn is newRequest in a session.
func (f *fixture) newRequestIn(t *testing.T, session string) string {
	t.Helper()
	id := approval.NewID()
	now := time.Now()
	args := json.RawMessage(`{"command":"make"}`)
	err := f.st.Create(t.Context(), &store.Approval{ID: id, Tool: "run_command", Args: args, ArgsHash: approval.BindingHash("run_command", args, "/w", session),
		Workspace: "/w", Session: session, State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: store.CurrentOwner()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *fixture) do(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestAuth(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.newRequest(t)
	cases := []struct {
		name, method, path, auth, body string
		code                           int
	}{
		{"healthz is open", "GET", "/healthz", "", "", 200},
		{"no token", "GET", "/api/approvals", "", "", 401},
		{"no token, decide", "POST", "/api/approvals/" + id + "/approve", "", "", 401},
		{"wrong token", "POST", "/api/approvals/" + id + "/approve", "Bearer nope-0123456789abcdef0000", "", 401},
		{"token prefix", "POST", "/api/approvals/" + id + "/approve", "Bearer " + aliceTok[:10], "", 401},
		{"token with suffix", "POST", "/api/approvals/" + id + "/approve", "Bearer " + aliceTok + "x", "", 401},
		{"basic auth", "GET", "/api/approvals", "Basic " + aliceTok, "", 401},
		{"bare token", "GET", "/api/approvals", aliceTok, "", 401},
		{"unknown api path needs a token too", "GET", "/api/nope", "", "", 401},
		{"body names decided_by", "POST", "/api/approvals/" + id + "/approve", "Bearer " + aliceTok, `{"reason":"ok","decided_by":"bob"}`, 400},
		{"body with two objects", "POST", "/api/approvals/" + id + "/approve", "Bearer " + aliceTok, `{"reason":"a"}{"reason":"b"}`, 400},
		{"deny without reason", "POST", "/api/approvals/" + id + "/deny", "Bearer " + aliceTok, `{}`, 400},
		{"bad id", "GET", "/api/approvals/../../etc", "Bearer " + aliceTok, "", 404},
		{"unknown id", "GET", "/api/approvals/" + strings.Repeat("0", 32), "Bearer " + aliceTok, "", 404},
		{"bad status", "GET", "/api/approvals?status=nope", "Bearer " + aliceTok, "", 400},
		{"still pending", "GET", "/api/approvals/" + id, "Bearer " + aliceTok, "", 200},
	}
	for _, c := range cases {
		code, body := f.do(t, c.method, c.path, c.auth, c.body)
		if code != c.code {
			t.Errorf("%s: %d %v, want %d", c.name, code, body, c.code)
		}
		if c.name == "still pending" && body["state"] != "PENDING" {
			t.Errorf("a refused call changed the request: %v", body)
		}
	}
	// Another supervisor's token decides as that supervisor, whatever the body says.
	code, body := f.do(t, "POST", "/api/approvals/"+id+"/deny", "Bearer "+bobTok, `{"reason":"I am alice"}`)
	if code != 200 || body["decided_by"] != "bob" || body["state"] != "DENIED" {
		t.Fatalf("bob's denial: %d %v", code, body)
	}
	code, body = f.do(t, "POST", "/api/approvals/"+id+"/approve", "Bearer "+aliceTok, "")
	if code != 409 || !strings.Contains(body["error"].(string), "already DENIED (by bob)") {
		t.Errorf("second decision: %d %v", code, body)
	}
	rows, _ := f.st.Audit(t.Context(), store.AuditFilter{Event: "auth_failure"})
	if len(rows) != 8 {
		t.Errorf("%d auth failures audited, want 8", len(rows))
	}
	for _, r := range rows {
		if strings.Contains(r.Record.Error, aliceTok[:10]) {
			t.Errorf("a token reached the audit trail: %s", r.Record.Error)
		}
	}
}

func TestListAndShow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a, b := f.newRequest(t), f.newRequest(t)
	f.do(t, "POST", "/api/approvals/"+a+"/approve", "Bearer "+aliceTok, `{"reason":"fine"}`)
	code, body := f.do(t, "GET", "/api/approvals?status=pending", "Bearer "+aliceTok, "")
	list := body["approvals"].([]any)
	if code != 200 || len(list) != 1 || list[0].(map[string]any)["request_id"] != b {
		t.Fatalf("pending list: %d %v", code, body)
	}
	code, body = f.do(t, "GET", "/api/approvals?status=APPROVED&limit=5", "Bearer "+bobTok, "")
	if list := body["approvals"].([]any); code != 200 || len(list) != 1 || list[0].(map[string]any)["reason"] != "fine" {
		t.Fatalf("approved list: %d %v", code, body)
	}
}

func TestStream(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/approvals/stream", nil)
	req.Header.Set("Authorization", "Bearer "+aliceTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan Event, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev Event
				json.Unmarshal([]byte(data), &ev)
				events <- ev
			}
		}
		close(events)
	}()
	id := f.newRequest(t)
	next := func() Event {
		select {
		case ev := <-events:
			return ev
		case <-ctx.Done():
			t.Fatal("no event")
			return Event{}
		}
	}
	if ev := next(); ev.Type != "approval.requested" || ev.Approval.ID != id {
		t.Fatalf("first event %+v", ev)
	}
	f.do(t, "POST", "/api/approvals/"+id+"/approve", "Bearer "+bobTok, "")
	if ev := next(); ev.Type != "approval.decided" || ev.Approval.DecidedBy != "bob" {
		t.Fatalf("second event %+v", ev)
	}
	cancel()
	for range events {
	}
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr          string
		tls, insecure bool
		ok            bool
	}{
		{"127.0.0.1:8080", false, false, true},
		{"[::1]:8080", false, false, true},
		{"localhost:0", false, false, true},
		{"0.0.0.0:8080", false, false, false},
		{":8080", false, false, false},
		{"10.0.0.5:8080", false, false, false},
		{"10.0.0.5:8080", true, false, true},
		{"0.0.0.0:8080", false, true, true},
		{"127.0.0.1", false, false, false},
	}
	for _, c := range cases {
		if err := CheckAddr(c.addr, c.tls, c.insecure); (err == nil) != c.ok {
			t.Errorf("CheckAddr(%q, tls=%v, insecure=%v) = %v", c.addr, c.tls, c.insecure, err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	st, _ := store.OpenSQLite(":memory:", nil)
	defer st.Close()
	b, _ := approval.New(t.Context(), approval.Options{Store: st, Supervisors: []string{"alice"}})
	for name, toks := range map[string]map[string]string{
		"no tokens":      nil,
		"short token":    {"short": "alice"},
		"not supervisor": {aliceTok: "mallory"},
	} {
		if s, err := New(Options{Broker: b, Tokens: toks}); err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecisionBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"reason":"x"}`, `{"reason":"x","decided_by":"bob"}`, `{"reason":1}`, `{"reason":"a"} x`, `{"Reason":"x"}`,
		`{"grant_minutes":15}`, `{"grant_minutes":-1}`, `{"grant_minutes":"15"}`, `{"grant_minutes":1e3}`, `{"reason":"x","grant_minutes":99999999999999999999}`, strings.Repeat(" ", MaxBody+1),
		`{"always":true}`, `{"always":true,"rules":[{"command":["make"],"decision":"allow","workspace":"/w"}]}`, `{"rules":[{"x":1}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := DecodeDecision(strings.NewReader(s))
		if err != nil {
			if d.Reason != "" || d.GrantMinutes != 0 || d.Always || d.Rules != nil || d.GrantScope != "" {
				t.Fatalf("error with a value: %+v", d)
			}
			return
		}
		if len(s) > MaxBody {
			t.Fatalf("accepted %d bytes", len(s))
		}
		// Whatever was accepted holds no field but reason,
		// grant_minutes, always and rules, and never a negative grant.
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) == nil {
			for k := range m {
				if !strings.EqualFold(k, "reason") && !strings.EqualFold(k, "grant_minutes") && !strings.EqualFold(k, "always") && !strings.EqualFold(k, "rules") && !strings.EqualFold(k, "grant_scope") {
					t.Fatalf("accepted field %q", k)
				}
			}
		}
		if d.GrantMinutes < 0 {
			t.Fatalf("accepted grant_minutes %d", d.GrantMinutes)
		}
	})
}

// settableClock is a store clock tests move forward.
type settableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settableClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *settableClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func grantOf(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	g, ok := body["grant"].(map[string]any)
	if !ok {
		t.Fatalf("no grant in %v", body)
	}
	return g
}

// Each row tries to create or end a grant in a way the API must refuse.
func TestGrantsAPI(t *testing.T) {
	t.Parallel()
	f := setup(t)
	alice, bob := "Bearer "+aliceTok, "Bearer "+bobTok
	id := f.newRequestIn(t, "s1")

	code, body := f.do(t, "POST", "/api/approvals/"+id+"/approve", alice, `{"reason":"fine","grant_minutes":15}`)
	if code != 200 || body["state"] != "APPROVED" || body["decided_by"] != "alice" || body["request_id"] != id {
		t.Fatalf("approve with a grant: %d %v", code, body)
	}
	g := grantOf(t, body)
	gid, _ := g["id"].(string)
	created, _ := time.Parse(time.RFC3339Nano, g["created_at"].(string))
	expires, _ := time.Parse(time.RFC3339Nano, g["expires_at"].(string))
	if g["created_by"] != "alice" || g["session"] != "s1" || g["workspace"] != "/w" || g["tool"] != "run_command" ||
		g["approval_id"] != id || expires.Sub(created) != 15*time.Minute || !idPattern.MatchString(gid) {
		t.Fatalf("grant %v", g)
	}

	other := f.newRequestIn(t, "s2")
	noSession := f.newRequest(t)
	refusals := []struct {
		name, method, path, auth, body string
		code                           int
	}{
		{"grant on a denial", "POST", "/api/approvals/" + other + "/deny", alice, `{"reason":"no","grant_minutes":5}`, 400},
		{"negative minutes", "POST", "/api/approvals/" + other + "/approve", alice, `{"grant_minutes":-5}`, 400},
		{"minutes as a string", "POST", "/api/approvals/" + other + "/approve", alice, `{"grant_minutes":"5"}`, 400},
		{"minutes overflow", "POST", "/api/approvals/" + other + "/approve", alice, `{"grant_minutes":99999999999999999999}`, 400},
		{"grant_by in the body", "POST", "/api/approvals/" + other + "/approve", alice, `{"grant_minutes":5,"created_by":"bob"}`, 400},
		{"no token", "POST", "/api/approvals/" + other + "/approve", "", `{"grant_minutes":5}`, 401},
		{"request without a session", "POST", "/api/approvals/" + noSession + "/approve", alice, `{"grant_minutes":5}`, 409},
		{"request already decided", "POST", "/api/approvals/" + id + "/approve", bob, `{"grant_minutes":5}`, 409},
		{"unknown request", "POST", "/api/approvals/" + strings.Repeat("0", 32) + "/approve", alice, `{"grant_minutes":5}`, 404},
		{"list without a token", "GET", "/api/grants", "", "", 401},
		{"list with a bad flag", "GET", "/api/grants?all=yes", alice, "", 400},
		{"revoke without a token", "POST", "/api/grants/" + gid + "/revoke", "", "", 401},
		{"revoke with a wrong token", "POST", "/api/grants/" + gid + "/revoke", "Bearer nope-0123456789abcdef0000", "", 401},
		{"revoke an unknown grant", "POST", "/api/grants/" + strings.Repeat("0", 32) + "/revoke", alice, "", 404},
		{"revoke a bad id", "POST", "/api/grants/..%2f..%2fx/revoke", alice, "", 404},
		{"revoke with GET", "GET", "/api/grants/" + gid + "/revoke", alice, "", 404},
	}
	for _, c := range refusals {
		if code, body := f.do(t, c.method, c.path, c.auth, c.body); code != c.code {
			t.Errorf("%s: %d %v, want %d", c.name, code, body, c.code)
		}
	}
	for _, r := range []string{other, noSession} {
		if a, _ := f.st.Get(t.Context(), r); a.State != store.Pending {
			t.Errorf("a refused grant decided request %s: %s", r, a.State)
		}
	}

	// Above grant_max_minutes (default 60) the grant is capped.
	code, body = f.do(t, "POST", "/api/approvals/"+other+"/approve", bob, `{"grant_minutes":100000}`)
	if code != 200 {
		t.Fatalf("long grant: %d %v", code, body)
	}
	g2 := grantOf(t, body)
	created, _ = time.Parse(time.RFC3339Nano, g2["created_at"].(string))
	expires, _ = time.Parse(time.RFC3339Nano, g2["expires_at"].(string))
	if expires.Sub(created) != approval.DefaultGrantMax || g2["created_by"] != "bob" {
		t.Errorf("grant of 100000 minutes: %v", g2)
	}

	code, body = f.do(t, "GET", "/api/grants", bob, "")
	if l, _ := body["grants"].([]any); code != 200 || len(l) != 2 {
		t.Fatalf("grants: %d %v", code, body)
	}
	code, body = f.do(t, "POST", "/api/grants/"+gid+"/revoke", bob, "")
	if code != 200 || body["revoked_by"] != "bob" || body["id"] != gid {
		t.Fatalf("revoke: %d %v", code, body)
	}
	code, body = f.do(t, "POST", "/api/grants/"+gid+"/revoke", alice, "")
	if code != 409 || !strings.Contains(body["error"].(string), "already revoked (by bob)") {
		t.Errorf("second revoke: %d %v", code, body)
	}
	code, body = f.do(t, "GET", "/api/grants", alice, "")
	if l, _ := body["grants"].([]any); code != 200 || len(l) != 1 || l[0].(map[string]any)["id"] == gid {
		t.Errorf("active grants after revoke: %d %v", code, body)
	}
	code, body = f.do(t, "GET", "/api/grants?all=1", alice, "")
	if l, _ := body["grants"].([]any); code != 200 || len(l) != 2 {
		t.Errorf("all grants: %d %v", code, body)
	}
	if _, _, err := f.st.VerifyAudit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// The stream tells about grants as they are created, revoked and expire.
func TestStreamGrants(t *testing.T) {
	t.Parallel()
	clk := &settableClock{t: time.Now()}
	f := setupClock(t, clk.now)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/approvals/stream", nil)
	req.Header.Set("Authorization", "Bearer "+aliceTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan Event, 20)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev Event
				json.Unmarshal([]byte(data), &ev)
				events <- ev
			}
		}
		close(events)
	}()
	// nextGrant skips approval events.
	nextGrant := func() Event {
		for {
			select {
			case ev := <-events:
				if ev.Grant != nil {
					return ev
				}
			case <-ctx.Done():
				t.Fatal("no grant event")
				return Event{}
			}
		}
	}
	a, b := f.newRequestIn(t, "s1"), f.newRequestIn(t, "s2")
	f.do(t, "POST", "/api/approvals/"+a+"/approve", "Bearer "+aliceTok, `{"grant_minutes":5}`)
	ev := nextGrant()
	if ev.Type != "grant.created" || ev.Grant.ApprovalID != a || ev.Grant.CreatedBy != "alice" || ev.Approval != nil {
		t.Fatalf("event %+v", ev)
	}
	ga := ev.Grant.ID
	f.do(t, "POST", "/api/approvals/"+b+"/approve", "Bearer "+aliceTok, `{"grant_minutes":10}`)
	gb := nextGrant().Grant.ID
	f.do(t, "POST", "/api/grants/"+ga+"/revoke", "Bearer "+bobTok, "")
	if ev := nextGrant(); ev.Type != "grant.revoked" || ev.Grant.ID != ga || ev.Grant.RevokedBy != "bob" {
		t.Fatalf("event %+v", ev)
	}
	clk.add(11 * time.Minute)
	if ev := nextGrant(); ev.Type != "grant.expired" || ev.Grant.ID != gb {
		t.Fatalf("event %+v", ev)
	}
	rows, _ := f.st.Audit(t.Context(), store.AuditFilter{Event: "grant_expired"})
	if len(rows) != 1 {
		t.Errorf("%d expiry rows, want 1 (a revoked grant does not expire)", len(rows))
	}
	cancel()
	for range events {
	}
}

// The API takes a unique id prefix (at least 6 characters) wherever it
// takes an id; an ambiguous one is a 400 naming the matches, and decides
// nothing.
func TestIDPrefix(t *testing.T) {
	t.Parallel()
	f := setup(t)
	now := time.Now()
	for _, id := range []string{"abcdef00000000000000000000000001", "abcdef00000000000000000000000002", "12345678000000000000000000000003"} {
		args := json.RawMessage(`{"command":"make"}`)
		if err := f.st.Create(t.Context(), &store.Approval{ID: id, Tool: "run_command", Args: args, ArgsHash: approval.BindingHash("run_command", args, "/w", id),
			Workspace: "/w", Session: id, State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: store.CurrentOwner()}, nil); err != nil {
			t.Fatal(err)
		}
	}
	auth := "Bearer " + aliceTok
	if code, body := f.do(t, "GET", "/api/approvals/12345678", auth, ""); code != 200 || body["request_id"] != "12345678000000000000000000000003" {
		t.Errorf("show by prefix: %d %v", code, body)
	}
	code, body := f.do(t, "POST", "/api/approvals/abcdef/approve", auth, `{}`)
	if msg, _ := body["error"].(string); code != 400 || !strings.Contains(msg, "ambiguous") || !strings.Contains(msg, "abcdef00000000000000000000000002") {
		t.Errorf("ambiguous approve: %d %v", code, body)
	}
	for _, p := range []string{"abcde", "ABCDEF00", "999999", "abcdef0000000000000000000000000000"} {
		if code, _ := f.do(t, "GET", "/api/approvals/"+p, auth, ""); code != 404 {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}
	if code, body := f.do(t, "POST", "/api/approvals/123456/deny", auth, `{"reason":"no"}`); code != 200 || body["state"] != "DENIED" || body["request_id"] != "12345678000000000000000000000003" {
		t.Errorf("deny by prefix: %d %v", code, body)
	}
	for _, id := range []string{"abcdef00000000000000000000000001", "abcdef00000000000000000000000002"} {
		if a, err := f.st.Get(t.Context(), id); err != nil || a.State != store.Pending {
			t.Errorf("%s: %v %v, want still PENDING", id, a, err)
		}
	}
}
