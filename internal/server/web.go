package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The supervisor page: server-rendered html/template pages and a little
// plain JavaScript, all embedded; see doc.go for its threat model.

//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// Session lifetimes of the supervisor page.
const (
	// SessionIdle ends a session nobody used for this long.
	SessionIdle = time.Hour
	// SessionMax ends a session this long after sign-in, used or not.
	SessionMax = 12 * time.Hour
	// maxSessions bounds the session map; the oldest is dropped beyond it.
	maxSessions = 1024

	sessionCookie = "warden_session"
	signinCookie  = "warden_signin"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// ContentSecurityPolicy is sent with every page: no inline script or style,
// nothing from elsewhere, no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'"

type webSession struct {
	supervisor string
	csrf       string
	created    time.Time
	seen       time.Time
	flash      []flash
}

type flash struct {
	Kind string // ok | error
	Text string
}

// web holds the page's templates and its signed-in sessions.
type web struct {
	s     *Server
	pages map[string]*template.Template
	now   func() time.Time

	mu       sync.Mutex
	sessions map[[sha256.Size]byte]*webSession
}

// registerWeb mounts the supervisor page on s's mux.
func (s *Server) registerWeb() {
	w := &web{s: s, now: time.Now, sessions: map[[sha256.Size]byte]*webSession{}}
	w.pages = parsePages()
	static, _ := fs.Sub(webFS, "web/static")
	files := http.FileServerFS(static)
	m := s.mux
	m.Handle("GET /static/", w.headers(http.StripPrefix("/static/", cacheStatic(files))))
	m.Handle("GET /signin", w.headers(http.HandlerFunc(w.signinPage)))
	m.Handle("POST /signin", w.headers(http.HandlerFunc(w.signin)))
	m.Handle("POST /signout", w.headers(w.form(w.signout)))
	m.Handle("GET /{$}", w.headers(w.page(w.queue)))
	m.Handle("GET /requests/{id}", w.headers(w.page(w.request)))
	m.Handle("GET /cards/{id}", w.headers(w.api(w.card)))
	m.Handle("GET /history", w.headers(w.page(w.history)))
	m.Handle("GET /events", w.headers(w.api(s.hub.serve)))
	m.Handle("POST /requests/{id}/approve", w.headers(w.form(w.decide(true))))
	m.Handle("POST /requests/{id}/deny", w.headers(w.form(w.decide(false))))
	w.registerGrants(m)
	w.registerCheckpoints(m)
}

// cacheStatic serves the static files (no directory listings), revalidated
// on each load so an upgraded warden's page never runs an old script.
func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// headers sets the security headers of every page response.
func (w *web) headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hd := rw.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		if hd.Get("Cache-Control") == "" {
			hd.Set("Cache-Control", "no-store")
		}
		h.ServeHTTP(rw, r)
	})
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // rand.Read does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func sessionKey(id string) [sha256.Size]byte { return sha256.Sum256([]byte(id)) }

// newSession signs supervisor in and returns the cookie's value.
func (w *web) newSession(supervisor string) (string, *webSession) {
	id := randomToken()
	now := w.now()
	sess := &webSession{supervisor: supervisor, csrf: randomToken(), created: now, seen: now}
	w.mu.Lock()
	defer w.mu.Unlock()
	var oldestKey [sha256.Size]byte
	var oldest time.Time
	for k, s := range w.sessions {
		if w.expired(s, now) {
			delete(w.sessions, k)
			continue
		}
		if oldest.IsZero() || s.seen.Before(oldest) {
			oldest, oldestKey = s.seen, k
		}
	}
	if len(w.sessions) >= maxSessions {
		delete(w.sessions, oldestKey)
	}
	w.sessions[sessionKey(id)] = sess
	return id, sess
}

func (w *web) expired(s *webSession, now time.Time) bool {
	return now.Sub(s.seen) > SessionIdle || now.Sub(s.created) > SessionMax
}

// session returns the live session the request's cookie names, or nil. The
// map is keyed by the SHA-256 of the cookie, so lookups leak nothing
// useful about live ids.
func (w *web) session(r *http.Request) *webSession {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) != 43 {
		return nil
	}
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	k := sessionKey(c.Value)
	s := w.sessions[k]
	if s == nil {
		return nil
	}
	if w.expired(s, now) {
		delete(w.sessions, k)
		return nil
	}
	s.seen = now
	return s
}

func (w *web) endSession(r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		w.mu.Lock()
		delete(w.sessions, sessionKey(c.Value))
		w.mu.Unlock()
	}
}

func (w *web) addFlash(s *webSession, kind, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(s.flash) < 8 {
		s.flash = append(s.flash, flash{kind, text})
	}
}

func (w *web) takeFlash(s *webSession) []flash {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := s.flash
	s.flash = nil
	return f
}

func setCookie(rw http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(rw, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	})
}

// sameOrigin refuses requests a browser marks as coming from another site:
// Sec-Fetch-Site other than same-origin (or none: typed by the user), or an
// Origin that is not this server. Requests without either header (curl)
// pass here; the CSRF token still guards them.
//
// Under Referrer-Policy no-referrer browsers send "Origin: null" with form
// posts; null is accepted only when Sec-Fetch-Site says same-origin (a
// sandboxed frame elsewhere also sends null, but as cross-site).
func sameOrigin(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if origin == "null" {
		return site == "same-origin"
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

func tokenEqual(a, b string) bool {
	return a != "" && len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

type pageHandler func(rw http.ResponseWriter, r *http.Request, s *webSession)

// page serves a page to a signed-in supervisor; anyone else is sent to the
// sign-in page.
func (w *web) page(h pageHandler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s := w.session(r)
		if s == nil {
			next := "/"
			if r.URL.Path != "/" {
				next = r.URL.Path
			}
			http.Redirect(rw, r, "/signin?next="+url.QueryEscape(next), http.StatusSeeOther)
			return
		}
		h(rw, r, s)
	})
}

// api serves the page's own data (the card fragments, the event stream)
// to a signed-in supervisor; anyone else gets 401.
func (w *web) api(h authedHandler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s := w.session(r)
		if s == nil {
			http.Error(rw, "sign in first", http.StatusUnauthorized)
			return
		}
		h(rw, r, s.supervisor)
	})
}

// form guards every state-changing POST: a live session, a same-origin
// request, and the session's CSRF token in the form field or the
// X-CSRF-Token header, compared in constant time.
func (w *web) form(h pageHandler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(rw, r.Body, MaxBody)
		s := w.session(r)
		if s == nil {
			w.s.b.AuditAuthFailure(r.Context(), http.StatusUnauthorized, r.Method+" "+r.URL.Path+" from "+r.RemoteAddr+": no valid session cookie")
			http.Error(rw, "sign in first: no valid session", http.StatusUnauthorized)
			return
		}
		if !sameOrigin(r) {
			w.s.b.AuditAuthFailure(r.Context(), http.StatusForbidden, r.Method+" "+r.URL.Path+" from "+r.RemoteAddr+": cross-origin form")
			http.Error(rw, "refused: the form came from another site", http.StatusForbidden)
			return
		}
		tok := r.Header.Get(csrfHeader)
		if tok == "" {
			if err := r.ParseForm(); err != nil {
				http.Error(rw, "invalid form: "+err.Error(), http.StatusBadRequest)
				return
			}
			tok = r.PostForm.Get(csrfField)
		}
		if !tokenEqual(tok, s.csrf) {
			w.s.b.AuditAuthFailure(r.Context(), http.StatusForbidden, r.Method+" "+r.URL.Path+" from "+r.RemoteAddr+": missing or wrong CSRF token")
			// The sign-in page: its script forgets the stored token, and
			// signing in again is the only way to get a new one.
			w.renderSignin(rw, r, http.StatusForbidden, "Refused: this browser did not send the decision token of your session. Sign in again.")
			return
		}
		h(rw, r, s)
	})
}

// signinPage shows the sign-in form with a fresh double-submit token, so a
// sign-in cannot be forged from another site either. It shows it to a
// signed-in browser too: signing in again is how a browser that lost its
// stored CSRF token gets a new one (the page's script forgets the stored
// token on this page).
func (w *web) signinPage(rw http.ResponseWriter, r *http.Request) {
	w.renderSignin(rw, r, http.StatusOK, "")
}

func (w *web) renderSignin(rw http.ResponseWriter, r *http.Request, code int, msg string) {
	tok := randomToken()
	setCookie(rw, r, signinCookie, tok, 600)
	w.render(rw, code, "signin.html", map[string]any{
		"CSRF": tok, "Error": msg, "Next": safeNext(r.FormValue("next")),
	})
}

func (w *web) signin(rw http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(rw, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		http.Error(rw, "invalid form: "+err.Error(), http.StatusBadRequest)
		return
	}
	c, err := r.Cookie(signinCookie)
	if err != nil || !sameOrigin(r) || !tokenEqual(r.PostForm.Get(csrfField), c.Value) {
		w.s.b.AuditAuthFailure(r.Context(), http.StatusForbidden, "POST /signin from "+r.RemoteAddr+": missing or wrong sign-in form token")
		w.renderSignin(rw, r, http.StatusForbidden, "The sign-in form expired or came from another site; try again.")
		return
	}
	id, why := w.s.supervisor("Bearer " + r.PostForm.Get("token"))
	if id == "" {
		w.s.b.AuditAuthFailure(r.Context(), http.StatusUnauthorized, "POST /signin from "+r.RemoteAddr+": "+why)
		w.s.log.Warn("refused a sign-in to the supervisor page", "remote", r.RemoteAddr, "why", why)
		w.renderSignin(rw, r, http.StatusUnauthorized, "Unknown token.")
		return
	}
	w.endSession(r) // never keep a session id chosen before sign-in
	sid, sess := w.newSession(id)
	setCookie(rw, r, signinCookie, "", -1)
	setCookie(rw, r, sessionCookie, sid, int(SessionMax/time.Second))
	w.s.log.Info("supervisor signed in to the page", "supervisor", id, "remote", r.RemoteAddr)
	// The only response that ever carries the session's CSRF token: it
	// answers a POST that needed the supervisor's secret token, so the
	// cookie alone (replayed by a server on another port of this host,
	// which the browser sent it to) never yields it. The page's script
	// keeps it in the origin's localStorage and goes on to next.
	w.render(rw, http.StatusOK, "signedin.html", map[string]any{
		"Title": "Signed in", "HandoffCSRF": sess.csrf, "Next": safeNext(r.PostForm.Get("next")),
	})
}

func (w *web) signout(rw http.ResponseWriter, r *http.Request, s *webSession) {
	w.endSession(r)
	setCookie(rw, r, sessionCookie, "", -1)
	http.Redirect(rw, r, "/signin", http.StatusSeeOther)
}

// safeNext keeps a redirect target on this site: "/" or a request page.
func safeNext(next string) string {
	if next == "/history" {
		return next
	}
	if id, ok := strings.CutPrefix(next, "/requests/"); ok && idPattern.MatchString(id) {
		return next
	}
	return "/"
}
