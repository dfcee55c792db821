package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"github.com/wardenhq/warden/internal/checkpoint"
)

// CheckpointSource opens the checkpoint stores of the workspaces whose
// checkpoints the page shows and restores.
type CheckpointSource interface {
	// Workspaces lists the workspaces that have checkpoints.
	Workspaces() ([]string, error)
	// Open opens the store of workspace ws (one that Workspaces listed),
	// with that workspace's masks and protected paths; done releases it.
	Open(ctx context.Context, ws string) (s *checkpoint.Store, done func(), err error)
}

// The page lists this many checkpoints per workspace, newest first, and
// this many changes of one.
const (
	maxCheckpoints = 50
	maxChanges     = 500
)

var (
	wsIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)
	cpIDPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)
)

func (w *web) registerCheckpoints(m *http.ServeMux) {
	if w.s.cps == nil {
		return
	}
	m.Handle("GET /checkpoints", w.headers(w.page(w.checkpoints)))
	m.Handle("GET /checkpoints/{ws}/{id}", w.headers(w.page(w.checkpoint)))
	m.Handle("POST /checkpoints/{ws}/{id}/undo", w.headers(w.form(w.undo)))
}

// workspaceView is one workspace on the checkpoints page.
type workspaceView struct {
	Path, ID string
	List     []*checkpoint.Checkpoint
	Pending  *checkpoint.Journal
	Error    string
}

func (w *web) checkpoints(rw http.ResponseWriter, r *http.Request, s *webSession) {
	data := w.base(r, s, "Checkpoints")
	wss, err := w.s.cps.Workspaces()
	if err != nil {
		w.failPage(rw, err)
		return
	}
	slices.Sort(wss)
	var views []workspaceView
	for _, ws := range wss {
		v := workspaceView{Path: ws, ID: checkpoint.WorkspaceID(ws)}
		st, done, err := w.s.cps.Open(r.Context(), ws)
		if err != nil {
			v.Error = err.Error()
			views = append(views, v)
			continue
		}
		list, err := st.List()
		if err != nil {
			v.Error = err.Error()
		}
		slices.Reverse(list)
		v.List = list[:min(len(list), maxCheckpoints)]
		v.Pending, _ = st.Pending()
		done()
		views = append(views, v)
	}
	data["Workspaces"] = views
	w.render(rw, http.StatusOK, "checkpoints.html", data)
}

// openCheckpoint finds the workspace whose store id is ws and checkpoint
// id in it; it answers the request itself when they do not exist.
func (w *web) openCheckpoint(rw http.ResponseWriter, r *http.Request) (string, *checkpoint.Store, *checkpoint.Checkpoint, func()) {
	wsID, id := r.PathValue("ws"), r.PathValue("id")
	if !wsIDPattern.MatchString(wsID) || !cpIDPattern.MatchString(id) {
		http.Error(rw, "no such checkpoint", http.StatusNotFound)
		return "", nil, nil, nil
	}
	wss, err := w.s.cps.Workspaces()
	if err != nil {
		w.failPage(rw, err)
		return "", nil, nil, nil
	}
	i := slices.IndexFunc(wss, func(ws string) bool { return checkpoint.WorkspaceID(ws) == wsID })
	if i < 0 {
		http.Error(rw, "no such workspace", http.StatusNotFound)
		return "", nil, nil, nil
	}
	st, done, err := w.s.cps.Open(r.Context(), wss[i])
	if err != nil {
		w.failPage(rw, err)
		return "", nil, nil, nil
	}
	c, err := st.Get(id)
	if err != nil {
		done()
		http.Error(rw, "no such checkpoint", http.StatusNotFound)
		return "", nil, nil, nil
	}
	return wss[i], st, c, done
}

// checkpoint shows one checkpoint and what undoing to it would change now,
// with the Undo form. The form carries the plan's digest: the undo applies
// this plan or nothing.
func (w *web) checkpoint(rw http.ResponseWriter, r *http.Request, s *webSession) {
	ws, st, c, done := w.openCheckpoint(rw, r)
	if st == nil {
		return
	}
	defer done()
	data := w.base(r, s, "Checkpoint "+c.ID)
	data["Workspace"], data["WS"], data["C"] = ws, checkpoint.WorkspaceID(ws), c
	if j, _ := st.Pending(); j != nil {
		data["Pending"] = j
	}
	p, err := st.Plan(r.Context(), c)
	if err != nil {
		data["PlanError"] = err.Error()
	} else {
		ch := p.Changes()
		data["Changes"], data["More"] = ch[:min(len(ch), maxChanges)], len(ch)-min(len(ch), maxChanges)
		data["Plan"] = p
	}
	w.render(rw, http.StatusOK, "checkpoint.html", data)
}

// undo restores a workspace to a checkpoint for a signed-in supervisor,
// behind the same session, origin and CSRF checks as a decision, and
// audits it, done or failed.
func (w *web) undo(rw http.ResponseWriter, r *http.Request, s *webSession) {
	ws, st, c, done := w.openCheckpoint(rw, r)
	if st == nil {
		return
	}
	defer done()
	next := "/checkpoints/" + checkpoint.WorkspaceID(ws) + "/" + c.ID
	digest := r.PostFormValue("plan")
	if digest == "" {
		w.answer(rw, r, s, next, http.StatusBadRequest, "error", "The undo form carries no plan: reload the page and look at the plan first.")
		return
	}
	res, err := st.Undo(r.Context(), c, &checkpoint.UndoOptions{Expect: digest})
	rec := checkpoint.AuditUndo(checkpoint.EventUndo, ws, c, res, err, s.supervisor)
	if _, aerr := w.s.b.Store().AppendAudit(context.WithoutCancel(r.Context()), rec); aerr != nil {
		w.s.log.Error("failed to audit an undo", "err", aerr)
	}
	switch {
	case errors.Is(err, checkpoint.ErrPlanChanged):
		w.answer(rw, r, s, next, http.StatusConflict, "error", "The workspace changed since this page showed the plan; nothing was restored. Look at the new plan below.")
	case err != nil:
		w.answer(rw, r, s, next, http.StatusInternalServerError, "error", "The undo failed: "+err.Error())
	case res.Plan.Empty():
		w.answer(rw, r, s, next, http.StatusOK, "ok", "Nothing to restore: the workspace already matches this checkpoint.")
	default:
		w.answer(rw, r, s, next, http.StatusOK, "ok", fmt.Sprintf("Restored %s to checkpoint %s (%d changes taken back). Checkpoint %s holds the workspace as it was before: undo to it to take this back.",
			ws, c.ID, len(res.Plan.Changes()), res.Before.ID))
	}
}
