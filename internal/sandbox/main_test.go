package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestMain doubles as `warden worker`: the jails started by the tests
// re-execute this test binary, bound at JailExe, with "worker" as its first
// argument.
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "worker" && os.Args[2] == "--spec" {
		if err := ServeWorker(context.Background(), os.Args[3], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// needJail skips a test that needs a real jail when bubblewrap is missing,
// or fails it when WARDEN_REQUIRE_SANDBOX=1 (as in CI).
func needJail(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("WARDEN_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("bwrap is missing and WARDEN_REQUIRE_SANDBOX=1: %v", err)
		}
		t.Skipf("skipping: bwrap is not installed (%v); set WARDEN_REQUIRE_SANDBOX=1 to make this a failure", err)
	}
}
