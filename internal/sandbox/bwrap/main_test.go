package bwrap_test

import (
	"os"
	"testing"

	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// TestMain doubles as `warden worker` and the suite's helpers: the jails
// the tests start re-execute this test binary, bound at jail.JailExe. It is
// also the mask reader the window tests run in a jail (maskReader).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == maskReaderArg {
		os.Exit(maskReader(os.Args[2:]))
	}
	sandboxtest.Main(m)
}
