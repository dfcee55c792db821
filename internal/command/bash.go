package command

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Command lines run under bash, the dialect internal/shellpolicy reads.
// /bin/sh is dash on Debian and Ubuntu, and dash reads some lines another
// way (`echo $'\' ; touch x #'` is one echo to bash, an echo and a touch to
// dash), so a line judged as bash never runs under sh: where bash is
// missing, the call is refused.

// bashPaths are where bash is looked for first: fixed system paths, so that
// a "bash" the agent planted in a PATH directory it can write is never the
// shell. PATH (warden's own, not the command's) is the last resort, for
// systems such as NixOS that have no /bin/bash.
var bashPaths = []string{"/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"}

// ErrNoBash refuses a command line where bash is not installed.
var ErrNoBash = errors.New("bash is not installed, and warden runs command lines only with bash (the dialect its judge reads), never with sh")

// bash returns the bash of l, or an error wrapping ErrNoBash.
func (l *Local) bash() (string, error) {
	if l.Bash != "" {
		if !isExecutable(l.Bash) {
			return "", fmt.Errorf("%s: %w; install bash (apt-get install bash) or point warden at it", l.Bash, ErrNoBash)
		}
		return l.Bash, nil
	}
	return findBash(bashPaths, exec.LookPath)
}

// findBash returns the first executable of paths, else what lookPath finds
// for "bash".
func findBash(paths []string, lookPath func(string) (string, error)) (string, error) {
	for _, p := range paths {
		if isExecutable(p) {
			return p, nil
		}
	}
	if p, err := lookPath("bash"); err == nil && isExecutable(p) {
		return p, nil
	}
	return "", fmt.Errorf("looked in %s and on PATH: %w; install bash (apt-get install bash, or bash in the jail's image)", strings.Join(paths, ", "), ErrNoBash)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// bashStartupEnv are variables bash acts on when it starts, before it
// reads the line: a file it sources (BASH_ENV, ENV), options that change
// how the line is parsed or run (SHELLOPTS, BASHOPTS, POSIXLY_CORRECT),
// expansions (GLOBIGNORE, CDPATH, IFS) and tracing (PS4, BASH_XTRACEFD).
// None of them comes from the agent (the environment is warden's
// allowlist), but an allowlisted one would make bash run something other
// than the line that was judged, so the runner drops them, and every
// exported function (BASH_FUNC_name%%).
var bashStartupEnv = []string{"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "POSIXLY_CORRECT", "GLOBIGNORE", "CDPATH", "IFS", "PS4", "BASH_XTRACEFD"}

// bashEnv returns env without what bash would act on at startup.
func bashEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "BASH_FUNC_") || slices.Contains(bashStartupEnv, k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
