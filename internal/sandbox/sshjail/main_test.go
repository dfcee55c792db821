package sshjail_test

import (
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// TestMain runs the suite's helpers: this test binary, bound into the
// remote jail, is the suite's probe there.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
