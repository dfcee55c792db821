package sshjail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/bwrap"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// maxJailSpec bounds the --sandbox argument.
const maxJailSpec = 1 << 20

// ParseJailSpec reads the --sandbox argument of `warden worker --jail`.
// Unknown fields, trailing data, anything but an enabled local jail, and a
// variable whose name looks like a secret are refused: the remote side
// never runs a worker unjailed, nor lets a secret into it.
func ParseJailSpec(s string) (*proto.JailSpec, error) {
	if len(s) > maxJailSpec {
		return nil, fmt.Errorf("jail spec is larger than %d bytes", maxJailSpec)
	}
	var spec proto.JailSpec
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
	if sb.Backend != jail.BackendLocal {
		return nil, fmt.Errorf("jail spec: backend %q; warden worker --jail runs the local (bubblewrap) backend only", sb.Backend)
	}
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || jail.SecretName(k) {
			return nil, fmt.Errorf("jail spec: environment entry %q refused", kv)
		}
	}
	return &spec, nil
}

// sandboxSection is the [sandbox] section the remote side acts on: the
// spec's settings, key by key (the wire format and the configuration's
// types are kept apart on purpose).
func sandboxSection(sb *proto.JailSandbox) *config.Sandbox {
	return &config.Sandbox{
		Enabled: sb.Enabled, Backend: sb.Backend, RWPaths: sb.RWPaths, ROPaths: sb.ROPaths, Mask: sb.Mask,
		NoGPU: sb.NoGPU, Lockdown: sb.Lockdown, Network: sb.Network, Landlock: sb.Landlock, IdleTimeout: sb.IdleTimeout,
	}
}

// ServeJail is `warden worker --jail` on an ssh backend's remote host: it
// builds the local (bubblewrap) jail on workspaceDir with the spec's
// settings (seccomp, Landlock, pids cgroup), with in and out as the jail's
// own stdin and stdout, so the worker protocol passes straight through
// between the ssh session and the jailed worker: nothing is decoded,
// buffered or re-sent here. It returns when the worker exits (the host
// closed the session's input), or kills the jail at once when ctx ends or
// its parent (sshd: the connection dropped) dies.
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
	sb := sandboxSection(&spec.Sandbox)
	s, err := jail.Resolve(sb)
	if err != nil {
		return err
	}
	if s.Forced != "" {
		log.Error("sandbox forced into lockdown: "+s.Forced, "workspace", workspaceDir)
	}
	p, err := bwrap.StartStdio(ctx, &jail.Launch{
		Workspace: workspaceDir, Sandbox: sb, Settings: s, Mask: spec.Mask, Protected: spec.Protected,
		EnvAllowlist: spec.EnvAllowlist, HostEnv: spec.Env, Logger: log, StartTimeout: 15 * time.Second,
	}, in, out)
	if err != nil {
		return err
	}
	// The jail holds the session's input and output now; the worker ends
	// when the host closes its input.
	in.Close()
	out.Close()
	exited := make(chan error, 1)
	go func() { exited <- p.Wait() }()
	select {
	case err := <-exited:
		p.Cleanup()
		if err != nil {
			return fmt.Errorf("the jailed worker failed (%v): %s", err, p.StderrTail())
		}
		return nil
	case <-ctx.Done():
		p.Kill()
		<-exited
		p.Cleanup()
		return errors.New("the ssh session ended; the jail was killed")
	}
}
