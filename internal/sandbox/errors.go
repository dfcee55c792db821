package sandbox

import "errors"

// Sentinel errors; callers branch on them with errors.Is.
var (
	// ErrPTY refuses an interactive terminal in a sandboxed workspace:
	// there is no jailed terminal yet, and warden never opens an unjailed one.
	ErrPTY = errors.New("an interactive terminal is not available in a sandboxed workspace: only one-shot commands run in the jail")
	// ErrBackendUnavailable refuses a backend this build cannot run.
	ErrBackendUnavailable = errors.New("sandbox backend is not available")
	// ErrUnsupportedHost means the host cannot build the jail (no bwrap,
	// no user namespaces).
	ErrUnsupportedHost = errors.New("this host cannot run the sandbox")
	// ErrWorker is an error the worker reported that has no better kind.
	ErrWorker = errors.New("sandbox worker error")
	// ErrWorkerGone means the worker died or was stopped while a request
	// was in flight; the next request starts a new one.
	ErrWorkerGone = errors.New("sandbox worker is gone")
	// ErrTimeout means the worker did not answer in time; it is killed and
	// replaced (a protocol reset), since its state is unknown.
	ErrTimeout = errors.New("sandbox worker did not answer in time")
)

// HintError is an error with a hint telling the user what to do.
type HintError struct {
	Err     error
	HintMsg string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// Hint is printed by the CLI after the error.
func (e *HintError) Hint() string { return e.HintMsg }
