package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TokenEnvPrefix names the environment variables holding the bearer tokens
// of MCP clients over HTTP: WARDEN_MCP_TOKEN_<CLIENT>=<token>.
const TokenEnvPrefix = "WARDEN_MCP_TOKEN_"

// MinTokenLen is the shortest bearer token accepted.
const MinTokenLen = 20

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// Server returns the MCP server of the workspace named in the path
	// /mcp/{workspace}, or nil when there is none (404). Required. It is
	// called once per workspace; build the server with NewServer and
	// ServerOptions.ForSession, so each session gets its own audit id.
	Server func(workspace string) *sdk.Server
	// Tokens maps each client's name to its bearer token (TokensFromEnv).
	// A client is bound to the sessions it opened. Empty: every request
	// is refused.
	Tokens map[string]string
	// OnAuthFailure, if set, is told about each refused request (for the
	// audit trail): the HTTP status and what was wrong.
	OnAuthFailure func(ctx context.Context, status int, what string)
	// SessionTimeout closes a session idle this long; default 30 minutes.
	SessionTimeout time.Duration
	// Logger receives human notes; nil discards them.
	Logger *slog.Logger
}

// NewHTTPHandler serves MCP over streamable HTTP at /mcp/{workspace}:
// every request needs "Authorization: Bearer <token>" of a configured
// client (compared in constant time), a session is bound to the client
// that opened it, and requests whose Host is not loopback are refused when
// they arrive on loopback (DNS rebinding). Mount it at "/mcp/".
func NewHTTPHandler(o HTTPOptions) (http.Handler, error) {
	if o.Server == nil {
		return nil, errors.New("mcp http handler: Server is required")
	}
	for name, tok := range o.Tokens {
		if len(tok) < MinTokenLen {
			return nil, fmt.Errorf("mcp http handler: the token of client %q is %d characters; use at least %d random ones", name, len(tok), MinTokenLen)
		}
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &httpHandler{o: o, log: log, byWorkspace: map[string]http.Handler{}}
	for name, tok := range o.Tokens {
		h.tokens = append(h.tokens, clientToken{name: name, sum: sha256.Sum256([]byte(tok))})
	}
	sort.Slice(h.tokens, func(i, j int) bool { return h.tokens[i].name < h.tokens[j].name })
	mw := auth.RequireBearerToken(h.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return h.refusals(mw(http.HandlerFunc(h.route))), nil
}

type clientToken struct {
	name string
	sum  [32]byte
}

type httpHandler struct {
	o      HTTPOptions
	log    *slog.Logger
	tokens []clientToken

	mu          sync.Mutex
	byWorkspace map[string]http.Handler
}

// verify finds the client whose token is tok. Every configured token is
// compared, in constant time, whatever matches.
func (h *httpHandler) verify(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(tok))
	found := ""
	for _, c := range h.tokens {
		if subtle.ConstantTimeCompare(sum[:], c.sum[:]) == 1 {
			found = c.name
		}
	}
	if found == "" {
		return nil, fmt.Errorf("%w: not the token of any configured MCP client", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: found}, nil
}

var workspaceName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// WorkspaceFromPath returns the workspace named by a path /mcp/{workspace}
// (one trailing slash allowed), or false.
func WorkspaceFromPath(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/mcp/")
	if !ok {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "/")
	if !workspaceName.MatchString(rest) {
		return "", false
	}
	return rest, true
}

func (h *httpHandler) route(w http.ResponseWriter, r *http.Request) {
	ws, ok := WorkspaceFromPath(r.URL.Path)
	if !ok {
		http.Error(w, "not found: the MCP endpoint is /mcp/{workspace}", http.StatusNotFound)
		return
	}
	h.mu.Lock()
	sh, ok := h.byWorkspace[ws]
	if !ok {
		if srv := h.o.Server(ws); srv != nil {
			// One streamable handler per workspace, so a session opened
			// under one workspace cannot be reached through another.
			sh = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
				&sdk.StreamableHTTPOptions{SessionTimeout: h.o.SessionTimeout, Logger: h.log})
			h.byWorkspace[ws] = sh
		}
	}
	h.mu.Unlock()
	if sh == nil {
		http.Error(w, fmt.Sprintf("not found: no workspace %q", ws), http.StatusNotFound)
		return
	}
	sh.ServeHTTP(w, r)
}

// refusals tells OnAuthFailure and the log about each 401 and 403.
func (h *httpHandler) refusals(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, authMsg: authMessage(r)}
		next.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized || sw.status == http.StatusForbidden {
			what := fmt.Sprintf("%s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
			h.log.Warn("mcp request refused", "status", sw.status, "request", what)
			if h.o.OnAuthFailure != nil {
				h.o.OnAuthFailure(r.Context(), sw.status, what)
			}
		}
	})
}

// statusWriter records the status of a response; Unwrap keeps
// http.ResponseController (flushing an SSE stream) working.
//
// A 401 is answered in warden's words, with a WWW-Authenticate header
// naming the error (RFC 6750) and no authorization server: a client shows
// the message rather than start an OAuth flow that cannot succeed (warden
// takes only the static tokens of WARDEN_MCP_TOKEN_<CLIENT>).
type statusWriter struct {
	http.ResponseWriter
	status  int
	authMsg string
	muted   bool // the body of a 401 is ours; what the handler writes is dropped
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	if code == http.StatusUnauthorized && !s.muted {
		s.muted = true
		h := s.ResponseWriter.Header()
		h.Del("WWW-Authenticate")
		errCode := "invalid_token"
		if strings.HasPrefix(s.authMsg, "no bearer token") {
			errCode = "invalid_request"
		}
		h.Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="warden", error=%q, error_description=%q`, errCode, s.authMsg))
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Del("Content-Length")
		s.ResponseWriter.WriteHeader(code)
		fmt.Fprintln(s.ResponseWriter, "warden: "+s.authMsg)
		return
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.muted {
		return len(p), nil
	}
	return s.ResponseWriter.Write(p)
}

// authMessage is what a refused client is told: which token warden wants
// and where it comes from.
func authMessage(r *http.Request) string {
	if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return "no bearer token: this MCP endpoint needs \"Authorization: Bearer <token>\" with the token of a client configured in warden serve's environment (" + TokenEnvPrefix + "<CLIENT>); it does no OAuth"
	}
	return "the bearer token is not that of any MCP client configured in warden serve's environment (" + TokenEnvPrefix + "<CLIENT>); check the client's token (warden does no OAuth)"
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// TokensFromEnv reads the clients' bearer tokens from environ ("K=V"
// entries): WARDEN_MCP_TOKEN_ALICE=... is client "alice". A token shorter
// than MinTokenLen is an error naming its variable.
func TokensFromEnv(environ []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, TokenEnvPrefix) {
			continue
		}
		name := strings.ToLower(strings.TrimPrefix(k, TokenEnvPrefix))
		if name == "" {
			return nil, fmt.Errorf("%s: the variable names no client (want %sNAME)", k, TokenEnvPrefix)
		}
		if len(v) < MinTokenLen {
			return nil, fmt.Errorf("%s: the token is %d characters; use at least %d random ones", k, len(v), MinTokenLen)
		}
		out[name] = v
	}
	return out, nil
}
