package sandbox

import (
	"errors"

	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// Sentinel errors; callers branch on them with errors.Is.
var (
	// ErrPTY refuses an interactive terminal in a sandboxed workspace:
	// there is no jailed terminal yet, and warden never opens an unjailed one.
	ErrPTY = errors.New("an interactive terminal is not available in a sandboxed workspace: only one-shot commands run in the jail")
	// ErrBackendUnavailable refuses a backend this build cannot run.
	ErrBackendUnavailable = jail.ErrBackendUnavailable
	// ErrUnsupportedHost means the host cannot build the jail (no bwrap,
	// no user namespaces).
	ErrUnsupportedHost = jail.ErrUnsupportedHost
	// ErrWorker is an error the worker reported that has no better kind.
	ErrWorker = proto.ErrWorker
	// ErrWorkerGone means the worker died or was stopped while a request
	// was in flight; the next request starts a new one.
	ErrWorkerGone = errors.New("sandbox worker is gone")
	// ErrTimeout means the worker did not answer in time; it is killed and
	// replaced (a protocol reset), since its state is unknown.
	ErrTimeout = errors.New("sandbox worker did not answer in time")
	// ErrProcessExited is returned by a write to a process that has exited
	// or closed its stdin.
	ErrProcessExited = proto.ErrProcessExited
	// ErrManagerClosed is returned by a closed Manager.
	ErrManagerClosed = errors.New("sandbox manager is closed")
)
