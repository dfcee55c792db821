package checkpoint

import (
	"errors"
	"fmt"
)

// Sentinel errors, for callers that branch on them with errors.Is.
var (
	// ErrCorrupt: something in the store is not what warden wrote. Nothing
	// is restored from a corrupt checkpoint.
	ErrCorrupt = errors.New("checkpoint store is corrupt")
	// ErrNotFound: no checkpoint has that id (or id prefix).
	ErrNotFound = errors.New("no such checkpoint")
	// ErrAmbiguous: an id prefix names more than one checkpoint.
	ErrAmbiguous = errors.New("checkpoint id prefix is ambiguous")
	// ErrUndoPending: an undo was interrupted; until it is resumed or
	// rolled back no checkpoint is taken (so no call runs) and no other
	// undo starts.
	ErrUndoPending = errors.New("an interrupted undo must be resumed or rolled back first")
	// ErrNoUndoPending: Resume or Rollback found no interrupted undo.
	ErrNoUndoPending = errors.New("no interrupted undo")
	// ErrPlanChanged: the workspace changed between showing an undo's
	// plan and applying it.
	ErrPlanChanged = errors.New("the workspace changed since the undo plan was shown")
	// ErrExposed: the store would be reachable from the workspace or the
	// jail, so it could be read or forged by what it protects against.
	ErrExposed = errors.New("the checkpoint store would be reachable from the workspace")
	// ErrTooLarge: one checkpoint would need more than max_bytes.
	ErrTooLarge = errors.New("the checkpoint would exceed [checkpoints] max_bytes")
	// ErrLocked: another process held the store's lock for too long.
	ErrLocked = errors.New("the checkpoint store is busy")
)

func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, a...))
}
