package docker_test

import (
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// TestMain doubles as `warden worker` and the suite's helpers: the
// containers the tests start run this test binary, bound at jail.JailExe.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
