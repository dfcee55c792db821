package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
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
// starts the local backend (bubblewrap) on workspaceDir with the spec's
// settings, and relays the worker protocol between in/out (the ssh
// session) and the jailed worker. The relay decodes each request and
// gives it a fresh id towards the worker, so a request is forwarded
// exactly once. It returns when in ends (the jail is stopped after the
// requests in flight), or at once when ctx ends or its parent (sshd) dies.
func ServeJail(ctx context.Context, workspaceDir, specJSON string, in io.Reader, out, errOut io.Writer) error {
	spec, err := ParseJailSpec(specJSON)
	if err != nil {
		return err
	}
	// When sshd goes (the connection dropped), stop at once.
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
	})
	if err != nil {
		return err
	}
	r := &relay{w: w, out: bufio.NewWriter(out)}
	return r.serve(ctx, in)
}

type relay struct {
	w   *Worker
	omu sync.Mutex
	out *bufio.Writer
}

// relayTimeout is the relay's own bound on a request: longer than any the
// host sets, which resets the whole session first.
const relayTimeout = MaxExecTimeout + 10*time.Minute

func (r *relay) write(resp *Response) error {
	line, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	r.omu.Lock()
	defer r.omu.Unlock()
	r.out.Write(line)
	r.out.WriteByte('\n')
	return r.out.Flush()
}

func (r *relay) serve(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, tooLong, err := readLine(br, MaxLineBytes)
			if err != nil {
				readErr <- err
				return
			}
			if tooLong {
				r.write(&Response{Error: &WireError{Kind: KindTooLarge, Message: fmt.Sprintf("request line is longer than %d bytes", MaxLineBytes)}})
				continue
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for {
		select {
		case <-ctx.Done():
			// sshd is gone or the worker died: no graceful end.
			r.w.kill()
			<-r.w.Done()
			wg.Wait()
			return context.Cause(ctx)
		case <-r.w.Done():
			cancel(fmt.Errorf("the jailed worker exited: %s", r.w.deadMsg()))
		case err := <-readErr:
			// The host closed the session's input: finish what is in
			// flight, then stop the jail (at once if sshd goes meanwhile).
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				r.w.kill()
				<-done
			}
			r.w.Close()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("failed to read request: %w", err)
		case line := <-lines:
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			req, bad := parseRequest(line)
			if bad != nil {
				if err := r.write(bad); err != nil {
					cancel(err)
				}
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				id := req.ID
				resp, err := r.w.call(ctx, req, relayTimeout)
				if resp == nil {
					// No answer from the jail: the host must not take
					// silence for one, so the session ends.
					cancel(fmt.Errorf("request %d (%s): %w", id, req.Op, err))
					return
				}
				resp.ID = id
				if err := r.write(resp); err != nil {
					cancel(err)
				}
			}()
		}
	}
}
