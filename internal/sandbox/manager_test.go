package sandbox

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/jailworker"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/workspace"
)

// pipeBackend serves the worker protocol in this process, over pipes, with
// no jail: what the Manager does with time (idle reaping, timed-out
// requests) is tested with it under testing/synctest, where the clock is
// fake and a wait of ten minutes takes none.
type pipeBackend struct {
	runner command.Runner // for exec requests
}

func (b *pipeBackend) start(_ context.Context, l *jail.Launch) (*jail.Started, error) {
	root, err := workspace.Open(l.Workspace, nil)
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeProc{in: inR, cancel: cancel, done: make(chan struct{})}
	srv := &jailworker.Server{Root: root, Runner: b.runner, Hello: proto.Hello{Seccomp: "filter", Landlock: "off"}}
	go func() {
		defer close(p.done)
		srv.Serve(ctx, inR, outW)
		outW.Close()
		root.Close()
	}()
	return &jail.Started{Proc: p, Stdin: inW, Stdout: outR, WantSeccomp: true,
		Info: jail.Info{Workspace: root.Dir(), Backend: l.Settings.Backend}}, nil
}

type pipeProc struct {
	in     *io.PipeReader
	cancel context.CancelFunc // the server's context: what SIGKILL is to a jail
	done   chan struct{}
}

func (p *pipeProc) Kill() {
	p.cancel()
	p.in.CloseWithError(errors.New("killed"))
}
func (p *pipeProc) Wait() error        { <-p.done; return nil }
func (p *pipeProc) StderrTail() string { return "" }
func (p *pipeProc) Cleanup() error     { return nil }

// blockingRunner runs nothing: each command waits for its context.
type blockingRunner struct{}

func (blockingRunner) Run(ctx context.Context, _ command.Spec) (command.Result, error) {
	<-ctx.Done()
	return command.Result{}, ctx.Err()
}

func TestManagerTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, m *Manager, opts *Options)
	}{
		{"an idle worker is reaped after idle_timeout, not before", func(t *testing.T, m *Manager, opts *Options) {
			w, err := m.Get(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(90 * time.Second) // idle_timeout is 120 s
			synctest.Wait()
			if !w.Alive() {
				t.Fatal("reaped after 90 s of a 120 s idle timeout")
			}
			if _, err := w.FS().Stat("."); err != nil { // use resets the clock
				t.Fatal(err)
			}
			time.Sleep(90 * time.Second)
			synctest.Wait()
			if !w.Alive() {
				t.Fatal("reaped 90 s after its last use")
			}
			time.Sleep(35 * time.Second)
			synctest.Wait()
			if w.Alive() || len(m.List()) != 0 {
				t.Fatalf("not reaped 125 s after its last use (alive %v, %d listed)", w.Alive(), len(m.List()))
			}
			// The next use starts a new one.
			w2, err := m.Get(context.Background(), opts)
			if err != nil || w2 == w {
				t.Fatalf("after reaping: %v, same worker %v", err, w2 == w)
			}
		}},
		{"a request that times out resets the worker, once", func(t *testing.T, m *Manager, opts *Options) {
			w, err := m.Get(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = m.Runner(opts).Run(context.Background(), command.Spec{Argv: []string{"sleep"}, Timeout: time.Minute})
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("got %v, want ErrTimeout", err)
			}
			// The exec timeout plus the grace for killing its group.
			if d := time.Since(start); d != time.Minute+10*time.Second {
				t.Errorf("the request gave up after %v", d)
			}
			<-w.Done()
			w2, err := m.Get(context.Background(), opts)
			if err != nil || w2 == w || !w2.Alive() {
				t.Fatalf("after the reset: %v, same worker %v", err, w2 == w)
			}
		}},
		{"a cancelled exec resets the worker; a cancelled file request does not", func(t *testing.T, m *Manager, opts *Options) {
			w, err := m.Get(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := m.Runner(opts).Run(ctx, command.Spec{Argv: []string{"sleep"}, Timeout: time.Minute}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v", err)
			}
			<-w.Done()
			if _, err := m.FS(opts).Stat("."); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &pipeBackend{runner: blockingRunner{}}
				m := newManager(nil, map[string]Backend{jail.BackendLocal: {Start: b.start}})
				defer m.Close()
				opts := &Options{Workspace: t.TempDir(), Sandbox: &config.Sandbox{Enabled: true, IdleTimeout: 120}}
				tc.run(t, m, opts)
			})
		})
	}
}
