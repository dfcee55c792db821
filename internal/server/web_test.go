package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// agent is a workspace and an engine whose supervised calls go to the
// fixture's broker: the real path a request takes.
type agent struct {
	dir string
	eng *engine.Engine
}

func newAgent(t testing.TB, b approval.Approver, session string) *agent {
	t.Helper()
	return newAgentIn(t, b, session, t.TempDir())
}

// newAgentIn is newAgent with the workspace at dir.
func newAgentIn(t testing.TB, b approval.Approver, session, dir string) *agent {
	t.Helper()
	cfg := config.Default()
	root, err := workspace.Open(dir, &workspace.Options{Mask: cfg.Security.Mask, Protected: cfg.Security.Protected})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	env := &tools.Env{Root: root, FS: root, Runner: &command.Local{Root: root.Dir()}, Config: cfg, Session: session, Agent: "build"}
	eng, err := engine.New(engine.Options{Registry: tools.Builtin(cfg), Env: env, Approver: b})
	if err != nil {
		t.Fatal(err)
	}
	return &agent{dir: dir, eng: eng}
}

// call runs a tool call in the background; the result arrives on the channel.
func (a *agent) call(t testing.TB, tool string, args any) <-chan tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan tools.Result, 1)
	go func() { ch <- a.eng.Call(t.Context(), tool, raw) }()
	return ch
}

// waitPending waits until n requests are pending and returns them, oldest first.
func (f *fixture) waitPending(t testing.TB, n int) []*store.Approval {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, err := f.st.List(t.Context(), store.Filter{State: store.Pending})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) >= n {
			for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
				list[i], list[j] = list[j], list[i]
			}
			return list
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d pending requests after 10 s", n)
	return nil
}

// browser is an HTTP client with a cookie jar, as a browser would be.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, f *fixture) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: f.srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) do(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequestWithContext(b.t.Context(), method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// hiddenCSRF is the sign-in form's own double-submit token.
var hiddenCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

var (
	handoffCSRF = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)
	continueRe  = regexp.MustCompile(`<a id="continue" href="([^"]+)">`)
)

// signedIn reads the answer to a successful sign-in POST: the session's
// CSRF token (handed out there only) and where the page goes next.
func signedIn(t testing.TB, resp *http.Response, page string) (csrf, next string) {
	t.Helper()
	m, n := handoffCSRF.FindStringSubmatch(page), continueRe.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil || n == nil {
		t.Fatalf("sign-in: %d, want 200 with the CSRF token and a link on:\n%s", resp.StatusCode, page)
	}
	return m[1], n[1]
}

// signIn signs in with token and returns the session's CSRF token, taken
// from the answer to the sign-in POST as the page's script takes it.
func (b *browser) signIn(token string) string {
	b.t.Helper()
	_, page := b.do("GET", "/signin", nil, nil)
	m := hiddenCSRF.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no form token on the sign-in page:\n%s", page)
	}
	resp, page := b.do("POST", "/signin", url.Values{"csrf": {m[1]}, "token": {token}}, nil)
	csrf, next := signedIn(b.t, resp, page)
	if next != "/" {
		b.t.Fatalf("sign-in goes on to %q, want /", next)
	}
	return csrf
}

func TestWebHeadersAndNoInlineScript(t *testing.T) {
	t.Parallel()
	f := setup(t)
	b := newBrowser(t, f)
	b.signIn(aliceTok)
	f.newRequest(t)
	for _, path := range []string{"/signin", "/", "/history", "/static/app.js", "/static/style.css"} {
		resp, body := b.do("GET", path, nil, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		got := map[string]string{}
		for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options"} {
			got[h] = resp.Header.Get(h)
		}
		want := map[string]string{"Content-Security-Policy": ContentSecurityPolicy, "X-Content-Type-Options": "nosniff",
			"Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s headers (-want +got):\n%s", path, d)
		}
		if strings.HasSuffix(path, ".js") || strings.HasSuffix(path, ".css") {
			continue
		}
		for _, tag := range regexp.MustCompile(`(?i)<script[^>]*>`).FindAllString(body, -1) {
			if !strings.Contains(tag, `src="/static/`) {
				t.Errorf("%s has a script that is not a /static file: %s", path, tag)
			}
		}
		for _, bad := range []*regexp.Regexp{
			regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]`), // a script with inline content
			regexp.MustCompile(`(?i)\son[a-z]+\s*=`),                // an inline event handler
			regexp.MustCompile(`(?i)\sstyle\s*=`),                   // an inline style
			regexp.MustCompile(`(?i)javascript:`),
		} {
			if m := bad.FindString(body); m != "" {
				t.Errorf("%s has inline code %q", path, m)
			}
		}
	}
	if resp, body := b.do("GET", "/static/", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/static/ lists its files: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{"script-src 'self'", "default-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, want) {
			t.Errorf("CSP lacks %q", want)
		}
	}
}

func TestWebSignIn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	b := newBrowser(t, f)
	// Not signed in: pages redirect, the page's data answers 401.
	resp, _ := b.do("GET", "/", nil, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/signin") {
		t.Fatalf("queue without a session: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, p := range []string{"/events", "/cards/" + strings.Repeat("a", 32), "/grants"} {
		if resp, _ := b.do("GET", p, nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a session: %d", p, resp.StatusCode)
		}
	}
	_, page := b.do("GET", "/signin?next=/history", nil, nil)
	tok := hiddenCSRF.FindStringSubmatch(page)[1]
	cases := []struct {
		name, csrf, token string // csrf: "", "ok" or "wrong"
		hdr               map[string]string
		code              int
	}{
		{"no form token", "", aliceTok, nil, 403},
		{"wrong form token", "wrong", aliceTok, nil, 403},
		{"cross-site", "ok", aliceTok, map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site fetch metadata", "ok", aliceTok, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"unknown token", "ok", "mallory-0123456789abcdef", nil, 401},
		{"token prefix", "ok", aliceTok[:16], nil, 401},
	}
	for _, c := range cases {
		form := url.Values{"token": {c.token}}
		switch c.csrf {
		case "ok":
			form.Set("csrf", tok)
		case "wrong":
			form.Set("csrf", tok[:42]+"x")
		}
		// Each refused sign-in renders the form again with a fresh token.
		resp, page := b.do("POST", "/signin", form, c.hdr)
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.code)
		}
		if m := hiddenCSRF.FindStringSubmatch(page); m != nil {
			tok = m[1]
		}
		if r, _ := b.do("GET", "/", nil, nil); r.StatusCode != http.StatusSeeOther {
			t.Errorf("%s: signed in", c.name)
		}
	}
	rows, _ := f.st.Audit(t.Context(), store.AuditFilter{Event: "auth_failure"})
	if len(rows) < len(cases) {
		t.Errorf("%d refused sign-ins audited, want %d", len(rows), len(cases))
	}
	resp, page = b.do("POST", "/signin", url.Values{"csrf": {tok}, "token": {aliceTok}, "next": {"/history"}}, nil)
	csrf, next := signedIn(t, resp, page)
	if next != "/history" {
		t.Fatalf("sign-in goes on to %q, want /history", next)
	}
	var sc *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			sc = c
		}
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || len(sc.Value) != 43 {
		t.Fatalf("session cookie %+v", sc)
	}
	_, page = b.do("GET", "/", nil, nil)
	if !strings.Contains(page, `class="who">alice<`) {
		t.Errorf("queue page does not name alice")
	}
	// Sign out: the old cookie no longer works, even replayed.
	if resp, _ := b.do("POST", "/signout", url.Values{"csrf": {csrf}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", f.srv.URL+"/", nil)
	req.AddCookie(sc)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("replayed cookie after sign-out: %d", resp.StatusCode)
	}
}

// TestWebDecisionGuards tries to decide without a session, with a forged
// cookie, without or with a wrong CSRF token, and from another origin:
// every attempt is refused and the request stays PENDING.
func TestWebDecisionGuards(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.newRequest(t)
	alice := newBrowser(t, f)
	csrf := alice.signIn(aliceTok)
	bob := newBrowser(t, f)
	bobCSRF := bob.signIn(bobTok)
	anon := newBrowser(t, f)
	forged := newBrowser(t, f)
	u, _ := url.Parse(f.srv.URL)
	forged.c.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: strings.Repeat("A", 43)}})
	approve := "/requests/" + id + "/approve"
	cases := []struct {
		name string
		b    *browser
		path string
		form url.Values
		hdr  map[string]string
		code int
	}{
		{"no cookie", anon, approve, url.Values{"csrf": {csrf}}, nil, 401},
		{"forged cookie", forged, approve, url.Values{"csrf": {csrf}}, nil, 401},
		{"no CSRF token", alice, approve, url.Values{}, nil, 403},
		{"wrong CSRF token", alice, approve, url.Values{"csrf": {csrf[:42] + "x"}}, nil, 403},
		{"CSRF token of another session", alice, approve, url.Values{"csrf": {bobCSRF}}, nil, 403},
		{"wrong CSRF header", alice, approve, url.Values{"csrf": {csrf}}, map[string]string{csrfHeader: "nope"}, 403},
		{"other origin", alice, approve, url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site", alice, approve, url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"null origin from a sandboxed frame", alice, approve, url.Values{"csrf": {csrf}}, map[string]string{"Origin": "null"}, 403},
		{"null origin, cross-site", alice, approve, url.Values{"csrf": {csrf}}, map[string]string{"Origin": "null", "Sec-Fetch-Site": "cross-site"}, 403},
		{"same scheme, other port", alice, approve, url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"deny, no CSRF", alice, "/requests/" + id + "/deny", url.Values{"reason": {"x"}}, nil, 403},
		{"grant, no CSRF", alice, "/requests/" + id + "/grant", url.Values{"minutes": {"5"}}, nil, 403},
		{"GET does not decide", alice, approve + "?csrf=" + csrf, nil, nil, 405},
	}
	for _, c := range cases {
		method := "POST"
		if c.form == nil {
			method = "GET"
		}
		if resp, body := c.b.do(method, c.path, c.form, c.hdr); resp.StatusCode != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.code)
		}
		if a, _ := f.st.Get(t.Context(), id); a.State != store.Pending {
			t.Fatalf("%s: the request was decided: %s by %s", c.name, a.State, a.DecidedBy)
		}
	}
	// A deny without a reason is refused and decides nothing.
	resp, body := alice.do("POST", "/requests/"+id+"/deny", url.Values{"csrf": {csrf}}, map[string]string{csrfHeader: csrf})
	if resp.StatusCode != 400 || !strings.Contains(body, "needs a reason") {
		t.Errorf("deny without a reason: %d %s", resp.StatusCode, body)
	}
	// Through the script's fetch (CSRF header): bob denies.
	resp, body = bob.do("POST", "/requests/"+id+"/deny", url.Values{"reason": {"not now"}}, map[string]string{csrfHeader: bobCSRF})
	if resp.StatusCode != 200 {
		t.Fatalf("bob's denial: %d %s", resp.StatusCode, body)
	}
	// Alice, late, is told who decided.
	resp, _ = alice.do("POST", approve, url.Values{"csrf": {csrf}, "next": {"/requests/" + id}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/requests/"+id {
		t.Fatalf("late approval: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := alice.do("GET", "/requests/"+id, nil, nil)
	if !strings.Contains(page, "was already DENIED by bob; your decision was not applied.") {
		t.Errorf("the late decision's page does not say who decided:\n%s", page)
	}
	if a, _ := f.st.Get(t.Context(), id); a.State != store.Denied || a.DecidedBy != "bob" || a.Reason != "not now" {
		t.Errorf("request %+v", a)
	}
	// Open redirects: next stays on this site.
	for _, next := range []string{"//evil.example", "https://evil.example/", "/\\evil.example", "/requests/../../x"} {
		resp, _ := alice.do("POST", approve, url.Values{"csrf": {csrf}, "next": {next}}, nil)
		if loc := resp.Header.Get("Location"); loc != "/" {
			t.Errorf("next=%q redirected to %q", next, loc)
		}
	}
}

// TestWebCookieAloneCannotDecide replays the session cookie the way a
// server on another port of the same host can: the browser sends it the
// cookie (cookies are not separated by port, and 127.0.0.1:3000 is the
// same site as 127.0.0.1:8080, so SameSite does not help), and that server
// asks the page with it, without Origin or Sec-Fetch headers. Every page a
// GET returns must lack the session's CSRF token, and nothing scraped from
// them may decide a request or revoke a grant.
func TestWebCookieAloneCannotDecide(t *testing.T) {
	t.Parallel()
	f := setup(t)
	alice := newBrowser(t, f)
	csrf := alice.signIn(aliceTok)
	id := f.newRequestIn(t, "sess-r")
	// An active grant, so the grant list and its revoke forms are rendered.
	granted := f.newRequestIn(t, "sess-g")
	if resp, body := alice.do("POST", "/requests/"+granted+"/grant", url.Values{"csrf": {csrf}, "minutes": {"5"}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("grant: %d %s", resp.StatusCode, body)
	}
	gs, err := f.b.Grants(t.Context())
	if err != nil || len(gs) != 1 {
		t.Fatalf("grants: %v %v", gs, err)
	}
	grant := gs[0].ID
	u, _ := url.Parse(f.srv.URL)
	var cookie string
	for _, c := range alice.c.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			cookie = c.Value
		}
	}
	if cookie == "" {
		t.Fatal("no session cookie after sign-in")
	}
	// The replaying client: the cookie, nothing else.
	replay := func(method, path string, form url.Values, hdr map[string]string) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, body)
		req.Header.Set("Cookie", sessionCookie+"="+cookie)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	candidates := map[string]bool{"": true}
	tokenish := regexp.MustCompile(`[A-Za-z0-9_-]{20,}`)
	for _, p := range []string{"/", "/history", "/history?event=grant_created", "/requests/" + id, "/requests/" + granted,
		"/cards/" + id, "/grants", "/signin"} {
		code, page := replay("GET", p, nil, nil)
		if code != http.StatusOK {
			t.Errorf("GET %s with the cookie alone: %d (the replay is meant to read the page)", p, code)
		}
		if strings.Contains(page, csrf) {
			t.Errorf("GET %s with the cookie alone returns the session's CSRF token", p)
		}
		if m := handoffCSRF.FindStringSubmatch(page); m != nil {
			t.Errorf("GET %s carries a csrf-token meta tag", p)
		}
		for _, tok := range tokenish.FindAllString(page, -1) {
			candidates[tok] = true
		}
		for _, m := range regexp.MustCompile(`name="csrf"[^>]*value="([^"]*)"`).FindAllStringSubmatch(page, -1) {
			candidates[m[1]] = true
		}
	}
	if len(candidates) < 2 {
		t.Fatalf("nothing scraped: the pages were not read")
	}
	tried := 0
	for tok := range candidates {
		for _, c := range []struct {
			path string
			form url.Values
			hdr  map[string]string
		}{
			{"/requests/" + id + "/approve", url.Values{"csrf": {tok}}, nil},
			{"/requests/" + id + "/approve", url.Values{}, map[string]string{csrfHeader: tok}},
			{"/requests/" + id + "/grant", url.Values{"csrf": {tok}, "minutes": {"60"}}, nil},
			{"/grants/" + grant + "/revoke", url.Values{"csrf": {tok}}, nil},
		} {
			tried++
			if code, body := replay("POST", c.path, c.form, c.hdr); code != http.StatusForbidden {
				t.Errorf("POST %s with the cookie and a scraped token (%d chars): %d, want 403\n%s", c.path, len(tok), code, body)
			}
		}
	}
	if a, _ := f.st.Get(t.Context(), id); a.State != store.Pending {
		t.Fatalf("the replayed cookie decided the request: %s by %s", a.State, a.DecidedBy)
	}
	if gs, _ := f.b.Grants(t.Context()); len(gs) != 1 || !gs[0].Active(time.Now()) {
		t.Fatalf("the replayed cookie revoked the grant: %+v", gs)
	}
	t.Logf("%d POSTs with %d scraped values refused", tried, len(candidates))
	// The token the sign-in answer handed out still decides: the guard is
	// the token, not the cookie.
	if code, body := replay("POST", "/requests/"+id+"/approve", url.Values{}, map[string]string{csrfHeader: csrf}); code != http.StatusOK {
		t.Fatalf("with the handed-out token: %d %s", code, body)
	}
}

// TestWebEscapes puts markup in every string the agent controls and checks
// the pages carry it as text.
func TestWebEscapes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	evil := `<script>alert(1)</script>"><img src=x onerror=alert(2)>`
	id := approval.NewID()
	now := time.Now()
	args, _ := json.Marshal(map[string]string{"path": evil, "content": evil})
	err := f.st.Create(t.Context(), &store.Approval{ID: id, Tool: "write_file", Args: args, ArgsHash: "h",
		Workspace: "/w/" + evil, Session: "s" + evil, Agent: evil, Rule: evil,
		Risk:  "--- a/" + evil + "\n+++ b/" + evil + "\n@@ -0,0 +1 @@\n+" + evil + "\n",
		State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(time.Minute), Owner: store.CurrentOwner()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, f)
	b.signIn(aliceTok)
	for _, p := range []string{"/", "/requests/" + id, "/cards/" + id, "/history"} {
		_, page := b.do("GET", p, nil, nil)
		for _, bad := range []string{"<script>alert", "<img src=x", `"><img`} {
			if strings.Contains(page, bad) {
				t.Errorf("%s: %q reached the page unescaped", p, bad)
			}
		}
		if p != "/history" && !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the markup is not shown as text", p)
		}
	}
}

func TestWebHistory(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ag := newAgent(t, f.b, "sess-h")
	alice := newBrowser(t, f)
	csrf := alice.signIn(aliceTok)
	res1 := ag.call(t, "write_file", map[string]string{"path": "a.txt", "content": "a\n"})
	a1 := f.waitPending(t, 1)[0]
	alice.do("POST", "/requests/"+a1.ID+"/deny", url.Values{"csrf": {csrf}, "reason": {"no a"}}, nil)
	if r := <-res1; r.Success || !strings.Contains(r.Error, "no a") {
		t.Fatalf("denied call: %+v", r)
	}
	res2 := ag.call(t, "write_file", map[string]string{"path": "b.txt", "content": "b\n"})
	a2 := f.waitPending(t, 1)[0]
	bob := newBrowser(t, f)
	bob.do("POST", "/requests/"+a2.ID+"/approve", url.Values{"csrf": {bob.signIn(bobTok)}}, nil)
	if r := <-res2; !r.Success {
		t.Fatalf("approved call: %+v", r)
	}
	count := func(q string) int {
		_, page := alice.do("GET", "/history?"+q, nil, nil)
		if !strings.Contains(page, "Audit hash chain OK") {
			t.Errorf("%s: no chain status", q)
		}
		return strings.Count(page, "<tr>\n<td>")
	}
	soon := time.Now().UTC().Add(time.Minute).Format(localTime)
	past := time.Now().UTC().Add(-time.Hour).Format(localTime)
	cases := []struct {
		q    string
		want int
	}{
		{"event=approval&decision=denied", 1},
		{"event=approval&decision=approved&by=bob", 1},
		{"event=approval&by=alice&decision=approved", 0},
		{"event=approval&tool=write_file", 2},
		{"event=approval&tool=run_command", 0},
		{"event=approval&from=" + soon, 0},
		{"event=approval&to=" + past, 0},
		{"event=approval&from=" + past + "&to=" + soon, 2},
	}
	for _, c := range cases {
		if got := count(c.q); got != c.want {
			t.Errorf("history?%s: %d rows, want %d", c.q, got, c.want)
		}
	}
	_, page := alice.do("GET", "/history?from=yesterday", nil, nil)
	if !strings.Contains(page, "is not a time") {
		t.Errorf("a bad time is not reported")
	}
	// The decision field suggests every decision warden writes.
	for _, d := range audit.Decisions {
		if !strings.Contains(page, `<option value="`+string(d)+`">`) {
			t.Errorf("history does not suggest decision %q", d)
		}
	}
}

// TestWebChainBroken shows a tampered audit chain as broken, at its row.
func TestWebChainBroken(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tool := range []string{"t1", "t2", "t3"} {
		if _, err := f.st.AppendAudit(t.Context(), &audit.Record{Event: "tool_call", Tool: tool, Decision: "allow"}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, f)
	b.signIn(aliceTok)
	if _, page := b.do("GET", "/history", nil, nil); !strings.Contains(page, "Audit hash chain OK: 3 rows") {
		t.Fatalf("intact chain not shown as OK")
	}
	if _, err := f.st.DB().ExecContext(t.Context(), `UPDATE audit SET record = replace(record, '"t2"', '"t9"') WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	_, page := b.do("GET", "/history", nil, nil)
	if !strings.Contains(page, "Audit hash chain BROKEN") || !strings.Contains(page, "row 2") {
		t.Errorf("tampered chain not shown as broken:\n%s", page)
	}
}

func TestRiskLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, risk string
		want       []riskLine
	}{
		{"empty", "", nil},
		{"command", "class: dangerous\n  read      ls -la\n  dangerous rm -rf /tmp/x  (rule: rm-recursive)",
			[]riskLine{{Kind: "class", Text: "class: dangerous"}, {Kind: "cmd", Badge: "read", Text: "ls -la"},
				{Kind: "cmd", Badge: "dangerous", Text: "rm -rf /tmp/x  (rule: rm-recursive)"}}},
		{"diff", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n",
			[]riskLine{{Kind: "file", Text: "--- a/x"}, {Kind: "file", Text: "+++ b/x"}, {Kind: "hunk", Text: "@@ -1,2 +1,2 @@"},
				{Kind: "ctx", Text: " keep"}, {Kind: "del", Text: "-old"}, {Kind: "add", Text: "+new"}}},
		{"deleted line that looks like a header", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n--- comment\n+++ new\n",
			[]riskLine{{Kind: "file", Text: "--- a/x"}, {Kind: "file", Text: "+++ b/x"}, {Kind: "hunk", Text: "@@ -1 +1 @@"},
				{Kind: "del", Text: "--- comment"}, {Kind: "add", Text: "+++ new"}}},
		{"plus outside a diff is text", "+ not a diff", []riskLine{{Kind: "text", Text: "+ not a diff"}}},
		{"url", "GET https://example.com/", []riskLine{{Kind: "text", Text: "GET https://example.com/"}}},
	}
	for _, c := range cases {
		if d := cmp.Diff(c.want, riskLines(c.risk)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}

// FuzzRiskLines: any risk text is split without losing or adding text, and
// the card renders it with no markup of its own.
func FuzzRiskLines(f *testing.F) {
	for _, s := range []string{"", "class: x\n  read ls", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b", "--- \n+++ \n@@\n--- \n+++ ",
		"<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "+\n-\n@@"} {
		f.Add(s)
	}
	pages := parsePages()
	tagRe := regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)`)
	allowed := map[string]bool{"article": true, "header": true, "span": true, "a": true, "dl": true, "dt": true, "dd": true,
		"h3": true, "pre": true, "b": true, "div": true, "form": true, "input": true, "button": true, "label": true, "p": true, "q": true}
	f.Fuzz(func(t *testing.T, risk string) {
		lines := riskLines(risk)
		var parts []string
		for _, l := range lines {
			if l.Kind == "cmd" {
				if !strings.Contains(risk, l.Badge) || !strings.Contains(risk, l.Text) {
					t.Fatalf("cmd line %+v not from %q", l, risk)
				}
				continue
			}
			parts = append(parts, l.Text)
		}
		if !strings.Contains(risk, "\n  ") && risk != "" && !strings.HasPrefix(risk, "  ") {
			if got, want := strings.Join(parts, "\n"), strings.TrimRight(risk, "\n"); got != want {
				t.Fatalf("lines %q do not rebuild %q", got, want)
			}
		}
		var buf strings.Builder
		a := &store.Approval{ID: strings.Repeat("a", 32), Tool: risk, Args: json.RawMessage(`{}`), Risk: risk, Agent: risk, State: store.Pending,
			ExpiresAt: time.Now().Add(time.Minute)}
		v := cardView{A: a, Args: risk, Risk: lines, Pending: true, Next: "/"}
		if err := pages["card"].ExecuteTemplate(&buf, "card", v); err != nil {
			t.Fatal(err)
		}
		for _, m := range tagRe.FindAllStringSubmatch(buf.String(), -1) {
			if !allowed[strings.ToLower(m[2])] {
				t.Fatalf("risk %q produced a <%s> element", risk, m[2])
			}
		}
	})
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("0", 32)
	for in, want := range map[string]string{"": "/", "/": "/", "/history": "/history", "/requests/" + id: "/requests/" + id,
		"//evil": "/", "http://evil/": "/", "/requests/" + id + "/../x": "/", "javascript:alert(1)": "/"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSafeNext: whatever a form says, the redirect stays on the page's own
// paths.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"", "/", "/history", "/requests/" + strings.Repeat("a", 32), "//evil", "/\\evil", "https://evil/",
		"/requests/" + strings.Repeat("a", 32) + "/../../x", "/requests/" + strings.Repeat("A", 32), "javascript:alert(1)"} {
		f.Add(s)
	}
	ok := regexp.MustCompile(`^(/|/history|/requests/[0-9a-f]{32})$`)
	f.Fuzz(func(t *testing.T, next string) {
		if got := safeNext(next); !ok.MatchString(got) {
			t.Fatalf("safeNext(%q) = %q", next, got)
		}
	})
}

// FuzzHistoryQuery: any search form parses without panicking, clipped,
// with times either parsed or reported.
func FuzzHistoryQuery(f *testing.F) {
	for _, s := range []string{"", "tool=write_file", "from=2026-01-02T03:04&to=2026-01-02", "from=yesterday", "by=%00&decision=" + strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := parseHistoryQuery(v)
		for _, s := range []string{q.Tool, q.Decision, q.By, q.Event, q.From, q.To} {
			if len(s) > 200 {
				t.Fatalf("field of %d bytes kept", len(s))
			}
		}
		if err == nil && (q.From != "" && q.from.IsZero() || q.To != "" && q.to.IsZero()) {
			t.Fatalf("a time was dropped without an error: %+v", q)
		}
		q.match(&store.AuditRow{Time: time.Now()})
	})
}

// TestWebTLSCookie: over TLS the session cookie is Secure, and an http://
// origin posting to the https:// page is another origin.
func TestWebTLSCookie(t *testing.T) {
	t.Parallel()
	f := setup(t)
	srv := httptest.NewTLSServer(f.srv.Config.Handler)
	defer srv.Close()
	b := newBrowser(t, &fixture{st: f.st, b: f.b, srv: srv})
	b.c.Transport = srv.Client().Transport
	_, page := b.do("GET", "/signin", nil, nil)
	tok := hiddenCSRF.FindStringSubmatch(page)[1]
	resp, page := b.do("POST", "/signin", url.Values{"csrf": {tok}, "token": {aliceTok}}, nil)
	csrf, _ := signedIn(t, resp, page)
	var secure bool
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			secure = c.Secure && c.HttpOnly && c.SameSite == http.SameSiteStrictMode
		}
	}
	if !secure {
		t.Fatalf("sign-in over TLS: no Secure HttpOnly SameSite=Strict cookie")
	}
	id := f.newRequest(t)
	u, _ := url.Parse(srv.URL)
	r, _ := b.do("POST", "/requests/"+id+"/approve", url.Values{"csrf": {csrf}}, map[string]string{"Origin": "http://" + u.Host})
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("http origin on the https page: %d", r.StatusCode)
	}
	r, _ = b.do("POST", "/requests/"+id+"/approve", url.Values{"csrf": {csrf}}, map[string]string{"Origin": srv.URL})
	if r.StatusCode != http.StatusSeeOther {
		t.Errorf("same origin: %d", r.StatusCode)
	}
	if a, _ := f.st.Get(t.Context(), id); a.State != store.Approved || a.DecidedBy != "alice" {
		t.Errorf("request %s by %q", a.State, a.DecidedBy)
	}
}

// The page's grant form offers a grant for every session of the agent in
// the workspace when the request can have one, and the server grants what
// was chosen: a workspace grant where the request changes files, or a
// scope it does not know, is refused, never widened or narrowed silently.
func TestWebWorkspaceGrant(t *testing.T) {
	t.Parallel()
	f := setup(t)
	alice := newBrowser(t, f)
	csrf := alice.signIn(aliceTok)
	hdr := map[string]string{csrfHeader: csrf}
	newReq := func(tool, args string) string {
		t.Helper()
		id, now := approval.NewID(), time.Now()
		a := &store.Approval{ID: id, Tool: tool, Args: json.RawMessage(args), ArgsHash: approval.BindingHash(tool, json.RawMessage(args), "/w", "s1"),
			Workspace: "/w", Session: "s1", Agent: "build", State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: store.CurrentOwner()}
		if err := f.st.Create(t.Context(), a, nil); err != nil {
			t.Fatal(err)
		}
		return id
	}
	scoped := newReq("run_command", `{"command":"make"}`)
	fileChange := newReq("write_file", `{"path":"a","content":"x"}`)

	_, card := alice.do("GET", "/cards/"+scoped, nil, nil)
	if !strings.Contains(card, `<option value="workspace">every session of agent build in this workspace</option>`) {
		t.Errorf("the card of a request that can be granted per workspace offers no such grant:\n%s", card)
	}
	_, card = alice.do("GET", "/cards/"+fileChange, nil, nil)
	if strings.Contains(card, `value="workspace"`) {
		t.Errorf("the card of a file change offers a workspace grant:\n%s", card)
	}

	for _, c := range []struct {
		id, scope string
		code      int
		want      string
	}{
		{scoped, "everywhere", http.StatusBadRequest, "in this session or in every session"},
		{fileChange, "workspace", http.StatusBadRequest, "in its session only"},
		{scoped, "workspace", http.StatusOK, "in every session of agent build in /w"},
	} {
		resp, body := alice.do("POST", "/requests/"+c.id+"/grant", url.Values{"csrf": {csrf}, "minutes": {"5"}, "scope": {c.scope}}, hdr)
		if resp.StatusCode != c.code || !strings.Contains(body, c.want) {
			t.Errorf("scope %q: %d %s; want %d and %q", c.scope, resp.StatusCode, body, c.code, c.want)
		}
	}
	gs, err := f.b.Grants(t.Context())
	if err != nil || len(gs) != 1 || gs[0].Scope() != store.ScopeWorkspaceAgent || gs[0].Agent != "build" {
		t.Fatalf("grants: %+v %v", gs, err)
	}
	if a, _ := f.st.Get(t.Context(), fileChange); a.State != store.Pending {
		t.Errorf("the refused grant decided the request: %s", a.State)
	}
	_, list := alice.do("GET", "/grants", nil, nil)
	if !strings.Contains(list, "in every session of agent <b>build</b> in <b>/w</b>") {
		t.Errorf("the grant list does not say where the grant holds:\n%s", list)
	}
}
