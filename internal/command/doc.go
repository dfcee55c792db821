// Package command runs the commands run_command decided to run.
//
// Runner is the contract; Local implements it, on the host for an
// unsandboxed workspace and inside the jail as the sandbox worker's runner,
// so a command reads the same to the model wherever it ran. Each command
// gets its own process group, standard input from /dev/null, exactly
// Spec.Env as its environment (build it with Environ: an allowlist, so API
// keys and tokens in warden's environment never reach a command), a working
// directory the caller resolved inside the workspace, a timeout that kills
// the whole process group (exit 124 and a last line saying so), and output
// cut to Spec.MaxOutputLines and Local.MaxOutputBytes keeping head and tail
// with a marker saying how many lines were cut. When the command ends,
// whatever it left running in its process group is killed too, again and
// again until the group is empty. A program that is not on the command's
// PATH is exit 127 "NAME: command not found", as a shell says it.
//
// A command line (Spec.Shell) runs as `bash --noprofile --norc -c LINE`:
// bash is the dialect internal/shellpolicy judges, and /bin/sh (dash on
// Debian) reads some lines differently, so a judged line never runs under
// another shell. bash is taken from fixed system paths before PATH, and
// where it is missing the call is refused (ErrNoBash), never run by sh. The
// variables through which bash would run or parse something other than the
// line (BASH_ENV, ENV, SHELLOPTS, BASHOPTS, exported functions, ...) are
// dropped from its environment.
//
// Threat model. Local is not a jail: what a command may do is decided
// before it runs (internal/shellpolicy, policy, approvals); Local only
// bounds how long it runs, what environment it inherits, where it starts,
// which shell reads it and how much output it leaves. Not covered: a
// process that leaves the process group (setsid, double fork into a new
// session) survives the timeout, though Run does not wait for it more than
// Local.WaitDelay; on the host a command can read and write anything the
// warden user can, chdir anywhere and use the network. Use the sandbox for
// confinement.
package command
