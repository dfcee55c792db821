package sandboxtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/control"
	"github.com/wardenhq/warden/internal/sandbox/jailworker"
)

// Arguments that make the test binary a helper instead of a test run.
const (
	// holdArg: start a jail, a long command in it, say so, and wait to be
	// killed (a warden that dies without cleaning up).
	holdArg = "sandboxtest-hold"
	// controlArg: listen on a control socket in a directory and wait for
	// stdin to close (a warden serve, as the workspace's owner).
	controlArg = "sandboxtest-control"
)

// Main is the TestMain of a package whose tests start jails: the jails
// re-execute the test binary, bound at jail.JailExe, as `warden worker`,
// and the suite's helpers (probes, a holder, a control server) are the test
// binary too. Otherwise it runs the tests and then looks for goroutines
// they left (every worker's goroutines end with it, and the tests close
// them all).
func Main(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "worker":
			if len(os.Args) > 3 && os.Args[2] == "--spec" {
				if err := jailworker.Serve(context.Background(), os.Args[3], os.Stdin, os.Stdout); err != nil {
					fmt.Fprintln(os.Stderr, "worker:", err)
					os.Exit(1)
				}
				os.Exit(0)
			}
		case probeArg:
			fmt.Println(probe(os.Args[2:]))
			os.Exit(0)
		case holdArg:
			hold(os.Args[2])
		case controlArg:
			serveControl(os.Args[2])
		}
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// holdSpec is what the holder is told.
type holdSpec struct {
	Options sandbox.Options
	// Marker names the long command's processes (exec -a).
	Marker string
}

// hold starts a jail, starts a long command in it, prints "ready" once the
// command runs, and waits to be killed.
func hold(specJSON string) {
	var spec holdSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	w, err := sandbox.Start(context.Background(), &spec.Options)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	go w.Runner().Run(context.Background(), command.Spec{
		Shell: marked(spec.Marker) + " & " + marked(spec.Marker), Timeout: 500 * time.Second,
	})
	for deadline := time.Now().Add(time.Minute); len(pidsWith(spec.Marker)) < 2; {
		if time.Now().After(deadline) {
			fmt.Println("error: the command never started")
			os.Exit(1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Println("ready")
	select {}
}

// serveControl listens on a control socket in dir, prints its path and
// serves until stdin closes.
func serveControl(dir string) {
	c, err := control.Listen(dir, nil, nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(c.Path())
	bufio.NewReader(os.Stdin).ReadString('\n')
	c.Close()
	os.Exit(0)
}
