package command

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/testenv"
)

// The lines of issue 13 that dash reads otherwise than bash: under Local
// each runs as bash reads it; under dash (the oracle, so that this test can
// fail) each does the harm.
func TestLocalRunsBashNotDash(t *testing.T) {
	t.Parallel()
	dash := testenv.Need(t, "dash")[0]
	for _, tc := range []struct {
		line, marker string
		setup        func(dir string)
	}{
		{line: `echo $'\' ; touch PWNED #'`, marker: "PWNED"},
		{line: `x=$'\'; touch PWNED2 #'`, marker: "PWNED2"},
		{line: `[[ a > TRUNC ]]`, marker: "TRUNC"},
		{line: `((rm -rf victim))`, marker: "victim", setup: func(dir string) { os.Mkdir(filepath.Join(dir, "victim"), 0o755) }},
	} {
		t.Run(tc.line, func(t *testing.T) {
			harmed := func(dir string) bool {
				_, err := os.Stat(filepath.Join(dir, tc.marker))
				if tc.setup != nil {
					return err != nil // the directory was removed
				}
				return err == nil
			}
			bashDir, dashDir := t.TempDir(), t.TempDir()
			if tc.setup != nil {
				tc.setup(bashDir)
				tc.setup(dashDir)
			}
			if _, err := (&Local{Root: bashDir}).Run(context.Background(), Spec{Shell: tc.line, Env: testEnv()}); err != nil {
				t.Fatal(err)
			}
			if harmed(bashDir) {
				t.Errorf("Local ran %q as dash reads it", tc.line)
			}
			cmd := exec.Command(dash, "-c", tc.line)
			cmd.Dir = dashDir
			cmd.Run()
			if !harmed(dashDir) {
				t.Errorf("dash read %q as bash does; the row proves nothing", tc.line)
			}
		})
	}
}

// Without bash a command line is refused, naming what is missing; an argv
// command still runs.
func TestLocalRefusesWithoutBash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := &Local{Root: dir, Bash: "/nonexistent/bash"}
	_, err := l.Run(context.Background(), Spec{Shell: "touch ran", Env: testEnv()})
	if !errors.Is(err, ErrNoBash) || !strings.Contains(err.Error(), "/nonexistent/bash") || !strings.Contains(err.Error(), "never with sh") {
		t.Errorf("no bash: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the line ran without bash")
	}
	if res, err := l.Run(context.Background(), Spec{Argv: []string{"true"}, Env: testEnv()}); err != nil || res.ExitCode != 0 {
		t.Errorf("argv without bash: %+v %v", res, err)
	}

	_, err = findBash([]string{"/nonexistent/bin/bash"}, func(string) (string, error) { return "", exec.ErrNotFound })
	if !errors.Is(err, ErrNoBash) || !strings.Contains(err.Error(), "/nonexistent/bin/bash") || !strings.Contains(err.Error(), "apt-get install bash") {
		t.Errorf("findBash without bash: %v", err)
	}
	// A fixed path wins over a bash planted on PATH.
	planted := filepath.Join(t.TempDir(), "bash")
	os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o755)
	if got, err := findBash([]string{"/bin/bash"}, func(string) (string, error) { return planted, nil }); err != nil || got != "/bin/bash" {
		t.Errorf("findBash = %q, %v; want /bin/bash", got, err)
	}
}

// The variables through which bash would run or parse something else than
// the line never reach it.
func TestLocalBashStartupEnvDropped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rc := filepath.Join(dir, "rc")
	os.WriteFile(rc, []byte("echo sourced-rc\n"), 0o644)
	env := append(testEnv(), "BASH_ENV="+rc, "ENV="+rc, "SHELLOPTS=xtrace", "BASHOPTS=nullglob", "PS4=+traced ",
		"BASH_FUNC_echo%%=() { builtin echo hijacked; }", "KEEP=1")
	res, err := (&Local{Root: dir}).Run(context.Background(), Spec{Shell: "echo ran $KEEP nomatch*; env | grep -c -E '^(BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|BASH_FUNC)' || true", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "ran 1 nomatch*\n0\n" {
		t.Errorf("output %q: bash acted on its startup variables", res.Output)
	}
}

// A relative program path is the working directory's, not warden's.
func TestLocalRelativeProgram(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.sh"), []byte("#!/bin/sh\necho hello from $PWD\n"), 0o755)
	res, err := (&Local{Root: dir}).Run(context.Background(), Spec{Argv: []string{"./hello.sh"}, Env: testEnv()})
	if err != nil || res.Output != "hello from "+dir+"\n" {
		t.Errorf("./hello.sh: %+v %v", res, err)
	}
}
