package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/config"
)

// JailSpec is what the host's ssh backend tells `warden worker --jail` on
// the remote host: the [sandbox] settings as the host resolved them (the
// backend is always local there) and the security settings the jail
// needs. It travels on the command line and holds no secrets: Env has
// already been through JailEnv.
type JailSpec struct {
	Sandbox      config.Sandbox `json:"sandbox"`
	Mask         []string       `json:"mask,omitempty"`
	Protected    []string       `json:"protected,omitempty"`
	EnvAllowlist []string       `json:"env_allowlist,omitempty"`
	Env          []string       `json:"env,omitempty"`
}

// maxJailSpec bounds the --sandbox argument.
const maxJailSpec = 1 << 20

// ParseJailSpec reads the --sandbox argument of `warden worker --jail`.
// Unknown fields, trailing data and anything but the local backend are
// refused: the remote side never runs a worker unjailed.
func ParseJailSpec(s string) (*JailSpec, error) {
	if len(s) > maxJailSpec {
		return nil, fmt.Errorf("jail spec is larger than %d bytes", maxJailSpec)
	}
	var spec JailSpec
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("failed to read the jail spec: %w", err)
	}
	if dec.More() {
		return nil, errors.New("failed to read the jail spec: trailing data")
	}
	sb := &spec.Sandbox
	if !sb.Enabled {
		return nil, errors.New("jail spec: the sandbox is not enabled; warden worker --jail only runs jailed")
	}
	if sb.Backend != BackendLocal {
		return nil, fmt.Errorf("jail spec: backend %q; warden worker --jail runs the local (bubblewrap) backend only", sb.Backend)
	}
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || secretName(k) {
			return nil, fmt.Errorf("jail spec: environment entry %q refused", kv)
		}
	}
	return &spec, nil
}

// ServeJail is `warden worker --jail` on an ssh backend's remote host: it
// starts the local backend (bubblewrap, seccomp, Landlock, pids cgroup) on
// workspaceDir with the spec's settings, with in and out as the jail's own
// stdin and stdout, so the worker protocol passes straight through between
// the ssh session and the jailed worker: nothing is decoded, buffered or
// re-sent here. It returns when the worker exits (the host closed the
// session's input), or kills the jail at once when ctx ends or its parent
// (sshd: the connection dropped) dies.
func ServeJail(ctx context.Context, workspaceDir, specJSON string, in, out *os.File, errOut io.Writer) error {
	spec, err := ParseJailSpec(specJSON)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer stop()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("failed to tie the jail to its ssh session: %w", err)
	}
	if os.Getppid() == 1 {
		return errors.New("the ssh session is already gone")
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := Start(ctx, &Options{
		Workspace: workspaceDir, Sandbox: &spec.Sandbox, Mask: spec.Mask, Protected: spec.Protected,
		EnvAllowlist: spec.EnvAllowlist, HostEnv: spec.Env, Logger: log,
		stdio: &jailStdio{in: in, out: out},
	})
	if err != nil {
		return err
	}
	// The jail holds the session's input and output now; the worker ends
	// when the host closes its input.
	in.Close()
	out.Close()
	w.closing.Store(true)
	select {
	case <-w.Done():
		w.cleanup()
		if st := w.cmd.ProcessState; st == nil || !st.Success() {
			return fmt.Errorf("the jailed worker failed (%v): %s", w.deadErr, w.deadMsg())
		}
		return nil
	case <-ctx.Done():
		w.kill()
		<-w.Done()
		w.cleanup()
		return errors.New("the ssh session ended; the jail was killed")
	}
}

// jailStdio is the stdin and stdout a passthrough jail inherits.
type jailStdio struct{ in, out *os.File }

// workerPipes connects the worker's stdin and stdout: pipes to this
// process, or, for a passthrough jail, the files of o.stdio themselves
// (stdout is then nil: nothing here reads it).
func (o *Options) workerPipes(cmd *exec.Cmd) (io.WriteCloser, io.Reader, error) {
	if o.stdio != nil {
		cmd.Stdin, cmd.Stdout = o.stdio.in, o.stdio.out
		return nopWriteCloser{}, nil, nil
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	return stdin, stdout, nil
}

// passthrough finishes the start of a jail whose protocol another peer
// speaks: there is no handshake here (the peer pings the worker, and the
// ssh backend refuses a worker without its seccomp filter).
func (w *Worker) passthrough(info Info) *Worker {
	info.Started = time.Now()
	w.info = info
	w.touch()
	return w
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }
