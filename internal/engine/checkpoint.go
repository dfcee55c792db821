package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/tools"
)

// Checkpointer records the workspace before a call that may change it, so
// that warden undo can take the call back. *checkpoint.Store is one. It
// returns once the checkpoint is complete and durable; on an error the
// call must not run.
type Checkpointer interface {
	Checkpoint(ctx context.Context, call checkpoint.Call) (*checkpoint.Checkpoint, error)
}

// ChangesWorkspace reports whether a call of t, whose guard found facts,
// may change the workspace: the file-writing tools, and a command that is
// not safe. (A safe command only reads; a dev or dangerous one may write
// anything the jail lets it.)
func ChangesWorkspace(t *tools.Tool, facts tools.Facts) bool {
	switch t.Group {
	case tools.GroupFSWrite:
		return true
	case tools.GroupShell:
		return facts.CommandClass != "safe"
	}
	return false
}

// WillCheckpoint reports whether the engine takes a checkpoint before such
// a call runs. Policy may run a workspace-confined call unasked only when
// this holds: the checkpoint is what makes it undoable.
func (e *Engine) WillCheckpoint(t *tools.Tool, facts tools.Facts) bool {
	return e.opts.Checkpoints != nil && !e.opts.DryRun && ChangesWorkspace(t, facts)
}

// checkpoint takes the checkpoint before a call that may change the
// workspace, once the call is about to run (allowed, or approved). It
// returns the line that tells the model the change can be undone, or the
// result of a call that must not run because no checkpoint could be taken.
func (e *Engine) checkpoint(ctx context.Context, c *call, t *tools.Tool, args json.RawMessage) (string, *tools.Result) {
	if !e.WillCheckpoint(t, c.facts) {
		return "", nil
	}
	cp, err := e.opts.Checkpoints.Checkpoint(ctx, checkpoint.Call{
		Tool: t.Name, Summary: summary(args), Session: e.opts.Env.Session, RequestID: c.rec.RequestID,
	})
	if err != nil {
		c.rec.Decision, c.rec.Rule = audit.DecisionError, "checkpoint-failed"
		msg := fmt.Sprintf("The %s call was not run: warden could not record a checkpoint of the workspace first (%v).", t.Name, err)
		if errors.Is(err, checkpoint.ErrUndoPending) {
			msg += " The user must finish or roll back the interrupted undo (warden undo --resume or --rollback)."
		}
		return "", &tools.Result{Error: msg + " Tell the user; do not retry until they fix it."}
	}
	c.rec.Checkpoint, c.rec.CheckpointNote = cp.ID, cp.Note()
	for _, w := range cp.Warnings {
		e.opts.Log.Warn("checkpoint", "id", cp.ID, "warning", w)
	}
	return fmt.Sprintf("\n[checkpoint %s was taken before this call: the user can undo it]", cp.ID), nil
}

// summary names what a call acts on, for the checkpoint list: the command
// or the path, redacted and cut.
func summary(args json.RawMessage) string {
	var a struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	_ = json.Unmarshal(args, &a)
	s := a.Command
	if s == "" {
		s = a.Path
	}
	return audit.Truncate(audit.Redact(s), audit.DefaultMaxLen)
}
