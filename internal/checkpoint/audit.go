package checkpoint

import (
	"fmt"

	"github.com/wardenhq/warden/internal/audit"
)

// Audit events of undo.
const (
	EventUndo     = "undo"
	EventResume   = "undo_resume"
	EventRollback = "undo_rollback"
)

// AuditUndo is the audit record of an undo of the workspace ws to target
// (or its resume or rollback, by event) that by asked for: what it
// restored, the checkpoint that undoes it, or why it failed.
func AuditUndo(event, ws string, target *Checkpoint, res *UndoResult, err error, by string) *audit.Record {
	rec := &audit.Record{Event: event, Workspace: ws, DecidedBy: by, Success: err == nil}
	if target != nil {
		rec.Checkpoint = target.ID
	}
	if res != nil && res.Plan != nil {
		rec.Result = fmt.Sprintf("%d changes taken back", len(res.Plan.Changes()))
		if res.Before != nil {
			rec.Result += fmt.Sprintf("; checkpoint %s holds the workspace as it was before (warden undo --to %s undoes this undo)", res.Before.ID, res.Before.ID)
		}
		if res.Plan.Empty() {
			rec.Result = "nothing to restore: the workspace already matched the checkpoint"
		}
	}
	if err != nil {
		rec.Error = audit.Excerpt(err.Error(), audit.DefaultMaxLen)
	}
	return rec
}
