package server

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/testenv"
	"github.com/wardenhq/warden/internal/tools"
)

var screenshots = flag.String("screenshots", "", "write the supervisor page's screenshots (desktop and phone) to this directory, e.g. ../../docs")

// chromium returns Debian's chromium, or skips (fails under
// WARDEN_REQUIRE_SANDBOX=1) when it is absent.
func chromium(t testing.TB) string {
	t.Helper()
	return testenv.Need(t, "chromium")[0]
}

// newChrome starts a headless chromium with a fresh profile, offline
// (no first-run, sync, component update or background networking), and
// returns a tab's context.
func newChrome(t testing.TB, width, height int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	if err := chromedp.Do(ctx); err != nil { // start the browser, outside any timeout
		t.Fatalf("failed to start chromium: %v", err)
	}
	return ctx
}

// webFixture is a server with the page, a broker and a real store.
func webFixture(t testing.TB, poll time.Duration) *fixture {
	t.Helper()
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.New(context.Background(), approval.Options{Store: st, Supervisors: []string{"alice", "bob"}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Broker: b, Tokens: map[string]string{aliceTok: "alice", bobTok: "bob"}, Poll: poll})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		s.Close()
		srv.Close()
		st.Close()
	})
	return &fixture{st, b, srv}
}

// step runs browser actions with a deadline, failing the test with what.
func step(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		dc, dcancel := context.WithTimeout(ctx, 5*time.Second)
		defer dcancel()
		loc, _ := chromedp.Run(dc, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		t.Fatalf("%s: %v\npage: %s", what, err, loc)
	}
}

func eval[T any](t testing.TB, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitJS waits until expr is truthy in the page, across navigations.
func waitJS(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("waiting for %s (%s): still false after 15 s (last error: %v)", what, expr, last)
}

func result(t testing.TB, ch <-chan tools.Result) tools.Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("the tool call did not return within 15 s")
		return tools.Result{}
	}
}

func card(id string) string { return "#req-" + id }

func signInBrowser(t testing.TB, ctx context.Context, base, token string) {
	t.Helper()
	step(t, ctx, "sign in",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#queue")),
	)
	// The stream is connected before anything is asked of the page.
	waitJS(t, ctx, "the live stream", `document.body.getAttribute('data-live') === 'on'`)
}

// goHome opens the queue, signed in, with its stream connected.
func goHome(t testing.TB, ctx context.Context, base string) {
	t.Helper()
	// A form posted just before may still be navigating: that aborts
	// this navigation, so try again.
	for i := 0; ; i++ {
		c, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := chromedp.Do(c, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#queue")))
		cancel()
		if err == nil {
			break
		}
		if i == 3 || !strings.Contains(err.Error(), "ERR_ABORTED") {
			t.Fatalf("open the queue: %v", err)
		}
	}
	waitJS(t, ctx, "the live stream", `document.body.getAttribute('data-live') === 'on'`)
}

// TestBrowser drives the page in headless chromium against real agent
// calls through the engine and the broker.
func TestBrowser(t *testing.T) {
	f := webFixture(t, 10*time.Millisecond)
	ctx := newChrome(t, 1280, 900)
	base := f.srv.URL

	// Not signed in: the page is the sign-in form.
	step(t, ctx, "open the page", chromedp.Navigate(base+"/requests/"+strings.Repeat("0", 32)), chromedp.WaitVisible(chromedp.CSS("#token")))
	if loc := eval[string](t, ctx, `location.pathname`); loc != "/signin" {
		t.Fatalf("without a session the page is %s, want /signin", loc)
	}
	// A wrong token is refused.
	step(t, ctx, "wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "mallory-0123456789abcdef"), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS(".flash-error")))
	signInBrowser(t, ctx, base, aliceTok)
	if n := eval[int](t, ctx, `Array.from(document.scripts).filter(s => !s.src || s.textContent.trim() !== '').length`); n != 0 {
		t.Errorf("%d inline scripts on the queue page", n)
	}
	if ok := eval[bool](t, ctx, `document.cookie.indexOf('warden_session') < 0`); !ok {
		t.Error("the session cookie is readable from JavaScript")
	}
	// The browser gets the CSP and enforces it: an inline script added to
	// the page does not run.
	if csp := eval[string](t, ctx, `fetch('/').then(r => r.headers.get('content-security-policy'))`, chromedp.EvalAwaitPromise); csp != ContentSecurityPolicy {
		t.Errorf("CSP as the browser sees it: %q", csp)
	}
	eval[bool](t, ctx, `(() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.appendChild(s); return true })()`)
	if ran := eval[bool](t, ctx, `window.__inline === 1`); ran {
		t.Error("an inline script ran: the CSP is not enforced")
	}

	ag := newAgent(t, f.b, "sess-browser")
	if err := os.WriteFile(filepath.Join(ag.dir, "notes.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A marker that a reload would lose: the queue must update live.
	eval[bool](t, ctx, `window.__noReload = true`)

	t.Run("request appears live with a coloured diff; deny with a reason", func(t *testing.T) {
		res := ag.call(t, "write_file", map[string]string{"path": "notes.txt", "content": "alpha\nBETA\ngamma\n"})
		a := f.waitPending(t, 1)[0]
		step(t, ctx, "the request shows up", chromedp.WaitVisible(chromedp.CSS(card(a.ID))))
		if !eval[bool](t, ctx, `window.__noReload === true`) {
			t.Error("the page reloaded to show the request")
		}
		txt := eval[string](t, ctx, `document.querySelector('`+card(a.ID)+`').textContent`)
		for _, want := range []string{"write_file", "sess-browser", "build", ag.dir, `"path": "notes.txt"`, "-beta", "+BETA", "@@"} {
			if !strings.Contains(txt, want) {
				t.Errorf("card lacks %q:\n%s", want, txt)
			}
		}
		colours := eval[map[string]string](t, ctx, `(() => {
			const c = document.querySelector('`+card(a.ID)+`');
			const bg = sel => getComputedStyle(c.querySelector(sel)).backgroundColor;
			const fg = sel => getComputedStyle(c.querySelector(sel)).color;
			return {add: bg('.l-add'), del: bg('.l-del'), addText: c.querySelector('.l-add').textContent,
				delText: c.querySelector('.l-del').textContent, hunk: fg('.l-hunk'), ctx: bg('.l-ctx')};
		})()`)
		if colours["addText"] != "+BETA" || colours["delText"] != "-beta" {
			t.Errorf("diff lines %q / %q", colours["addText"], colours["delText"])
		}
		if colours["add"] != "rgb(230, 246, 234)" || colours["del"] != "rgb(253, 236, 234)" || colours["hunk"] != "rgb(102, 57, 186)" {
			t.Errorf("diff colours: %v (want green adds, red deletions, violet hunks)", colours)
		}
		if left := eval[string](t, ctx, `document.querySelector('`+card(a.ID)+` .left').textContent`); !strings.HasPrefix(left, "4m") && !strings.HasPrefix(left, "5m") {
			t.Errorf("time left %q", left)
		}
		step(t, ctx, "deny",
			chromedp.SendKeys(chromedp.CSS(card(a.ID)+` input[name="reason"]`), "not the config, please"),
			chromedp.Click(chromedp.CSS(card(a.ID)+" button.no")),
			chromedp.WaitVisible(chromedp.CSS(".flash-ok")),
		)
		r := result(t, res)
		if r.Success || !strings.Contains(r.Error, "not the config, please") {
			t.Fatalf("denied call: %+v", r)
		}
		if data, _ := os.ReadFile(filepath.Join(ag.dir, "notes.txt")); string(data) != "alpha\nbeta\ngamma\n" {
			t.Errorf("a denied write changed the file: %q", data)
		}
		if got, _ := f.st.Get(t.Context(), a.ID); got.DecidedBy != "alice" {
			t.Errorf("decided by %q", got.DecidedBy)
		}
	})

	t.Run("approve another: it executes", func(t *testing.T) {
		goHome(t, ctx, base)
		res := ag.call(t, "write_file", map[string]string{"path": "new.txt", "content": "hello\n"})
		a := f.waitPending(t, 1)[0]
		step(t, ctx, "approve",
			chromedp.WaitVisible(chromedp.CSS(card(a.ID))),
			chromedp.Click(chromedp.CSS(card(a.ID)+" form.approve button")),
		)
		if r := result(t, res); !r.Success {
			t.Fatalf("approved call: %+v", r)
		}
		if data, err := os.ReadFile(filepath.Join(ag.dir, "new.txt")); string(data) != "hello\n" {
			t.Errorf("new.txt after approval: %q %v", data, err)
		}
	})

	t.Run("grant: the identical call runs without asking, until revoked", func(t *testing.T) {
		goHome(t, ctx, base)
		args := map[string]string{"path": "granted.txt", "content": "g\n"}
		res := ag.call(t, "write_file", args)
		a := f.waitPending(t, 1)[0]
		step(t, ctx, "approve with a grant",
			chromedp.WaitVisible(chromedp.CSS(card(a.ID))),
			chromedp.SetValue(chromedp.CSS(card(a.ID)+` input[name="minutes"]`), "5"),
			chromedp.Click(chromedp.CSS(card(a.ID)+" form.grant button")),
			chromedp.WaitVisible(chromedp.CSS("#grant-list .grant-item")),
		)
		if r := result(t, res); !r.Success {
			t.Fatalf("granted call: %+v", r)
		}
		before, _ := f.st.List(t.Context(), store.Filter{})
		if r := result(t, ag.call(t, "write_file", args)); !r.Success {
			t.Fatalf("the identical call under a grant: %+v", r)
		}
		after, _ := f.st.List(t.Context(), store.Filter{State: store.Pending})
		if len(after) != 0 {
			t.Errorf("the identical call asked again: %d pending", len(after))
		}
		all, _ := f.st.List(t.Context(), store.Filter{})
		if len(all) != len(before)+1 || all[0].Decision != "granted" {
			t.Errorf("the granted call is not recorded as granted: %+v", all[0])
		}
		waitJS(t, ctx, "the grant's use count", `document.querySelector('#grant-list .grant-item').textContent.includes('used 1')`)
		step(t, ctx, "revoke", chromedp.Click(chromedp.CSS("#grant-list .grant-item button")))
		waitJS(t, ctx, "the revoke", `(document.querySelector('.flash-ok') || {textContent: ''}).textContent.startsWith('Revoked grant')`)
		if n := eval[int](t, ctx, `document.querySelectorAll('#grant-list .grant-item').length`); n != 0 {
			t.Errorf("%d grants listed after the revoke", n)
		}
		if gs, _ := f.b.Grants(t.Context()); len(gs) != 0 {
			t.Fatalf("%d grants after the revoke", len(gs))
		}
		res = ag.call(t, "write_file", args)
		a = f.waitPending(t, 1)[0]
		if _, err := f.b.Decide(t.Context(), a.ID, "bob", false, "revoked"); err != nil {
			t.Fatal(err)
		}
		if r := result(t, res); r.Success {
			t.Fatalf("the call ran without asking after the revoke")
		}
	})

	t.Run("decided elsewhere: the page says who", func(t *testing.T) {
		goHome(t, ctx, base)
		res := ag.call(t, "write_file", map[string]string{"path": "x.txt", "content": "x"})
		a := f.waitPending(t, 1)[0]
		step(t, ctx, "open the request page", chromedp.Navigate(base+"/requests/"+a.ID), chromedp.WaitVisible(chromedp.CSS(card(a.ID)+" form.approve")))
		waitJS(t, ctx, "the live stream", `document.body.getAttribute('data-live') === 'on'`)
		if _, err := f.b.Decide(t.Context(), a.ID, "bob", false, "bob says no"); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the decision by bob", `(document.querySelector('`+card(a.ID)+` .decided') || {textContent: ''}).textContent.includes('DENIED by bob')`)
		if n := eval[int](t, ctx, `document.querySelectorAll('`+card(a.ID)+` form.approve').length`); n != 0 {
			t.Error("a decided request still offers Approve")
		}
		result(t, res)
	})

	t.Run("CSRF and cookie refusals from the page's origin", func(t *testing.T) {
		goHome(t, ctx, base)
		res := ag.call(t, "write_file", map[string]string{"path": "y.txt", "content": "y"})
		a := f.waitPending(t, 1)[0]
		codes := eval[[]int](t, ctx, `Promise.all([
			fetch('/requests/`+a.ID+`/approve', {method: 'POST'}).then(r => r.status),
			fetch('/requests/`+a.ID+`/approve', {method: 'POST', headers: {'X-CSRF-Token': 'forged'}}).then(r => r.status),
			fetch('/requests/`+a.ID+`/approve', {method: 'POST', credentials: 'omit',
				headers: {'X-CSRF-Token': localStorage.getItem('warden-csrf')}}).then(r => r.status),
		])`, chromedp.EvalAwaitPromise)
		if !slices.Equal(codes, []int{403, 403, 401}) {
			t.Errorf("refusals: %v, want [403 403 401]", codes)
		}
		// The token is in this origin's storage, and in no page a GET returns.
		leaks := eval[[]bool](t, ctx, `(async () => {
			const tok = localStorage.getItem('warden-csrf') || '';
			const pages = await Promise.all(['/', '/history', '/requests/`+a.ID+`', '/cards/`+a.ID+`', '/grants'].map(p => fetch(p).then(r => r.text())));
			return [tok.length === 43, document.documentElement.outerHTML.includes(tok)].concat(pages.map(p => p.includes(tok)));
		})()`, chromedp.EvalAwaitPromise)
		if !slices.Equal(leaks, []bool{true, false, false, false, false, false, false}) {
			t.Errorf("[stored token, in the DOM, in /, /history, /requests, /cards, /grants]: %v, want a stored token found nowhere else", leaks)
		}
		// Without the stored token (another browser profile, cleared
		// storage) a click decides nothing and the page says why.
		tok := eval[string](t, ctx, `localStorage.getItem('warden-csrf')`)
		eval[bool](t, ctx, `(localStorage.removeItem('warden-csrf'), true)`)
		step(t, ctx, "approve without the stored token",
			chromedp.Click(chromedp.CSS(card(a.ID)+" form.approve button")),
			chromedp.WaitVisible(chromedp.CSS("#notice")),
		)
		if txt := eval[string](t, ctx, `document.getElementById('notice').textContent`); !strings.Contains(txt, "sign in again") {
			t.Errorf("notice %q", txt)
		}
		// A wrong stored token: refused with the sign-in form, which forgets
		// it; signing in again stores the new session's token.
		eval[bool](t, ctx, `(localStorage.setItem('warden-csrf', '`+strings.Repeat("x", 43)+`'), true)`)
		step(t, ctx, "approve with a wrong stored token",
			chromedp.Click(chromedp.CSS(card(a.ID)+" form.approve button")),
			chromedp.WaitVisible(chromedp.CSS("#token")),
		)
		if txt := eval[string](t, ctx, `document.querySelector('.flash-error').textContent`); !strings.Contains(txt, "Sign in again") {
			t.Errorf("refusal says %q", txt)
		}
		if left := eval[string](t, ctx, `localStorage.getItem('warden-csrf') || ''`); left != "" {
			t.Errorf("the refused token is still stored: %q", left)
		}
		if got, _ := f.st.Get(t.Context(), a.ID); got.State != store.Pending {
			t.Fatalf("a refused POST decided the request: %s", got.State)
		}
		step(t, ctx, "sign in again", chromedp.SendKeys(chromedp.CSS("#token"), aliceTok), chromedp.Submit(chromedp.CSS("#token")),
			chromedp.WaitVisible(chromedp.CSS("#queue")))
		if fresh := eval[string](t, ctx, `localStorage.getItem('warden-csrf') || ''`); len(fresh) != 43 || fresh == tok {
			t.Errorf("after signing in again the stored token is %q (the old one was %q)", fresh, tok)
		}
		if _, err := f.b.Decide(t.Context(), a.ID, "bob", false, "cleanup"); err != nil {
			t.Fatal(err)
		}
		result(t, res)
	})

	t.Run("markup in arguments shows as text", func(t *testing.T) {
		goHome(t, ctx, base)
		evil := `<script>window.__xss=1</script>"><img src=x onerror="window.__xss=2">`
		res := ag.call(t, "write_file", map[string]string{"path": "x" + strings.ReplaceAll(evil, "/", "_") + ".txt", "content": evil + "\n"})
		a := f.waitPending(t, 1)[0]
		step(t, ctx, "the request shows up", chromedp.WaitVisible(chromedp.CSS(card(a.ID))))
		step(t, ctx, "the request page", chromedp.Navigate(base+"/requests/"+a.ID), chromedp.WaitVisible(chromedp.CSS(card(a.ID))))
		injected := eval[int](t, ctx, `document.querySelectorAll('main img, main script, [onerror]').length + (window.__xss ? 100 : 0)`)
		if injected != 0 {
			t.Errorf("markup from the arguments became elements or ran (%d)", injected)
		}
		if txt := eval[string](t, ctx, `document.querySelector('`+card(a.ID)+` .risk').textContent`); !strings.Contains(txt, "+<script>window.__xss=1</script>") {
			t.Errorf("the diff does not show the markup as text:\n%s", txt)
		}
		step(t, ctx, "deny it", chromedp.SendKeys(chromedp.CSS(card(a.ID)+` input[name="reason"]`), "no markup"),
			chromedp.Click(chromedp.CSS(card(a.ID)+" button.no")), chromedp.WaitVisible(chromedp.CSS(".flash-ok")))
		result(t, res)
	})

	t.Run("phone width and screenshots", func(t *testing.T) {
		goHome(t, ctx, base)
		// Workspaces with short names, for the screenshots.
		ws := func(name string) string {
			dir, err := os.MkdirTemp("", name+"-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
		ag := newAgentIn(t, f.b, "sess-7f3a", ws("acme-api"))
		if err := os.WriteFile(filepath.Join(ag.dir, "notes.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var results []<-chan tools.Result
		results = append(results, ag.call(t, "edit_file", map[string]string{"path": "notes.txt", "old_str": "beta\n", "new_str": "beta\nbeta-two\n"}))
		f.waitPending(t, 1)
		results = append(results, ag.call(t, "run_command", map[string]string{"command": "rm -rf build && make test | tee /tmp/test.log"}))
		f.waitPending(t, 2)
		other := newAgentIn(t, f.b, "sess-91c2", ws("billing"))
		results = append(results, other.call(t, "write_file", map[string]string{"path": "src/server/config.go",
			"content": "package server\n\n// Port is where the server listens.\nconst Port = 8443\n\nvar Debug = false\n"}))
		pend := f.waitPending(t, 3)
		waitJS(t, ctx, "three cards", `document.querySelectorAll('#queue .card').length === 3`)
		shot := func(name string, w, h int64) {
			step(t, ctx, "viewport "+name, chromedp.EmulateViewport(w, h), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#queue .card")))
			// No horizontal scrolling of the page: long arguments scroll inside their box.
			if sw, iw := eval[int](t, ctx, `document.documentElement.scrollWidth`), eval[int](t, ctx, `window.innerWidth`); sw > iw {
				t.Errorf("%s: the page scrolls sideways (%d px wide in a %d px window)", name, sw, iw)
			}
			if *screenshots == "" {
				return
			}
			c, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if err := writeAtomic(filepath.Join(*screenshots, name), png); err != nil {
				t.Fatal(err)
			}
		}
		shot("supervisor-queue.png", 1280, 900)
		shot("supervisor-queue-phone.png", 390, 844)
		shot("supervisor-queue-360.png", 360, 740)
		if *screenshots != "" {
			os.Remove(filepath.Join(*screenshots, "supervisor-queue-360.png"))
		}
		for _, a := range pend {
			f.b.Decide(t.Context(), a.ID, "bob", false, "not during the freeze")
		}
		for _, r := range results {
			result(t, r)
		}
		step(t, ctx, "history", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/history?event=approval"),
			chromedp.WaitVisible(chromedp.CSS("#chain")))
		if txt := eval[string](t, ctx, `document.getElementById('chain').textContent`); !strings.Contains(txt, "Audit hash chain OK") {
			t.Errorf("history chain status: %s", txt)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('table.history tbody tr').length`); n < 8 {
			t.Errorf("history shows %d approval rows, want at least 8", n)
		}
		if *screenshots != "" {
			c, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := writeAtomic(filepath.Join(*screenshots, "supervisor-history.png"), png); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("sign out forgets the stored token", func(t *testing.T) {
		goHome(t, ctx, base)
		if eval[string](t, ctx, `localStorage.getItem('warden-csrf') || ''`) == "" {
			t.Fatal("no stored token while signed in")
		}
		step(t, ctx, "sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.CSS("#token")))
		if left := eval[string](t, ctx, `localStorage.getItem('warden-csrf') || ''`); left != "" {
			t.Errorf("the token is still stored after sign-out")
		}
		if loc := eval[string](t, ctx, `location.pathname`); loc != "/signin" {
			t.Errorf("after sign-out the page is %s", loc)
		}
	})
}

func writeAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	os.Chmod(tmp.Name(), 0o644)
	return os.Rename(tmp.Name(), name)
}

// BenchmarkPageLatency measures, in headless chromium, the time from a
// request being stored (an agent's supervised write_file through the
// engine) to its card showing on the queue page, and from the click on
// Approve (the form's submit event) to the waiting tool call returning;
// both as wall-clock times on this machine. poll is the event stream's
// store poll (100 ms is warden serve's default).
//
//	go test -run '^$' -bench PageLatency -benchtime 50x ./internal/server/
func BenchmarkPageLatency(b *testing.B) {
	for _, poll := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		b.Run("poll="+poll.String(), func(b *testing.B) { benchLatency(b, poll) })
	}
}

const installObserver = `(() => {
	window.__seen = window.__seen || {};
	const q = document.getElementById('queue');
	new MutationObserver(() => {
		const now = performance.timeOrigin + performance.now();
		q.querySelectorAll('.card').forEach(c => { if (!(c.dataset.id in window.__seen)) window.__seen[c.dataset.id] = now; });
	}).observe(q, {childList: true});
	document.addEventListener('submit', () => sessionStorage.setItem('submitAt', String(performance.timeOrigin + performance.now())), true);
	sessionStorage.removeItem('submitAt');
	window.__page = true;
	return true;
})()`

func benchLatency(b *testing.B, poll time.Duration) {
	f := webFixture(b, poll)
	ctx := newChrome(b, 1280, 900)
	signInBrowser(b, ctx, f.srv.URL, aliceTok)
	ag := newAgent(b, f.b, "bench")
	var show, resume []time.Duration
	for i := 0; b.Loop(); i++ {
		waitJS(b, ctx, "the queue page", `!window.__page && document.getElementById('queue') && document.body.getAttribute('data-live') === 'on'`)
		eval[bool](b, ctx, installObserver)
		raw := fmt.Appendf(nil, `{"path":"f%d.txt","content":"x\n"}`, i)
		done := make(chan time.Time, 1)
		go func() {
			if r := ag.eng.Call(context.Background(), "write_file", raw); !r.Success {
				b.Errorf("approved call failed: %+v", r)
			}
			done <- time.Now()
		}()
		a := f.waitPending(b, 1)[0]
		waitJS(b, ctx, "the card", `window.__seen['`+a.ID+`']`)
		seen := eval[float64](b, ctx, `window.__seen['`+a.ID+`']`)
		show = append(show, time.Duration(seen*1e6)-time.Duration(a.CreatedAt.UnixNano()))
		step(b, ctx, "approve", chromedp.Click(chromedp.CSS(card(a.ID)+" form.approve button")))
		var end time.Time
		select {
		case end = <-done:
		case <-time.After(15 * time.Second):
			b.Fatal("the approved call did not return")
		}
		waitJS(b, ctx, "the queue page after the approval", `!window.__page && sessionStorage.getItem('submitAt')`)
		clicked := eval[float64](b, ctx, `Number(sessionStorage.getItem('submitAt'))`)
		resume = append(resume, time.Duration(end.UnixNano())-time.Duration(clicked*1e6))
	}
	b.StopTimer()
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		p := func(q float64) float64 { return float64(d[min(len(d)-1, int(q*float64(len(d))))]) / 1e6 }
		b.ReportMetric(p(0.5), name+"-median-ms")
		b.ReportMetric(p(0.99), name+"-p99-ms")
	}
	report("show", show)
	report("resume", resume)
	b.ReportMetric(0, "ns/op")
}
