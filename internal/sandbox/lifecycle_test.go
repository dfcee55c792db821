package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/testenv"
)

func TestManagerLifecycle(t *testing.T) {
	testenv.Need(t, "bwrap")
	m := NewManager(nil)
	defer m.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("F"), 0o644)
	opts := &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true}, RequestTimeout: 2 * time.Second}
	fsys, runner := m.FS(opts), m.Runner(opts)

	// Several sessions at once share one worker.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%d.txt", i)
			if err := fsys.WriteFile(name, []byte(name), 0o644); err != nil {
				errs <- err
				return
			}
			res, err := runner.Run(context.Background(), command.Spec{Argv: []string{"cat", name}})
			if err != nil || res.Output != name {
				errs <- fmt.Errorf("session %d: %q %v", i, res.Output, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if l := m.List(); len(l) != 1 {
		t.Fatalf("%d workers for one workspace", len(l))
	}
	w1, _ := m.Get(context.Background(), opts)

	// A crash: the next call gets a new worker.
	w1.Kill()
	<-w1.Done()
	if b, err := fsys.ReadFile("f.txt", 0); err != nil || string(b) != "F" {
		t.Fatalf("after a crash: %q %v", b, err)
	}
	w2, _ := m.Get(context.Background(), opts)
	if w2 == w1 || w2.Info().PID == w1.Info().PID {
		t.Fatal("no new worker after a crash")
	}

	// A request that times out resets the worker.
	_, err := w2.call(context.Background(), &proto.Request{Op: proto.OpExec, Argv: []string{"sleep", "5"}, TimeoutMS: 5000}, 300*time.Millisecond)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	select {
	case <-w2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("timed-out worker still running")
	}
	w3, err := m.Get(context.Background(), opts)
	if err != nil || w3 == w2 {
		t.Fatalf("no new worker after a timeout: %v", err)
	}

	// Reaping an idle worker is TestManagerTime's (under synctest).
}

func TestStartRefusals(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		opts *Options
		want error
	}{
		{"modal", &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true, Backend: "modal"}}, ErrBackendUnavailable},
		{"docker without docker_image", &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true, Backend: "docker"}}, ErrBackendUnavailable},
		{"no bwrap", &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true}, Bwrap: "/nonexistent/bwrap"}, ErrUnsupportedHost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Start(context.Background(), tc.opts)
			if err == nil {
				w.Close()
				t.Fatal("started")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var h interface{ Hint() string }
			if !errors.As(err, &h) || h.Hint() == "" {
				t.Errorf("no hint on %v", err)
			}
		})
	}
	t.Run("landlock on without Landlock", func(t *testing.T) {
		testenv.Need(t, "bwrap")
		if landlock.ABI() > 0 {
			t.Skip("this kernel has Landlock: landlock = \"on\" starts")
		}
		_, err := Start(context.Background(), &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true, Landlock: "on"}})
		if err == nil || !strings.Contains(err.Error(), "Landlock") {
			t.Fatalf("landlock = on started without Landlock: %v", err)
		}
	})
}
