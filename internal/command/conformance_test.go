package command_test

import (
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/command/commandtest"
)

// TestLocalConformance runs the runner table every sandbox backend runs too
// (internal/sandbox/sandboxtest), against the host runner.
func TestLocalConformance(t *testing.T) {
	t.Parallel()
	commandtest.Run(t, func(t *testing.T) commandtest.Target {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return commandtest.Target{Runner: &command.Local{Root: dir}, Dir: dir}
	})
}
