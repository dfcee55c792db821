package sandbox_test

import (
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// TestMain doubles as `warden worker`: the jails started by the tests
// re-execute this test binary, bound at jail.JailExe.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
