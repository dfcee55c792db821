package bwrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/testenv"
)

// TestConformance runs the backend suite against bubblewrap on this host.
func TestConformance(t *testing.T) {
	testenv.Need(t, "bwrap")
	sandboxtest.Run(t, &sandboxtest.Fixture{
		Name:      jail.BackendLocal,
		Sandbox:   func() *config.Sandbox { return &config.Sandbox{Enabled: true, Backend: jail.BackendLocal} },
		Probe:     jail.JailExe,
		Processes: cgroupProcs,
	})
}

// cgroupProcs counts the processes in the jail's pids cgroup.
func cgroupProcs(t *testing.T, w *sandbox.Worker) int {
	t.Helper()
	cg := w.Info().Cgroup
	if cg == "" {
		t.Fatal("the jail has no pids cgroup to count its processes in")
	}
	b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	return len(strings.Fields(string(b)))
}
