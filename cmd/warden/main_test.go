package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/wardenhq/warden/internal/testenv"
)

var update = flag.Bool("u", false, "rewrite testscript files with the actual output")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"warden":     func() { os.Exit(run(os.Args[1:])) },
		"procreader": procReader,
		"mkrequest":  mkRequest,
	})
}

func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// A user config home of the script's own, so the machine's
			// configuration never leaks into a test.
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/.state")
			env.Setenv("HOME", env.WorkDir+"/home")
			return nil
		},
		// [sandbox] is true where bubblewrap is installed; a script that
		// needs it skips elsewhere, and fails under WARDEN_REQUIRE_SANDBOX=1.
		Condition: func(cond string) (bool, error) {
			if cond != "sandbox" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			if testenv.Look("bwrap") != "" {
				return true, nil
			}
			if testenv.Required() {
				return false, errors.New("bubblewrap is not installed (apt-get install bubblewrap), and WARDEN_REQUIRE_SANDBOX=1")
			}
			return false, nil
		},
	})
}
