package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/testenv"
)

// startJail starts a local (bubblewrap) worker on a fresh workspace
// holding files. The backends' own behaviour is the conformance suite's
// (internal/sandbox/sandboxtest); these tests are about the host side.
func startJail(t *testing.T, sb *config.Sandbox, files map[string]string) (*Worker, string) {
	t.Helper()
	testenv.Need(t, "bwrap")
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sb == nil {
		sb = &config.Sandbox{Enabled: true, Backend: BackendLocal}
	}
	w, err := Start(context.Background(), &Options{Workspace: dir, Sandbox: sb, StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	real, _ := filepath.EvalSymlinks(dir)
	return w, real
}

func run(t *testing.T, w *Worker, shell string) command.Result {
	t.Helper()
	res, err := w.Runner().Run(context.Background(), command.Spec{Shell: shell, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("run %q: %v", shell, err)
	}
	return res
}

// cgroupPIDs lists the processes in the jail's pids cgroup; the test
// fails when the jail has none (a lockdown jail cannot start without one,
// and this host has the controller: CI installs what the suite needs).
func cgroupPIDs(t *testing.T, w *Worker) []int {
	t.Helper()
	cg := w.Info().Cgroup
	if cg == "" {
		testenv.Skip(t, "the jail has no pids cgroup to count its processes in")
	}
	b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}
