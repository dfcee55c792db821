package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/workspace"
)

// stateSource serves the checkpoint stores under a state directory, each
// workspace with the default masks.
type stateSource struct{ state string }

func (s stateSource) Workspaces() ([]string, error) { return checkpoint.Workspaces(s.state) }

func (s stateSource) Open(_ context.Context, ws string) (*checkpoint.Store, func(), error) {
	root, err := workspace.Open(ws, nil)
	if err != nil {
		return nil, nil, err
	}
	st, err := checkpoint.Open(root, &checkpoint.Options{StateDir: s.state})
	if err != nil {
		root.Close()
		return nil, nil, err
	}
	return st, func() { root.Close() }, nil
}

type cpFixture struct {
	*fixture
	ws    string
	store *checkpoint.Store
	c     *checkpoint.Checkpoint
}

// setupCheckpoints is the page with a checkpoints view over one workspace
// that has one checkpoint, and a change since.
func setupCheckpoints(t *testing.T) *cpFixture {
	t.Helper()
	state := t.TempDir()
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.New(t.Context(), approval.Options{Store: st, Supervisors: []string{"alice", "bob"}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Broker: b, Tokens: map[string]string{aliceTok: "alice"}, Poll: 10 * time.Millisecond, Checkpoints: stateSource{state}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close(); st.Close() })
	f := &cpFixture{fixture: &fixture{st, b, srv}}
	f.ws = t.TempDir()
	os.WriteFile(filepath.Join(f.ws, "main.go"), []byte("package main\n"), 0o644)
	os.MkdirAll(filepath.Join(f.ws, "src"), 0o755)
	os.WriteFile(filepath.Join(f.ws, "src", "<b>tag&amp.txt"), []byte("x"), 0o644)
	root, err := workspace.Open(f.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	f.store, err = checkpoint.Open(root, &checkpoint.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	f.c, err = f.store.Checkpoint(t.Context(), checkpoint.Call{Tool: "run_command", Summary: "rm -rf src <script>"})
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(f.ws, "src"))
	os.WriteFile(filepath.Join(f.ws, "main.go"), []byte("broken\n"), 0o644)
	return f
}

func (f *cpFixture) restored(t *testing.T) bool {
	b, _ := os.ReadFile(filepath.Join(f.ws, "main.go"))
	return string(b) == "package main\n"
}

var planDigest = regexp.MustCompile(`name="plan" value="([0-9a-f]+)"`)

func TestWebCheckpointsAndUndo(t *testing.T) {
	t.Parallel()
	f := setupCheckpoints(t)
	b := newBrowser(t, f.fixture)
	csrf := b.signIn(aliceTok)
	wsID := checkpoint.WorkspaceID(f.store.Workspace())
	page := "/checkpoints/" + wsID + "/" + f.c.ID

	resp, body := b.do("GET", "/checkpoints", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, f.c.ID) || !strings.Contains(body, "rm -rf src &lt;script&gt;") {
		t.Fatalf("list: %d\n%s", resp.StatusCode, body)
	}
	resp, body = b.do("GET", page, nil, nil)
	m := planDigest.FindStringSubmatch(body)
	if resp.StatusCode != 200 || m == nil || !strings.Contains(body, "src/&lt;b&gt;tag&amp;amp.txt") || !strings.Contains(body, "modified") {
		t.Fatalf("checkpoint page: %d\n%s", resp.StatusCode, body)
	}
	if strings.Contains(body, csrf) {
		t.Fatal("a GET response holds the session's CSRF token")
	}
	if !strings.Contains(body, `<input type="hidden" name="csrf" data-csrf>`) {
		t.Fatal("the undo form has no csrf slot for the page's script")
	}

	// Refused: no token, a wrong token, another origin, no session.
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  map[string]string
		code int
	}{
		{"no csrf", url.Values{"plan": {m[1]}}, nil, http.StatusForbidden},
		{"wrong csrf", url.Values{"plan": {m[1]}, "csrf": {csrf[:len(csrf)-1] + "x"}}, nil, http.StatusForbidden},
		{"cross-site", url.Values{"plan": {m[1]}, "csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
	} {
		if resp, _ := b.do("POST", page+"/undo", tc.form, tc.hdr); resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.code)
		}
		if f.restored(t) {
			t.Fatalf("%s: the undo ran", tc.name)
		}
	}
	anon := newBrowser(t, f.fixture)
	if resp, _ := anon.do("POST", page+"/undo", url.Values{"plan": {m[1]}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no session: %d", resp.StatusCode)
	}
	if resp, _ := b.do("GET", "/checkpoints/"+wsID+"/ffffffffffff", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown checkpoint: %d", resp.StatusCode)
	}
	if resp, _ := b.do("GET", "/checkpoints/..%2F..%2Fetc/"+f.c.ID, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bad workspace id: %d", resp.StatusCode)
	}

	// A plan that is no longer the one shown: nothing happens.
	os.WriteFile(filepath.Join(f.ws, "new.txt"), []byte("after the page was shown"), 0o644)
	resp, _ = b.do("POST", page+"/undo", url.Values{"plan": {m[1]}, "csrf": {csrf}}, nil)
	if resp.StatusCode != http.StatusSeeOther || f.restored(t) {
		t.Fatalf("stale plan: %d, restored %v", resp.StatusCode, f.restored(t))
	}
	_, body = b.do("GET", page, nil, nil)
	if !strings.Contains(body, "The workspace changed since this page showed the plan") {
		t.Errorf("no flash about the changed plan:\n%s", body)
	}
	m = planDigest.FindStringSubmatch(body)
	resp, _ = b.do("POST", page+"/undo", url.Values{"plan": {m[1]}, "csrf": {csrf}}, nil)
	if resp.StatusCode != http.StatusSeeOther || !f.restored(t) {
		t.Fatalf("undo: %d, restored %v", resp.StatusCode, f.restored(t))
	}
	if _, err := os.Stat(filepath.Join(f.ws, "src", "<b>tag&amp.txt")); err != nil {
		t.Errorf("deleted file not restored: %v", err)
	}
	rows, _ := f.st.Audit(t.Context(), store.AuditFilter{Event: checkpoint.EventUndo})
	var ok int
	for _, r := range rows {
		if r.Record.DecidedBy == "alice" && r.Record.Checkpoint == f.c.ID && r.Record.Success {
			ok++
		}
	}
	if len(rows) != 2 || ok != 1 {
		t.Errorf("audit: %d undo rows, %d successful by alice; want the refused stale plan and the undo", len(rows), ok)
	}
}

func TestWebCheckpointPagesHeaders(t *testing.T) {
	t.Parallel()
	f := setupCheckpoints(t)
	b := newBrowser(t, f.fixture)
	b.signIn(aliceTok)
	for _, p := range []string{"/checkpoints", "/checkpoints/" + checkpoint.WorkspaceID(f.store.Workspace()) + "/" + f.c.ID} {
		resp, body := b.do("GET", p, nil, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != ContentSecurityPolicy {
			t.Errorf("%s: %d, CSP %q", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
		if regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|<script>`).MatchString(body) {
			t.Errorf("%s has inline code", p)
		}
		if !strings.Contains(body, `<a href="/checkpoints"`) {
			t.Errorf("%s: no Checkpoints link in the navigation", p)
		}
	}
	// A server without checkpoints has no such pages.
	plain := setup(t)
	pb := newBrowser(t, plain)
	pb.signIn(aliceTok)
	if resp, body := pb.do("GET", "/checkpoints", nil, nil); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "Checkpoints</a>") {
		t.Errorf("/checkpoints without a source: %d", resp.StatusCode)
	}
}

// TestBrowserUndo clicks Undo in headless chromium: the page's script
// fills the session's token into the form, and the workspace is restored.
func TestBrowserUndo(t *testing.T) {
	f := setupCheckpoints(t)
	ctx := newChrome(t, 1280, 900)
	signInBrowser(t, ctx, f.srv.URL, aliceTok)
	page := f.srv.URL + "/checkpoints/" + checkpoint.WorkspaceID(f.store.Workspace()) + "/" + f.c.ID
	step(t, ctx, "open the checkpoint", chromedp.Navigate(f.srv.URL+"/checkpoints"), chromedp.WaitVisible(chromedp.CSS(`a[href*="`+f.c.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`a[href*="`+f.c.ID+`"]`)), chromedp.WaitVisible(chromedp.CSS(`form[action$="/undo"] button`)))
	if loc := eval[string](t, ctx, `location.href`); loc != page {
		t.Fatalf("at %s, want %s", loc, page)
	}
	step(t, ctx, "undo", chromedp.Click(chromedp.CSS(`form[action$="/undo"] button`)), chromedp.WaitVisible(chromedp.CSS(".flash-ok")))
	if msg := eval[string](t, ctx, `document.querySelector('.flash-ok').textContent`); !strings.Contains(msg, "Restored") {
		t.Errorf("flash %q", msg)
	}
	if !f.restored(t) {
		t.Fatal("the workspace was not restored")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('form[action$="/undo"]').length`); n != 0 {
		t.Errorf("the page still offers an undo after it (%d forms): the plan should be empty", n)
	}
}
