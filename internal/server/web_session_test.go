package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

// handlerBrowser talks to a handler in memory, so a test can run in a
// synctest bubble, where the session clock is the bubble's. It keeps every
// cookie it was given and sends it back whatever its Max-Age, as a client
// replaying a stolen cookie would: expiry must hold on the server.
type handlerBrowser struct {
	t       *testing.T
	h       http.Handler
	cookies map[string]string
}

// pageOrigin is the address the in-memory requests reach: the Host and
// Origin checks compare it with the connection's local address.
const pageOrigin = "http://127.0.0.1:8080"

var pageAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}

func (b *handlerBrowser) do(method, path string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, pageOrigin+path, body)
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(pageAddr)))
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", pageOrigin)
	}
	for name, value := range b.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.Value != "" {
			b.cookies[c.Name] = c.Value
		}
	}
	return rec.Code, rec.Body.String()
}

// signedInPage reports whether the queue page (not the sign-in form) came
// back.
func (b *handlerBrowser) signedInPage() bool {
	b.t.Helper()
	code, page := b.do("GET", "/", nil)
	return code == http.StatusOK && !strings.Contains(page, `name="token"`)
}

// A session ends after SessionIdle without use, and SessionMax after
// sign-in however much it is used: the page asks to sign in again.
func TestWebSessionExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Over hours of bubble time, every periodic read of the store is a
		// real query: slow polls and sweeps keep the test fast (under
		// -race a 50 ms poll was 36,000 queries per simulated half hour).
		st, err := store.OpenSQLite(":memory:", &store.Options{Poll: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		b, err := approval.New(t.Context(), approval.Options{Store: st, Supervisors: []string{"alice"}, Remote: true})
		if err != nil {
			t.Fatal(err)
		}
		// The event stream polls the store; over 12 hours of bubble time a
		// slow poll keeps the test fast.
		s, err := New(Options{Broker: b, Tokens: map[string]string{aliceTok: "alice"}, Poll: time.Hour, Heartbeat: time.Hour, Sweep: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		signIn := func() *handlerBrowser {
			br := &handlerBrowser{t: t, h: s.Handler(), cookies: map[string]string{}}
			_, page := br.do("GET", "/signin", nil)
			m := hiddenCSRF.FindStringSubmatch(page)
			if m == nil {
				t.Fatalf("no form token on the sign-in page:\n%s", page)
			}
			if code, page := br.do("POST", "/signin", url.Values{"csrf": {m[1]}, "token": {aliceTok}}); code != http.StatusOK || handoffCSRF.FindString(page) == "" {
				t.Fatalf("sign-in: %d\n%s", code, page)
			}
			if !br.signedInPage() {
				t.Fatal("not signed in right after signing in")
			}
			return br
		}

		idle := signIn()
		time.Sleep(SessionIdle - time.Second)
		if !idle.signedInPage() {
			t.Error("the session ended before SessionIdle")
		}
		time.Sleep(SessionIdle + time.Second) // unused for longer than SessionIdle
		if idle.signedInPage() {
			t.Errorf("the session outlived %s without use", SessionIdle)
		}

		busy := signIn()
		start := time.Now()
		for time.Since(start) < SessionMax-SessionIdle/2 {
			time.Sleep(SessionIdle / 2)
			if !busy.signedInPage() {
				t.Fatalf("a session in use ended after %s, before SessionMax", time.Since(start))
			}
		}
		time.Sleep(SessionIdle/2 + time.Second)
		if busy.signedInPage() {
			t.Errorf("a session in use outlived SessionMax (%s)", SessionMax)
		}
	})
}
