package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
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
	if len(os.Args) > 2 && os.Args[1] == "hold-jail" {
		holdJail(os.Args[2])
		return
	}
	code := m.Run()
	if code == 0 {
		// Every worker's goroutines end with it, and the tests close them all.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// holdJail starts a jail on dir, starts a long command in it, prints the
// jail's process ids and waits to be killed: the stand-in for a warden
// that dies without cleaning up.
func holdJail(dir string) {
	w, err := Start(context.Background(), &Options{Workspace: dir, Sandbox: &config.Sandbox{Enabled: true}})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	go w.Runner().Run(context.Background(), command.Spec{Shell: "sleep 1000 & sleep 1000", Timeout: 500 * time.Second})
	for len(w.cg.pids()) < 4 {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println(w.cmd.Process.Pid, w.cg.dir, w.cg.pids())
	select {}
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
