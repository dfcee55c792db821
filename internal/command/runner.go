package command

import (
	"context"
	"time"
)

// Spec is one command to run. Exactly one of Argv and Shell is set: Shell is
// a command line, judged by the shell policy as bash reads it and run as
// `bash --noprofile --norc -c LINE` (never sh); Argv is a program and its
// arguments, the program looked up on Env's PATH.
type Spec struct {
	Argv  []string
	Shell string
	// Dir is the working directory, workspace-relative ("" or "." for the root).
	Dir string
	// AbsDir is Dir resolved by the caller through the workspace (an absolute
	// host path inside it). Local needs it for any Dir other than the root.
	AbsDir string
	// Env is the complete environment (KEY=VALUE); the runner adds nothing.
	Env     []string
	Timeout time.Duration
	// MaxOutputLines cuts the combined output, keeping head and tail (0: no
	// cut by lines; the runner's byte bound still holds).
	MaxOutputLines int
}

// Result is what a finished command left behind.
type Result struct {
	ExitCode int           `json:"exit_code"`
	Output   string        `json:"output"` // stdout and stderr interleaved, possibly cut
	TimedOut bool          `json:"timed_out"`
	Duration time.Duration `json:"duration_ns"`
	// CutLines is how many lines were removed from the middle of Output.
	CutLines int `json:"cut_lines,omitempty"`
}

// Runner runs commands: on the host (Local) or in the workspace jail
// (sandbox, whose worker runs them with Local). An error means the command
// could not be run at all or was cancelled; a command that ran and failed,
// timed out, or whose program is missing is a Result with a non-zero
// ExitCode. Every Runner reports the same event with the same Result (see
// internal/command/commandtest).
type Runner interface {
	Run(ctx context.Context, spec Spec) (Result, error)
}
