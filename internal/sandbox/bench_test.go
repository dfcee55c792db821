package sandbox_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/bwrap"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
	"github.com/wardenhq/warden/internal/testenv"
	"github.com/wardenhq/warden/internal/workspace"
)

// The benchmarks compare, per call: the persistent jailed worker, the same
// thing unjailed (the worker's runner on the host, in-process file I/O),
// and a fresh bubblewrap jail per call. bench/sandbox.sh runs them and
// prints the ratios.

func benchWorker(b *testing.B) (*sandbox.Worker, string) {
	b.Helper()
	testenv.Need(b, "bwrap")
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "r.txt"), bytes.Repeat([]byte("x"), 4096), 0o644)
	w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	real, _ := filepath.EvalSymlinks(dir)
	return w, real
}

func BenchmarkExecTrue(b *testing.B) {
	spec := command.Spec{Argv: []string{"/bin/true"}, Timeout: 10 * time.Second}
	b.Run("worker", func(b *testing.B) {
		w, _ := benchWorker(b)
		r := w.Runner()
		for b.Loop() {
			if res, err := r.Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		// The runner the worker uses, on the host.
		r := &command.Local{Root: b.TempDir()}
		for b.Loop() {
			if res, err := r.Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("bwrap-per-call", func(b *testing.B) {
		testenv.Need(b, "bwrap")
		dir, _ := filepath.EvalSymlinks(b.TempDir())
		exe, _ := os.Executable()
		sp, err := seccomp.Program(nil)
		if err != nil {
			b.Fatal(err)
		}
		prog, err := seccomp.Assemble(sp)
		if err != nil {
			b.Fatal(err)
		}
		layout, err := jail.NewLayout(dir, exe, jail.Settings{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		p := &bwrap.Plan{Layout: layout, System: bwrap.HostSystem(), Etc: bwrap.HostEtc(), Env: jail.JailEnv(nil, nil),
			SeccompFD: 3, Command: []string{"/bin/true"}}
		args, err := p.Args()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			f, err := bwrap.MemFile("seccomp", prog)
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command("bwrap", args...)
			cmd.ExtraFiles = []*os.File{f}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatal(string(out), err)
			}
			f.Close()
		}
	})
}

func BenchmarkReadFile4K(b *testing.B) {
	b.Run("worker", func(b *testing.B) {
		w, _ := benchWorker(b)
		fsys := w.FS()
		for b.Loop() {
			if _, err := fsys.ReadFile("r.txt", 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		dir := b.TempDir()
		os.WriteFile(filepath.Join(dir, "r.txt"), bytes.Repeat([]byte("x"), 4096), 0o644)
		root, err := workspace.Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		for b.Loop() {
			if _, err := root.ReadFile("r.txt", 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkWriteFile4K(b *testing.B) {
	data := bytes.Repeat([]byte("y"), 4096)
	b.Run("worker", func(b *testing.B) {
		w, _ := benchWorker(b)
		fsys := w.FS()
		for b.Loop() {
			if err := fsys.WriteFile("w.txt", data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		root, err := workspace.Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		for b.Loop() {
			if err := root.WriteFile("w.txt", data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkColdStart(b *testing.B) {
	testenv.Need(b, "bwrap")
	dir := b.TempDir()
	for b.Loop() {
		w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		w.Close()
		b.StartTimer()
	}
}

// BenchmarkReadFile4KWhileExec is BenchmarkReadFile4K/worker while a
// command runs in the same worker (sleep, started before and killed
// after): a read must not wait for the command's wait to give up its
// thread. It reports the 99th percentile and the slowest call, with a
// pause between calls so that the worker goes idle in between, as it does
// between an agent's calls.
func BenchmarkReadFile4KWhileExec(b *testing.B) {
	w, _ := benchWorker(b)
	fsys := w.FS()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Runner().Run(ctx, command.Spec{Argv: []string{"/bin/sleep", "600"}, Timeout: 10 * time.Minute})
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond) // the sleep is running
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		time.Sleep(2 * time.Millisecond)
		b.StartTimer()
		t0 := time.Now()
		if _, err := fsys.ReadFile("r.txt", 0); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}
