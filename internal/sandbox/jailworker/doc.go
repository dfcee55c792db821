// Package jailworker is everything that runs inside a jail: `warden
// worker`, which serves the protocol of internal/sandbox/proto on its stdin
// and stdout. It does not import internal/sandbox (the host side), so the
// compiler keeps the two sides of the trust boundary apart.
//
// Serve sets the worker's rlimits, makes it undumpable, opens the
// workspace through internal/workspace, applies Landlock
// (internal/sandbox/landlock) and, where the jail asks for it (docker),
// stacks warden's own seccomp filter on itself, then serves: file
// operations through the workspace, commands through command.Local (the
// runner the host uses too), long-lived processes as streams.
//
// # Threat model
//
// Its input comes from the host (warden itself); the commands it runs are
// the agent's and share its user and its jail:
//
//   - Inside the jail the worker still opens the workspace through
//     internal/workspace, so confinement, masks and protected paths hold
//     for file operations even if a mount were wrong, and Landlock is a
//     further layer.
//   - The worker makes itself undumpable, so the commands it runs cannot
//     open its protocol pipes through /proc/PID/fd and answer the host's
//     requests in its place, nor read them; the commands are dumpable again
//     after their execve.
//   - Every request is bounded and checked, and a panic in a handler is an
//     error response, not the end of the worker.
//   - A command runs in its own process group, killed whole at its timeout
//     and when it ends; a stream's process group is killed when the host
//     closes the stream, when the worker's input ends, and with the jail.
//     Stream processes are started and signalled from one OS thread
//     (procThread), so that a Landlock domain per thread never stands
//     between the worker and a process it must kill.
//
// # Non-goals
//
// It is not a jail by itself: run outside one (WARDEN_SANDBOX unset) it
// refuses to start. A process that leaves its process group (setsid)
// survives its command but not the jail.
package jailworker
