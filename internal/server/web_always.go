package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
)

// alwaysView is what a card shows of "always": the rules it would write,
// and for a single command rule its words, which the person may edit
// (a shorter prefix, a trailing *) before approving.
type alwaysView struct {
	Text  string
	Words string // "" when the rule is not one command rule
}

func alwaysOf(tool string, args []byte, workspace string) *alwaysView {
	rs, err := approval.ProposeAlways(tool, args, workspace, nil)
	if err != nil {
		return nil
	}
	v := &alwaysView{Text: approval.DescribeRules(rs)}
	if len(rs) == 1 && rs[0].Command != nil && !strings.ContainsFunc(strings.Join(rs[0].Command, ""), func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }) {
		v.Words = strings.Join(rs[0].Command, " ")
	}
	return v
}

// always approves a request and writes the lasting rule shown on its card
// (its command words as edited there, exact unless unchecked) into the
// user config of the server's user.
func (w *web) always(rw http.ResponseWriter, r *http.Request, s *webSession) {
	id := r.PathValue("id")
	next := safeNext(r.PostFormValue("next"))
	if !idPattern.MatchString(id) {
		w.answer(rw, r, s, next, http.StatusNotFound, "error", "No such approval request.")
		return
	}
	var edited []config.Rule
	if words := strings.Fields(r.PostFormValue("words")); len(words) > 0 {
		a, err := w.s.b.Store().Get(r.Context(), id)
		if err != nil {
			code, msg := decisionError(id, err)
			w.answer(rw, r, s, next, code, "error", msg)
			return
		}
		edited = []config.Rule{{Command: words, Exact: r.PostFormValue("exact") != "", Decision: "allow", Workspace: a.Workspace}}
	}
	a, written, err := w.s.b.ApproveAlways(r.Context(), id, s.supervisor, r.PostFormValue("reason"), edited)
	if err != nil {
		code, msg := decisionError(id, err)
		switch {
		case errors.Is(err, approval.ErrAlwaysRule):
			code, msg = http.StatusBadRequest, err.Error()
		case errors.Is(err, approval.ErrNoRuleWriter):
			code, msg = http.StatusNotImplemented, "This server cannot write lasting rules: approve once or for the session."
		}
		w.answer(rw, r, s, next, code, "error", msg)
		return
	}
	var ids []string
	for _, r := range written {
		ids = append(ids, r.ID)
	}
	w.answer(rw, r, s, next, http.StatusOK, "ok", fmt.Sprintf("Approved request %s (%s) and wrote %s: %s (remove: warden rules remove %s).",
		shortID(a.ID), a.Tool, strings.Join(ids, ", "), approval.DescribeRules(written), strings.Join(ids, " ")))
}
