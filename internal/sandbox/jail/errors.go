package jail

import "errors"

// Sentinel errors a backend returns; callers branch on them with errors.Is
// (internal/sandbox re-exports them).
var (
	// ErrBackendUnavailable refuses a backend this build cannot run.
	ErrBackendUnavailable = errors.New("sandbox backend is not available")
	// ErrUnsupportedHost means the host cannot build the jail (no bwrap,
	// no user namespaces).
	ErrUnsupportedHost = errors.New("this host cannot run the sandbox")
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
