package control

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

const (
	controlPrefix = "serve-"
	controlSuffix = ".sock"
	// maxControlBody bounds a control request.
	maxControlBody = 1 << 20
	// maxControlArgs bounds the argument count of a remote exec.
	maxControlArgs = 4096
	// maxSocketPath is what fits in sockaddr_un.sun_path with its NUL.
	maxSocketPath = 107
)

// Response codes of the control protocol.
const (
	codeNotHeld    = "not_held"
	codeRefused    = "refused"
	codeBadRequest = "bad_request"
	codeFailed     = "failed"
)

var (
	// ErrNotHeld means no running warden serve holds the workspace with the
	// same sandbox options; the caller builds a jail of its own.
	ErrNotHeld = errors.New("no warden serve holds this workspace with these sandbox options")
	// ErrPeerRefused means the control endpoint refused a connection: another
	// user, or a process in another user namespace (a jail).
	ErrPeerRefused = errors.New("control connection refused")
)

// Request is a remote exec: one command in the worker of Workspace.
type Request struct {
	// Workspace is the absolute, symlink-free workspace directory.
	Workspace string `json:"workspace"`
	// Fingerprint is sandbox.OptionsFingerprint of the caller's options.
	Fingerprint string   `json:"fingerprint"`
	Argv        []string `json:"argv"`
	// Cwd is workspace-relative ("" for the root); the worker confines it.
	Cwd       string `json:"cwd,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// DecodeRequest parses and checks a remote exec request. Anything it
// accepts is bounded: one JSON object, known fields, an absolute clean
// workspace, a SHA-256 fingerprint, 1 to 4096 arguments without NUL bytes,
// a local cwd and a timeout of at most proto.MaxExecTimeout.
func DecodeRequest(b []byte) (*Request, error) {
	if len(b) > maxControlBody {
		return nil, fmt.Errorf("control request is larger than %d bytes", maxControlBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Request
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("malformed control request: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed control request: data after the object")
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *Request) check() error {
	switch {
	case !filepath.IsAbs(r.Workspace) || filepath.Clean(r.Workspace) != r.Workspace || strings.ContainsRune(r.Workspace, 0):
		return fmt.Errorf("control request: workspace %q is not an absolute clean path", r.Workspace)
	case len(r.Fingerprint) != 2*sha256.Size || strings.Trim(r.Fingerprint, "0123456789abcdef") != "":
		return errors.New("control request: fingerprint is not a SHA-256 in hex")
	case len(r.Argv) == 0 || r.Argv[0] == "":
		return errors.New("control request: no command")
	case len(r.Argv) > maxControlArgs:
		return fmt.Errorf("control request: more than %d arguments", maxControlArgs)
	case r.Cwd != "" && (!filepath.IsLocal(r.Cwd) || strings.ContainsRune(r.Cwd, 0)):
		return fmt.Errorf("control request: cwd %q is not inside the workspace", r.Cwd)
	case r.TimeoutMS < 0 || r.TimeoutMS > proto.MaxExecTimeout.Milliseconds():
		return fmt.Errorf("control request: timeout %d ms is not between 0 and %v", r.TimeoutMS, proto.MaxExecTimeout)
	}
	for _, a := range r.Argv {
		if strings.ContainsRune(a, 0) {
			return errors.New("control request: an argument holds a NUL byte")
		}
	}
	return nil
}

// response is the body of every control answer.
type response struct {
	Result *command.Result `json:"result,omitempty"`
	Status *ServeStatus    `json:"status,omitempty"`
	Error  string          `json:"error,omitempty"`
	Code   string          `json:"code,omitempty"`
}

// ServeStatus is what a warden serve holds.
type ServeStatus struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Workspaces are the sandboxed workspaces it serves (a worker starts on
	// first use and stops when idle).
	Workspaces []string `json:"workspaces"`
	// Workers are the running workers.
	Workers []sandbox.Info `json:"workers"`
}
