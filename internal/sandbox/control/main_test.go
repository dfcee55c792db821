package control_test

import (
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// TestMain doubles as `warden worker` for the jails the tests start.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
