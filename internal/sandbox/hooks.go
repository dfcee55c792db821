package sandbox

// The seccomp program and the Landlock layer come from
// internal/sandbox/seccomp and internal/sandbox/landlock. These variables
// are the seams through which this package uses them; while one is nil the
// corresponding layer is reported as "not built" (and landlock = "on" fails
// closed).

// seccompProgram returns the raw struct sock_filter array handed to
// bubblewrap with --seccomp.
var seccompProgram func() ([]byte, error)

// landlockRestrict restricts the calling process (and its future children)
// to reading ro and writing rw. mode is LandlockAuto or LandlockOn; it
// returns a description of what is enforced ("enforced (ABI 7)").
var landlockRestrict func(mode string, rw, ro []string) (string, error)
