package sandbox

import (
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// The seccomp program and the Landlock layer come from
// internal/sandbox/seccomp and internal/sandbox/landlock. These variables
// are the seams through which this package uses them; while one is nil the
// corresponding layer is reported as "not built in" (and landlock = "on"
// fails closed).

// seccompProgram returns the raw struct sock_filter array handed to
// bubblewrap with --seccomp. Under lockdown it also denies IP sockets.
var seccompProgram = func(lockdown bool) ([]byte, error) {
	prog, err := seccomp.Program(&seccomp.Options{DenyNetwork: lockdown})
	if err != nil {
		return nil, err
	}
	return seccomp.Assemble(prog)
}

// landlockRestrict restricts the calling process (and its future children)
// to reading ro and writing rw. mode is LandlockAuto or LandlockOn; it
// returns a description of what is enforced ("enforced (ABI 7)").
var landlockRestrict = func(mode string, rw, ro []string) (string, error) {
	st, err := landlock.Restrict(mode, rw, ro)
	return st.String(), err
}

// newRunner builds the runner the worker uses for exec requests. It is
// groupRunner rather than command.Local until Local kills a process group
// until it is empty (see groupRunner).
var newRunner = func(workspaceDir string) command.Runner { return &groupRunner{dir: workspaceDir} }
