// Package command runs the commands run_command decided to run.
//
// Runner is the contract; Local runs on the host. Each command gets its own
// process group, standard input from /dev/null, exactly Spec.Env as its
// environment (build it with Environ: an allowlist, so API keys and tokens
// in warden's environment never reach a command), a working directory the
// caller resolved inside the workspace, a timeout that kills the whole
// process group, and output cut to Spec.MaxOutputLines keeping head and
// tail with a marker saying how many lines were cut. When the command ends,
// whatever it left running in its process group is killed too.
//
// Threat model. Local is not a jail: what a command may do is decided
// before it runs (internal/shellpolicy, policy, approvals); Local only
// bounds how long it runs, what environment it inherits and where it
// starts. Not covered: a process that leaves the process group (setsid,
// double fork into a new session) survives the timeout, though Run does not
// wait for it more than Local.WaitDelay; a command can read and write
// anything the warden user can, chdir anywhere and use the network. Use the
// sandbox runner for confinement.
package command
