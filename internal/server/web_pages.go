package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/store"
)

// maxQueue is how many pending requests the queue shows.
const maxQueue = 200

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"ts":    func(t time.Time) string { return fmtTime(t) },
		"short": shortID,
	}
	pages := map[string]*template.Template{}
	for _, p := range []string{"signin.html", "signedin.html", "queue.html", "request.html", "history.html", "checkpoints.html", "checkpoint.html"} {
		pages[p] = template.Must(template.New(p).Funcs(funcs).ParseFS(webFS,
			"web/templates/layout.html", "web/templates/card.html", "web/templates/"+p))
	}
	pages["card"], pages["grants"] = pages["queue.html"], pages["queue.html"]
	return pages
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// render executes a page into a buffer first, so a template error is a
// clean 500 and never half a page.
func (w *web) render(rw http.ResponseWriter, code int, page string, data any) {
	var buf bytes.Buffer
	t := w.pages[page]
	name := "layout"
	if page == "card" || page == "grants" {
		name = page // a fragment, fetched by the page's script
	}
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		w.s.log.Error("failed to render the page", "page", page, "err", err)
		http.Error(rw, "failed to render the page", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.WriteHeader(code)
	rw.Write(buf.Bytes())
}

// base is what every signed-in page's layout needs.
func (w *web) base(r *http.Request, s *webSession, title string) map[string]any {
	return map[string]any{
		"Title": title, "Supervisor": s.supervisor, "Flash": w.takeFlash(s),
		"Path": r.URL.Path, "Grants": grantsEnabled, "Checkpoints": w.s.cps != nil,
	}
}

// cardView is one request as the page shows it.
type cardView struct {
	A         *store.Approval
	Args      string
	Risk      []riskLine
	Pending   bool
	Expired   bool
	Left      string
	ExpiresMS int64
	Next      string
	Grants    bool
	// WorkspaceGrant: the request can be granted for every session of its
	// agent in its workspace (it changes no files and names a workspace).
	WorkspaceGrant bool
	// Always is the lasting rule "always" would write (nil: none fits).
	Always *alwaysView
}

// cardOf renders a request's card. Its forms carry an empty csrf field
// that the page's script fills from the browser's storage: no response to
// a GET ever holds the session's CSRF token (see doc.go).
func (w *web) cardOf(a *store.Approval, next string) cardView {
	now := w.now()
	v := cardView{A: a, Args: prettyArgs(a.Args), Risk: riskLines(a.Risk), Next: next,
		ExpiresMS: a.ExpiresAt.UnixMilli(), Grants: grantsEnabled, WorkspaceGrant: approval.WorkspaceGrantable(a)}
	v.Pending = a.State == store.Pending && now.Before(a.ExpiresAt)
	v.Expired = a.State == store.Pending && !v.Pending
	if v.Pending {
		v.Left = fmtLeft(a.ExpiresAt.Sub(now))
		v.Always = alwaysOf(a.Tool, a.Args, a.Workspace)
	}
	return v
}

func fmtLeft(d time.Duration) string {
	if d <= 0 {
		return "expired"
	}
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// prettyArgs indents the stored (canonical) JSON arguments; anything that
// is not JSON is shown as it is.
func prettyArgs(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// pending lists the requests still waiting, oldest first.
func (w *web) pending(r *http.Request) ([]*store.Approval, error) {
	list, err := w.s.b.Store().List(r.Context(), store.Filter{State: store.Pending, Limit: maxQueue})
	if err != nil {
		return nil, err
	}
	now := w.now()
	list = slices.DeleteFunc(list, func(a *store.Approval) bool { return !now.Before(a.ExpiresAt) })
	slices.Reverse(list)
	return list, nil
}

func (w *web) queue(rw http.ResponseWriter, r *http.Request, s *webSession) {
	data := w.base(r, s, "Queue")
	list, err := w.pending(r)
	if err != nil {
		w.failPage(rw, err)
		return
	}
	cards := make([]cardView, len(list))
	for i, a := range list {
		cards[i] = w.cardOf(a, "/")
	}
	data["Cards"] = cards
	if grantsEnabled {
		gs, err := w.activeGrants(r)
		if err != nil {
			w.failPage(rw, err)
			return
		}
		data["GrantList"] = gs
	}
	w.render(rw, http.StatusOK, "queue.html", data)
}

func (w *web) failPage(rw http.ResponseWriter, err error) {
	w.s.log.Error("supervisor page: failed to read the store", "err", err)
	http.Error(rw, "failed to read the approval store: "+err.Error(), http.StatusInternalServerError)
}

func (w *web) lookup(rw http.ResponseWriter, r *http.Request) *store.Approval {
	id := r.PathValue("id")
	if !idPattern.MatchString(id) {
		http.Error(rw, "no such approval request", http.StatusNotFound)
		return nil
	}
	a, err := w.s.b.Store().Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(rw, "no such approval request", http.StatusNotFound)
		return nil
	}
	if err != nil {
		w.failPage(rw, err)
		return nil
	}
	return a
}

func (w *web) request(rw http.ResponseWriter, r *http.Request, s *webSession) {
	a := w.lookup(rw, r)
	if a == nil {
		return
	}
	data := w.base(r, s, "Request "+shortID(a.ID))
	data["Card"] = w.cardOf(a, "/requests/"+a.ID)
	w.render(rw, http.StatusOK, "request.html", data)
}

// card is one request's card alone, fetched by the page's script when the
// event stream says the request changed.
func (w *web) card(rw http.ResponseWriter, r *http.Request, _ string) {
	a := w.lookup(rw, r)
	if a == nil {
		return
	}
	next := "/"
	if n := r.URL.Query().Get("next"); n != "" {
		next = safeNext(n)
	}
	w.render(rw, http.StatusOK, "card", w.cardOf(a, next))
}

func (w *web) decide(approve bool) pageHandler {
	return func(rw http.ResponseWriter, r *http.Request, s *webSession) {
		id := r.PathValue("id")
		reason := r.PostFormValue("reason")
		next := safeNext(r.PostFormValue("next"))
		if !idPattern.MatchString(id) {
			w.answer(rw, r, s, next, http.StatusNotFound, "error", "No such approval request.")
			return
		}
		a, err := w.s.b.Decide(r.Context(), id, s.supervisor, approve, reason)
		if err != nil {
			code, msg := decisionError(id, err)
			w.answer(rw, r, s, next, code, "error", msg)
			return
		}
		w.s.view.applyDecided(a)
		verb := "Approved"
		if !approve {
			verb = "Denied"
		}
		w.answer(rw, r, s, next, http.StatusOK, "ok", fmt.Sprintf("%s request %s (%s).", verb, shortID(a.ID), a.Tool))
	}
}

// decisionError says in words why a decision did not apply.
func decisionError(id string, err error) (int, string) {
	var ce *store.ConflictError
	switch {
	case errors.As(err, &ce):
		msg := fmt.Sprintf("Request %s was already %s", shortID(id), ce.State)
		if ce.By != "" {
			msg += " by " + ce.By
		}
		return http.StatusConflict, msg + "; your decision was not applied."
	case errors.Is(err, store.ErrExpired):
		return http.StatusConflict, fmt.Sprintf("Request %s expired before your decision; it was not applied.", shortID(id))
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "No such approval request."
	case errors.Is(err, approval.ErrReasonRequired):
		return http.StatusBadRequest, "A denial needs a reason: the agent is told why."
	case errors.Is(err, approval.ErrNotSupervisor):
		return http.StatusForbidden, "You are no longer a configured supervisor."
	}
	return http.StatusInternalServerError, "The decision failed: " + err.Error()
}

// answer ends a POST: a script's fetch (which sent the CSRF header) gets
// JSON; a plain form gets the message as a flash and a redirect.
func (w *web) answer(rw http.ResponseWriter, r *http.Request, s *webSession, next string, code int, kind, msg string) {
	if r.Header.Get(csrfHeader) != "" {
		writeJSON(rw, code, map[string]string{"status": kind, "message": msg})
		return
	}
	w.addFlash(s, kind, msg)
	http.Redirect(rw, r, next, http.StatusSeeOther)
}

func (w *web) history(rw http.ResponseWriter, r *http.Request, s *webSession) {
	data := w.base(r, s, "History")
	q, err := parseHistoryQuery(r.URL.Query())
	data["Q"], data["Decisions"] = q, audit.Decisions
	if err != nil {
		data["QueryError"] = err.Error()
	}
	rows, err := w.s.b.Store().Audit(r.Context(), store.AuditFilter{Last: historyScan})
	if err != nil {
		w.failPage(rw, err)
		return
	}
	matched, more := q.filter(rows)
	data["Rows"], data["More"], data["Scanned"] = historyRows(matched), more, len(rows)
	n, head, verr := w.s.b.Store().VerifyAudit(r.Context())
	chain := map[string]any{"Rows": n, "Head": head, "OK": verr == nil}
	if verr != nil {
		chain["Error"] = verr.Error()
	}
	data["Chain"] = chain
	w.render(rw, http.StatusOK, "history.html", data)
}

// historyRow is one audit row as the history table shows it.
type historyRow struct {
	ID                                  int64
	Time                                string
	Event, Tool, Decision, By, Reason   string
	Request, Session, Agent, Args, Hash string
	Link                                bool // Request is a request id
}

func historyRows(rows []*store.AuditRow) []historyRow {
	out := make([]historyRow, len(rows))
	for i, r := range rows {
		rec := r.Record
		out[i] = historyRow{ID: r.ID, Time: fmtTime(r.Time), Event: rec.Event, Tool: rec.Tool, Decision: string(rec.Decision),
			By: rec.DecidedBy, Reason: strings.TrimSpace(rec.Reason + " " + rec.Error), Request: r.Record.RequestID,
			Session: rec.Session, Agent: rec.Agent, Args: string(rec.Args), Hash: shortID(r.Hash),
			Link: idPattern.MatchString(rec.RequestID)}
	}
	return out
}
