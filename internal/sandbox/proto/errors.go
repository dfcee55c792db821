package proto

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/wardenhq/warden/internal/workspace"
)

var (
	// ErrProcessExited is returned by a write to a process that has exited
	// or closed its stdin.
	ErrProcessExited = errors.New("the jailed process has exited or closed its stdin")
	// ErrWorker is an error the worker reported that has no better kind.
	ErrWorker = errors.New("sandbox worker error")
)

// Error lets a worker handler return a ready wire error.
type Error struct{ W *WireError }

func (e *Error) Error() string { return e.W.Message }

// Errorf returns an *Error of kind.
func Errorf(kind, format string, a ...any) *Error {
	return &Error{&WireError{Kind: kind, Message: fmt.Sprintf(format, a...)}}
}

// kindSentinels maps wire kinds to the errors they stand for, most
// specific first (ENOTEMPTY also matches fs.ErrExist). A decoded error
// unwraps to the value listed, so errors.Is works for the sentinel and,
// for system errors, for the errno and its fs.Err* class alike.
var kindSentinels = []struct {
	kind string
	err  error
}{
	{KindEscapes, workspace.ErrEscapes},
	{KindMasked, workspace.ErrMasked},
	{KindProtected, workspace.ErrProtected},
	{KindInvalid, workspace.ErrInvalid},
	{KindTooLarge, workspace.ErrTooLarge},
	{KindHardLink, workspace.ErrHardLink},
	{KindSymlink, workspace.ErrSymlink},
	{KindNotRegular, workspace.ErrNotRegular},
	{KindNotDir, syscall.ENOTDIR},
	{KindIsDir, syscall.EISDIR},
	{KindNotEmpty, syscall.ENOTEMPTY},
	{KindReadOnly, syscall.EROFS},
	{KindNotExist, syscall.ENOENT},
	{KindExist, syscall.EEXIST},
	{KindPermission, syscall.EACCES},
	{KindClosed, ErrProcessExited},
}

// ErrorKind classifies err for the wire.
func ErrorKind(err error) string {
	for _, ks := range kindSentinels {
		if errors.Is(err, ks.err) {
			return ks.kind
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return KindNotExist
	case errors.Is(err, fs.ErrExist):
		return KindExist
	case errors.Is(err, fs.ErrPermission):
		return KindPermission
	}
	return KindOther
}

// EncodeError turns a worker-side error into its wire form.
func EncodeError(err error) *WireError {
	var wv *Error
	if errors.As(err, &wv) {
		return wv.W
	}
	we := &WireError{Kind: ErrorKind(err), Message: err.Error()}
	var pe *workspace.PathError
	if errors.As(err, &pe) {
		we.Op, we.Path, we.Rule = pe.Op, pe.Path, pe.Rule
		// Carry the sentence's end as the worker's PathError wrote it, so the
		// client's PathError prints the same words.
		msg := strings.TrimPrefix(pe.Error(), fmt.Sprintf("Path '%s' ", pe.Path))
		if pe.Rule != "" {
			msg = strings.TrimSuffix(msg, fmt.Sprintf(" (rule %q)", pe.Rule))
		}
		we.Message = msg
		return we
	}
	var ope *fs.PathError
	if errors.As(err, &ope) {
		we.Op, we.Path = ope.Op, ope.Path
		we.Message = ope.Err.Error()
	}
	return we
}

// RemoteError is an error that happened in the worker. It prints as the
// worker printed it and unwraps to the sentinel of its kind.
type RemoteError struct {
	msg  string
	kind error
}

func (e *RemoteError) Error() string { return e.msg }
func (e *RemoteError) Unwrap() error { return e.kind }

// DecodeError turns a wire error back into a Go error: a
// *workspace.PathError when the worker reported a path, wrapping an error
// for which errors.Is(err, sentinel) holds.
func DecodeError(we *WireError) error {
	if we == nil {
		return errors.New("worker reported an error without details")
	}
	var kind error
	for _, ks := range kindSentinels {
		if ks.kind == we.Kind {
			kind = ks.err
			break
		}
	}
	if kind == nil {
		kind = ErrWorker
	}
	inner := &RemoteError{msg: we.Message, kind: kind}
	if we.Op != "" || we.Path != "" {
		return &workspace.PathError{Op: we.Op, Path: we.Path, Rule: we.Rule, Err: inner}
	}
	return inner
}

// BadRequest builds the error response to a request that cannot be served.
func BadRequest(id uint64, format string, a ...any) *Response {
	return &Response{ID: id, Error: &WireError{Kind: KindBadRequest, Message: fmt.Sprintf(format, a...)}}
}
