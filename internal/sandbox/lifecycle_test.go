package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
)

func TestJailSeccompInForce(t *testing.T) {
	w, _ := startJail(t, nil, nil, nil)
	if got := w.Info().Seccomp; got != "enforced" {
		t.Fatalf("seccomp state %q, want enforced", got)
	}
	res := run(t, w, "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status")
	if !strings.Contains(res.Output, "Seccomp:\t2") {
		t.Errorf("a jailed command runs without the filter:\n%s", res.Output)
	}
	// ptrace is allowed by capabilities (a process may trace its own
	// child) and denied only by the filter.
	res = run(t, w, `perl -e 'require "syscall.ph"; my $r = syscall(101, 0, 0, 0, 0); print "ptrace=$r errno=", $!+0, "\n"'`)
	if !strings.Contains(res.Output, "ptrace=-1 errno=1") {
		t.Errorf("PTRACE_TRACEME was not denied with EPERM: %q", res.Output)
	}
}

func TestJailDiesWithWarden(t *testing.T) {
	needJail(t)
	dir := t.TempDir()
	holder := exec.Command(os.Args[0], "hold-jail", dir)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error") {
		holder.Process.Kill()
		t.Fatalf("holder: %q %v", line, err)
	}
	var bwrapPID int
	var cgDir, list string
	fmt.Sscanf(line, "%d %s %s", &bwrapPID, &cgDir, &list)
	_, rest, _ := strings.Cut(line, "[")
	var pids []int
	for _, f := range strings.Fields(strings.TrimSuffix(strings.TrimSpace(rest), "]")) {
		var p int
		fmt.Sscan(f, &p)
		pids = append(pids, p)
	}
	t.Cleanup(func() { (&pidsCgroup{dir: cgDir}).destroy() })
	if len(pids) < 4 {
		t.Fatalf("holder reported %q", line)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var alive []int
		for _, p := range append(pids, bwrapPID) {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); err == nil && !bytes.Contains(b, []byte(") Z ")) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jailed processes outlived warden: %v", alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestJailKilledMidWrite(t *testing.T) {
	old := []byte("old contents\n")
	big := bytes.Repeat([]byte("new contents, a lot of them\n"), (24<<20)/28)
	caught := 0
	for try := 0; try < 6 && caught < 2; try++ {
		w, dir := startJail(t, nil, map[string]string{"data.txt": string(old)}, nil)
		errc := make(chan error, 1)
		go func() { errc <- w.FS().WriteFile("data.txt", big, 0o644) }()
		// Kill the worker as soon as its temporary file is on disk, i.e.
		// in the middle of writing it.
		mid := false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			tmps, _ := filepath.Glob(filepath.Join(dir, ".warden-*"))
			if len(tmps) > 0 {
				mid = true
				break
			}
			select {
			case err := <-errc:
				errc <- err
				deadline = time.Time{}
			default:
			}
			time.Sleep(100 * time.Microsecond)
		}
		w.kill()
		err := <-errc
		got, rerr := os.ReadFile(filepath.Join(dir, "data.txt"))
		if rerr != nil {
			t.Fatalf("data.txt gone: %v", rerr)
		}
		if !bytes.Equal(got, old) && !bytes.Equal(got, big) {
			t.Fatalf("torn file: %d bytes (write error %v)", len(got), err)
		}
		if mid && err != nil {
			caught++
		}
		t.Logf("killed mid-write: %v; write error: %v; file is old: %v", mid, err, bytes.Equal(got, old))
	}
	if caught == 0 {
		t.Fatal("never caught the worker in the middle of a write; the test proved nothing")
	}
}

func TestManagerLifecycle(t *testing.T) {
	needJail(t)
	defer func(d time.Duration) { reapInterval = d }(reapInterval)
	reapInterval = 50 * time.Millisecond
	m := NewManager(nil)
	defer m.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("F"), 0o644)
	opts := &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true, IdleTimeout: 1}, RequestTimeout: 2 * time.Second}
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
	w1.kill()
	<-w1.Done()
	if b, err := fsys.ReadFile("f.txt", 0); err != nil || string(b) != "F" {
		t.Fatalf("after a crash: %q %v", b, err)
	}
	w2, _ := m.Get(context.Background(), opts)
	if w2 == w1 || w2.Info().PID == w1.Info().PID {
		t.Fatal("no new worker after a crash")
	}

	// A request that times out resets the worker.
	_, err := w2.call(context.Background(), &Request{Op: OpExec, Argv: []string{"sleep", "5"}, TimeoutMS: 5000}, 300*time.Millisecond)
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

	// Idle: reaped after idle_timeout.
	select {
	case <-w3.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("idle worker not reaped")
	}
	if l := m.List(); len(l) != 0 {
		t.Errorf("List after reaping: %v", l)
	}
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
	t.Run("landlock on without the layer", func(t *testing.T) {
		needJail(t)
		if landlockRestrict != nil {
			t.Skip("the Landlock layer is built in")
		}
		_, err := Start(context.Background(), &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true, Landlock: "on"}})
		if err == nil || !strings.Contains(err.Error(), "Landlock") {
			t.Fatalf("landlock = on started without Landlock: %v", err)
		}
	})
}
