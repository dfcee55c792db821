package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// MaxBody is the largest request body accepted.
const MaxBody = 8 << 10

// Options configure a Server. Broker and Tokens are required.
type Options struct {
	Broker *approval.Broker
	// Tokens maps each bearer token to the supervisor id it proves.
	Tokens map[string]string
	Logger *slog.Logger
	// Poll is how often the event stream re-reads the store besides the
	// store's own wake-ups (Store.Watch); default 2 s.
	Poll time.Duration
	// Sweep is how often requests whose callers are gone (their lease ran
	// out) are cancelled; default 2 s.
	Sweep time.Duration
	// Heartbeat is the SSE comment interval; default 15 s.
	Heartbeat time.Duration
	// Origins names the hosts and browser origins the server answers
	// besides itself; the zero value is this server alone (see
	// OriginPolicy).
	Origins OriginPolicy
	// Checkpoints, when set, gives the page its checkpoints view and its
	// Undo button (web_checkpoints.go).
	Checkpoints CheckpointSource
}

type credential struct {
	digest [sha256.Size]byte
	id     string
}

// Server is the approvals API.
type Server struct {
	b     *approval.Broker
	creds []credential
	log   *slog.Logger
	hub   *hub
	mux   *http.ServeMux
	guard *originGuard
	cps   CheckpointSource
	view  *pendingView
}

// SupervisorTokens reads each configured supervisor's token: from its
// token_file (refused, as an error, unless only its owner can read it),
// else from the environment variable its token_env names. A supervisor
// with neither set cannot use the API; it is listed in missing.
func SupervisorTokens(a *config.Approval) (tokens map[string]string, missing []string, err error) {
	tokens = map[string]string{}
	for _, s := range a.Supervisors {
		tok, err := approval.SupervisorToken(s, os.Getenv)
		if err != nil {
			return nil, nil, err
		}
		if tok == "" {
			missing = append(missing, s.ID)
			continue
		}
		tokens[tok] = s.ID
	}
	if a.SupervisorID != "" && !contains(a.Supervisors, a.SupervisorID) {
		missing = append(missing, a.SupervisorID)
	}
	return tokens, missing, nil
}

func contains(ss []config.Supervisor, id string) bool {
	for _, s := range ss {
		if s.ID == id {
			return true
		}
	}
	return false
}

// New returns the API; Close stops its event stream.
func New(o Options) (*Server, error) {
	if o.Broker == nil {
		return nil, errors.New("server needs an approval broker")
	}
	if len(o.Tokens) == 0 {
		return nil, errors.New("no supervisor has an API token: set token_env in [[security.approval.supervisors]] and export that variable")
	}
	s := &Server{b: o.Broker, log: o.Logger, mux: http.NewServeMux(), cps: o.Checkpoints}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	guard, err := newOriginGuard(o.Origins, s.refusedOrigin)
	if err != nil {
		return nil, err
	}
	s.guard = guard
	sups := o.Broker.Supervisors()
	for tok, id := range o.Tokens {
		if len(tok) < 16 {
			return nil, fmt.Errorf("supervisor %s: token shorter than 16 characters", id)
		}
		if !slicesContains(sups, id) {
			return nil, fmt.Errorf("token for %q, who is not a configured supervisor", id)
		}
		s.creds = append(s.creds, credential{sha256.Sum256([]byte(tok)), id})
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Sweep <= 0 {
		o.Sweep = 2 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	s.view = newPendingView()
	head, err := s.view.load(context.Background(), o.Broker.Store())
	if err != nil {
		return nil, err
	}
	ghead, err := o.Broker.Store().GrantHead(context.Background())
	if err != nil {
		return nil, err
	}
	s.hub = newHub(o.Broker.Store(), s.view, head, ghead, o.Poll, o.Heartbeat, o.Sweep, s.log)
	s.registerWeb()
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.Handle("GET /api/approvals", s.auth(s.list))
	s.mux.Handle("GET /api/approvals/stream", s.auth(s.hub.serve))
	s.mux.Handle("GET /api/approvals/{id}", s.auth(s.show))
	s.mux.Handle("POST /api/approvals/{id}/approve", s.auth(s.decide(true)))
	s.mux.Handle("GET /api/approvals/{id}/always", s.auth(s.always))
	s.mux.Handle("POST /api/approvals/{id}/deny", s.auth(s.decide(false)))
	s.mux.Handle("GET /api/grants", s.auth(s.grants))
	s.mux.Handle("POST /api/grants/{id}/revoke", s.auth(s.revoke))
	s.mux.Handle("/api/", s.auth(func(w http.ResponseWriter, r *http.Request, _ string) {
		writeErr(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	}))
	return s, nil
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Handler is the API's http.Handler, behind the Host and Origin checks.
func (s *Server) Handler() http.Handler { return s.guard.wrap(s.mux) }

// Guard puts h behind the same Host and Origin checks as Handler: for
// other endpoints served next to it (MCP at /mcp/).
func (s *Server) Guard(h http.Handler) http.Handler { return s.guard.wrap(h) }

// refusedOrigin audits and logs a request refused for its Host or Origin.
func (s *Server) refusedOrigin(r *http.Request, why string) {
	what := fmt.Sprintf("%s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, why)
	s.b.AuditAuthFailure(r.Context(), http.StatusForbidden, what)
	s.log.Warn("refused a request for its Host or Origin", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "host", r.Host, "origin", r.Header.Get("Origin"))
}

// Close ends every event stream and stops reading the store for them.
func (s *Server) Close() { s.hub.close() }

type authedHandler func(w http.ResponseWriter, r *http.Request, supervisor string)

// auth resolves the bearer token to a supervisor, or answers 401.
func (s *Server) auth(h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		id, why := s.supervisor(r.Header.Get("Authorization"))
		if id == "" {
			s.b.AuditAuthFailure(r.Context(), http.StatusUnauthorized, fmt.Sprintf("%s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, why))
			s.log.Warn("refused an API call", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "why", why)
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
			writeErr(w, http.StatusUnauthorized, "a supervisor's bearer token is required: "+why)
			return
		}
		h(w, r, id)
	})
}

// supervisor compares the token against every credential, without
// stopping at a match, so timing says nothing about which one matched.
func (s *Server) supervisor(header string) (id, why string) {
	scheme, tok, ok := strings.Cut(header, " ")
	if header == "" {
		return "", "no Authorization header"
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", "Authorization is not a Bearer token"
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	for _, c := range s.creds {
		if subtle.ConstantTimeCompare(d[:], c.digest[:]) == 1 {
			id = c.id
		}
	}
	if id == "" {
		return "", "unknown token"
	}
	return id, ""
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// idPrefixPattern is what the API takes for an id: the whole id, or a
// prefix of at least store.MinIDPrefix characters (the page shows 8).
var idPrefixPattern = regexp.MustCompile(`^[0-9a-f]{6,32}$`)

// expandID turns the path's {id}, a whole id or a unique prefix of one,
// into the id of a request (or, with grant, of a grant). Otherwise it
// answers 404 (no match), 400 (an ambiguous prefix, naming some matches)
// and returns false.
func (s *Server) expandID(w http.ResponseWriter, r *http.Request, grant bool) (string, bool) {
	id := r.PathValue("id")
	if !idPrefixPattern.MatchString(id) {
		if grant {
			writeErr(w, http.StatusNotFound, "no such grant")
		} else {
			writeErr(w, http.StatusNotFound, "no such approval request")
		}
		return "", false
	}
	expand := s.b.Store().ExpandID
	if grant {
		expand = s.b.Store().ExpandGrantID
	}
	full, err := expand(r.Context(), id)
	if err != nil {
		if errors.Is(err, store.ErrAmbiguous) {
			writeErr(w, http.StatusBadRequest, err.Error())
		} else {
			writeStoreErr(w, err)
		}
		return "", false
	}
	return full, true
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, _ string) {
	var f store.Filter
	q := r.URL.Query()
	if st := q.Get("status"); st != "" {
		state, err := store.ParseState(st)
		if err != nil {
			writeErr(w, http.StatusBadRequest, err.Error())
			return
		}
		f.State = state
	}
	f.Limit = 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			writeErr(w, http.StatusBadRequest, "limit must be 1..1000")
			return
		}
		f.Limit = n
	}
	if f.State == store.Pending {
		// A client that goes away must not fail the read for the others.
		s.hub.catchUp(context.WithoutCancel(r.Context()))
		if body, ok := s.view.answer(f.Limit); ok {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusOK)
			w.Write(body)
			return
		}
	}
	list, err := s.b.Store().List(r.Context(), f)
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	if list == nil {
		list = []*store.Approval{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

func (s *Server) show(w http.ResponseWriter, r *http.Request, _ string) {
	id, ok := s.expandID(w, r, false)
	if !ok {
		return
	}
	a, err := s.b.Store().Get(r.Context(), id)
	if err != nil {
		writeStoreErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// DecisionBody is the JSON body of approve and deny.
type DecisionBody struct {
	Reason string `json:"reason"`
	// GrantMinutes > 0 on approve also grants the exact same call in the
	// same session for that many minutes (capped at grant_max_minutes).
	GrantMinutes int `json:"grant_minutes"`
	// GrantScope is "session" (default) or "workspace": the grant then
	// covers the call in every session of the request's agent in its
	// workspace (not for calls that change files).
	GrantScope string `json:"grant_scope,omitempty"`
	// Always on approve also writes a lasting rule into the user config
	// of the server's user, for the request's workspace: Rules as edited
	// (allow rules for that workspace that still allow the call), else
	// the narrowest rule that covers it (GET .../always shows it).
	Always bool          `json:"always"`
	Rules  []config.Rule `json:"rules,omitempty"`
}

// DecodeDecision reads a decision body: at most MaxBody bytes, one JSON
// object, no unknown field (decided_by in particular), nothing after it.
// An empty body is an empty decision. A negative grant_minutes is refused.
func DecodeDecision(r io.Reader) (DecisionBody, error) {
	var d DecisionBody
	data, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return d, fmt.Errorf("failed to read the body: %w", err)
	}
	if len(data) > MaxBody {
		return d, fmt.Errorf("body larger than %d bytes", MaxBody)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return d, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return DecisionBody{}, fmt.Errorf("invalid body (want {\"reason\": \"…\", \"grant_minutes\": N}): %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return DecisionBody{}, errors.New("invalid body: data after the JSON object")
	}
	if d.GrantMinutes < 0 {
		return DecisionBody{}, errors.New("invalid body: grant_minutes must be a positive number of minutes (or 0 for no grant)")
	}
	return d, nil
}

// maxGrantMinutes bounds grant_minutes before it becomes a Duration (the
// broker caps it further, at grant_max_minutes).
const maxGrantMinutes = 1 << 20

// AlwaysApproval is the answer of an approve that wrote lasting rules.
type AlwaysApproval struct {
	*store.Approval
	Rules []config.Rule `json:"rules"`
}

// always shows the rules an "always" would write for a pending request.
func (s *Server) always(w http.ResponseWriter, r *http.Request, _ string) {
	id := r.PathValue("id")
	if !idPattern.MatchString(id) {
		writeErr(w, http.StatusNotFound, "no such approval request")
		return
	}
	a, err := s.b.Store().Get(r.Context(), id)
	if err != nil {
		writeStoreErr(w, err)
		return
	}
	rs, err := approval.ProposeAlways(a.Tool, a.Args, a.Workspace, nil)
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Sprintf("no lasting rule covers request %s: %v", id, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rules": rs, "text": approval.DescribeRules(rs)})
}

// GrantedApproval is the answer of an approve that created a grant: the
// request's fields, and the grant.
type GrantedApproval struct {
	*store.Approval
	Grant *store.Grant `json:"grant"`
}

func (s *Server) decide(approve bool) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, supervisor string) {
		body, err := DecodeDecision(http.MaxBytesReader(w, r.Body, MaxBody+1))
		if err != nil {
			writeErr(w, http.StatusBadRequest, err.Error())
			return
		}
		if !approve && body.GrantMinutes != 0 {
			writeErr(w, http.StatusBadRequest, "a denial cannot create a grant: grant_minutes is for approve")
			return
		}
		if !approve && (body.Always || body.Rules != nil) {
			writeErr(w, http.StatusBadRequest, "a denial writes no rule: always is for approve")
			return
		}
		if body.Always && body.GrantMinutes != 0 || body.Rules != nil && !body.Always {
			writeErr(w, http.StatusBadRequest, "always (with optional rules) and grant_minutes exclude each other; rules need always")
			return
		}
		id, ok := s.expandID(w, r, false)
		if !ok {
			return
		}
		if body.Always {
			a, written, err := s.b.ApproveAlways(r.Context(), id, supervisor, body.Reason, body.Rules)
			switch {
			case errors.Is(err, approval.ErrAlwaysRule):
				writeErr(w, http.StatusBadRequest, err.Error())
				return
			case errors.Is(err, approval.ErrNoRuleWriter):
				writeErr(w, http.StatusNotImplemented, err.Error())
				return
			case err != nil:
				writeStoreErr(w, err)
				return
			}
			s.view.applyDecided(a)
			writeJSON(w, http.StatusOK, AlwaysApproval{Approval: a, Rules: written})
			return
		}
		if body.GrantScope != "" && (body.GrantScope != "session" && body.GrantScope != "workspace" || body.GrantMinutes == 0) {
			writeErr(w, http.StatusBadRequest, `grant_scope is "session" or "workspace", with grant_minutes`)
			return
		}
		if body.GrantMinutes > 0 {
			d := time.Duration(min(body.GrantMinutes, maxGrantMinutes)) * time.Minute
			grant := s.b.ApproveWithGrant
			if body.GrantScope == "workspace" {
				grant = s.b.ApproveWithScopedGrant
			}
			a, g, err := grant(r.Context(), id, supervisor, body.Reason, d)
			if err != nil {
				writeStoreErr(w, err)
				return
			}
			s.view.applyDecided(a)
			writeJSON(w, http.StatusOK, GrantedApproval{Approval: a, Grant: g})
			return
		}
		a, err := s.b.Decide(r.Context(), id, supervisor, approve, body.Reason)
		if err != nil {
			writeStoreErr(w, err)
			return
		}
		s.view.applyDecided(a)
		writeJSON(w, http.StatusOK, a)
	}
}

// grants lists the active grants, or with ?all=1 every grant (newest first).
func (s *Server) grants(w http.ResponseWriter, r *http.Request, _ string) {
	var list []*store.Grant
	var err error
	switch all := r.URL.Query().Get("all"); all {
	case "", "0", "false":
		list, err = s.b.Grants(r.Context())
	case "1", "true":
		list, err = s.b.Store().ListGrants(r.Context(), store.GrantFilter{All: true, Limit: 1000})
	default:
		writeErr(w, http.StatusBadRequest, "all must be 1 or 0")
		return
	}
	if err != nil {
		writeErr(w, http.StatusInternalServerError, err.Error())
		return
	}
	if list == nil {
		list = []*store.Grant{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": list})
}

func (s *Server) revoke(w http.ResponseWriter, r *http.Request, supervisor string) {
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, MaxBody)); err != nil {
		writeErr(w, http.StatusBadRequest, "body larger than the limit")
		return
	}
	id, ok := s.expandID(w, r, true)
	if !ok {
		return
	}
	if err := s.b.RevokeGrant(r.Context(), id, supervisor); err != nil {
		writeStoreErr(w, err)
		return
	}
	g, err := s.b.Store().GetGrant(r.Context(), id)
	if err != nil {
		writeStoreErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, g)
}

func writeStoreErr(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, "no such approval request")
	case errors.Is(err, store.ErrGrantNotFound):
		writeErr(w, http.StatusNotFound, "no such grant")
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrExpired), errors.Is(err, store.ErrGrantScope):
		writeErr(w, http.StatusConflict, err.Error())
	case errors.Is(err, approval.ErrNotSupervisor):
		writeErr(w, http.StatusForbidden, err.Error())
	case errors.Is(err, approval.ErrReasonRequired), errors.Is(err, approval.ErrGrantDuration):
		writeErr(w, http.StatusBadRequest, err.Error())
	default:
		writeErr(w, http.StatusInternalServerError, err.Error())
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
