package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// The benchmarks compare, per call: the persistent jailed worker, the same
// thing unjailed (the worker's runner on the host, in-process file I/O),
// and a fresh bubblewrap jail per call. bench/sandbox.sh runs them and
// prints the ratios.

func benchWorker(b *testing.B) (*Worker, string) {
	b.Helper()
	needJail(b)
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "r.txt"), bytes.Repeat([]byte("x"), 4096), 0o644)
	w, err := Start(context.Background(), &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true}})
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
		r := newRunner(b.TempDir())
		for b.Loop() {
			if res, err := r.Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("bwrap-per-call", func(b *testing.B) {
		needJail(b)
		dir, _ := filepath.EvalSymlinks(b.TempDir())
		exe, _ := os.Executable()
		prog, err := seccompProgram(false)
		if err != nil {
			b.Fatal(err)
		}
		p := &Plan{Workspace: dir, Exe: exe, System: hostSystem(), Etc: hostEtc(), Env: JailEnv(nil, nil),
			SeccompFD: 3, Command: []string{"/bin/true"}}
		args, err := p.Args()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			f, err := memfile("seccomp", prog)
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
	needJail(b)
	dir := b.TempDir()
	for b.Loop() {
		w, err := Start(context.Background(), &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		w.Close()
		b.StartTimer()
	}
}
