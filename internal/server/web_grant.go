package server

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

// grantsEnabled shows the grant forms and the list of active grants.
const grantsEnabled = true

var grantIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func (w *web) registerGrants(m *http.ServeMux) {
	m.Handle("POST /requests/{id}/grant", w.headers(w.form(w.grant)))
	m.Handle("POST /grants/{id}/revoke", w.headers(w.form(w.revoke)))
	m.Handle("GET /grants", w.headers(w.api(w.grantsFragment)))
}

// grantView is one active grant as the page shows it.
type grantView struct {
	G         *store.Grant
	Args      string
	Left      string
	ExpiresMS int64
}

func (w *web) activeGrants(r *http.Request) ([]grantView, error) {
	gs, err := w.s.b.Grants(r.Context())
	if err != nil {
		return nil, err
	}
	now := w.now()
	out := make([]grantView, 0, len(gs))
	for _, g := range gs {
		if !g.Active(now) {
			continue
		}
		out = append(out, grantView{G: g, Args: prettyArgs(g.Args), Left: fmtLeft(g.ExpiresAt.Sub(now)),
			ExpiresMS: g.ExpiresAt.UnixMilli()})
	}
	return out, nil
}

// grantsFragment is the list of active grants alone, re-read by the page's
// script when something changed.
func (w *web) grantsFragment(rw http.ResponseWriter, r *http.Request, _ string) {
	gs, err := w.activeGrants(r)
	if err != nil {
		w.failPage(rw, err)
		return
	}
	w.render(rw, http.StatusOK, "grants", map[string]any{"GrantList": gs})
}

// grant approves a request and allows the exact same call in the same
// session for the minutes asked (capped by the broker).
func (w *web) grant(rw http.ResponseWriter, r *http.Request, s *webSession) {
	id := r.PathValue("id")
	next := safeNext(r.PostFormValue("next"))
	if !idPattern.MatchString(id) {
		w.answer(rw, r, s, next, http.StatusNotFound, "error", "No such approval request.")
		return
	}
	mins, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("minutes")))
	if err != nil || mins < 1 || mins > 24*60 {
		w.answer(rw, r, s, next, http.StatusBadRequest, "error", "A grant needs a number of minutes (1 or more).")
		return
	}
	grant, scope := w.s.b.ApproveWithGrant, r.PostFormValue("scope")
	switch scope {
	case "", "session":
	case "workspace":
		grant = w.s.b.ApproveWithScopedGrant
	default:
		w.answer(rw, r, s, next, http.StatusBadRequest, "error", "A grant holds in this session or in every session of the agent in this workspace.")
		return
	}
	a, g, err := grant(r.Context(), id, s.supervisor, r.PostFormValue("reason"), time.Duration(mins)*time.Minute)
	if err != nil {
		code, msg := decisionError(id, err)
		switch {
		case errors.Is(err, store.ErrGrantScope) && scope == "workspace":
			code, msg = http.StatusBadRequest, "This request changes files (or names no workspace), so it can be granted in its session only."
		case errors.Is(err, store.ErrGrantScope):
			code, msg = http.StatusBadRequest, "This request has no session, so it cannot be granted: approve it alone."
		case errors.Is(err, approval.ErrGrantDuration):
			code, msg = http.StatusBadRequest, err.Error()
		}
		w.answer(rw, r, s, next, code, "error", msg)
		return
	}
	where := "in session " + a.Session
	if g.Scope() == store.ScopeWorkspaceAgent {
		agent := a.Agent
		if agent == "" {
			agent = "(default)"
		}
		where = fmt.Sprintf("in every session of agent %s in %s", agent, a.Workspace)
	}
	w.answer(rw, r, s, next, http.StatusOK, "ok", fmt.Sprintf("Approved request %s (%s) and allowed the same call %s until %s.",
		shortID(a.ID), a.Tool, where, fmtTime(g.ExpiresAt)))
}

func (w *web) revoke(rw http.ResponseWriter, r *http.Request, s *webSession) {
	id := r.PathValue("id")
	if !grantIDPattern.MatchString(id) {
		w.answer(rw, r, s, "/", http.StatusNotFound, "error", "No such grant.")
		return
	}
	err := w.s.b.RevokeGrant(r.Context(), id, s.supervisor)
	var gse *store.GrantStateError
	switch {
	case err == nil:
		w.answer(rw, r, s, "/", http.StatusOK, "ok", fmt.Sprintf("Revoked grant %s.", shortID(id)))
	case errors.As(err, &gse):
		msg := fmt.Sprintf("Grant %s was already %s", shortID(id), gse.State)
		if gse.By != "" {
			msg += " by " + gse.By
		}
		w.answer(rw, r, s, "/", http.StatusConflict, "error", msg+".")
	case errors.Is(err, store.ErrGrantNotFound):
		w.answer(rw, r, s, "/", http.StatusNotFound, "error", "No such grant.")
	default:
		code, msg := decisionError(id, err)
		w.answer(rw, r, s, "/", code, "error", msg)
	}
}
