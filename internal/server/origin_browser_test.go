package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

// TestBrowserDNSRebinding drives a real Chromium against the server. The
// browser resolves rebind.test and attacker.test to 127.0.0.1
// (--host-resolver-rules), as DNS does for the attacker after a rebinding.
//
//   - Rebinding: the attacker's page is served as http://rebind.test:PORT/
//     (the browser's Fetch domain answers for the attacker's server, which
//     owned the name a moment ago); its fetch() of /mcp/ws is same-origin
//     for the browser, reaches the server with Host rebind.test:PORT, and
//     must be refused — with a 403 the page can see.
//   - Cross-origin: a page on http://attacker.test:OTHER/ posts to the
//     server's loopback address (no-cors: the browser sends it, the page
//     cannot read the answer); the request must not get past the check.
//   - Control: the same fetch() from the server's own page gets through,
//     so the refusals above are the check's doing.
func TestBrowserDNSRebinding(t *testing.T) {
	t.Parallel()
	chromium(t)
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.New(context.Background(), approval.Options{Store: st, Supervisors: []string{"alice"}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Broker: b, Tokens: map[string]string{aliceTok: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int32 // requests that got past the check to /mcp/
	mux := http.NewServeMux()
	mux.Handle("/mcp/", s.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		io.WriteString(w, "reached")
	})))
	mux.Handle("/", s.Handler())
	srv := httptest.NewServer(mux)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>attacker</title>")
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		attacker.Close()
		s.Close()
		st.Close()
	})
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, aport, _ := net.SplitHostPort(attacker.Listener.Addr().String())

	// The browser's own guard against public pages reaching loopback
	// (Local Network Access) is switched off: other browsers lack it, and
	// the server must not depend on it.
	ctx := newChrome(t, 1000, 800,
		chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1, MAP attacker.test 127.0.0.1"),
		chromedp.Flag("disable-features", "LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults"))

	// Rebinding: the attacker's document, for the origin rebind.test:PORT.
	rebind := fmt.Sprintf("http://rebind.test:%s/attack", port)
	paused := make(chan *fetch.EventRequestPaused, 4)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: rebind}}}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for e := range paused {
			chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{
				RequestID: e.RequestID, ResponseCode: 200,
				ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html"}},
				Body:            []byte("<!doctype html><title>rebound</title>"),
			})
		}
	}()
	t.Cleanup(func() { close(paused) })
	step(t, ctx, "load the attacker's page under the rebound name", chromedp.Navigate(rebind))
	if got := eval[string](t, ctx, `location.origin`); got != "http://rebind.test:"+port {
		t.Fatalf("the attacker's page is at %s", got)
	}
	got := eval[string](t, ctx, `fetch("/mcp/ws", {method: "POST", body: "{}"}).then(async r => r.status + " " + await r.text())`, chromedp.EvalAwaitPromise)
	if want := "403"; len(got) < 3 || got[:3] != want {
		t.Errorf("the rebound page's fetch: %q, want a 403", got)
	}
	got = eval[string](t, ctx, `fetch("/api/approvals", {headers: {Authorization: "Bearer `+aliceTok+`"}}).then(r => String(r.status))`, chromedp.EvalAwaitPromise)
	if got != "403" {
		t.Errorf("the rebound page's fetch of /api with a (leaked) token: %s, want 403", got)
	}

	// Cross-origin: a page on another origin posts to the loopback address.
	step(t, ctx, "load the attacker's own page", chromedp.Navigate(fmt.Sprintf("http://attacker.test:%s/", aport)))
	eval[string](t, ctx, fmt.Sprintf(`fetch("http://127.0.0.1:%s/mcp/ws", {method: "POST", mode: "no-cors", body: "{}"}).then(() => "sent", e => "error " + e)`, port), chromedp.EvalAwaitPromise)
	eval[string](t, ctx, fmt.Sprintf(`fetch("http://localhost:%s/mcp/ws", {method: "POST", mode: "no-cors", body: "{}"}).then(() => "sent", e => "error " + e)`, port), chromedp.EvalAwaitPromise)
	time.Sleep(100 * time.Millisecond)
	if n := reached.Load(); n != 0 {
		t.Fatalf("%d requests from the attacker's pages got past the check", n)
	}

	// Control: the server's own page.
	step(t, ctx, "load the server's page", chromedp.Navigate(srv.URL+"/signin"))
	got = eval[string](t, ctx, `fetch("/mcp/ws", {method: "POST", body: "{}"}).then(async r => r.status + " " + await r.text())`, chromedp.EvalAwaitPromise)
	if got != "200 reached" || reached.Load() != 1 {
		t.Errorf("the server's own page: %q (%d reached), want 200 reached", got, reached.Load())
	}
}
