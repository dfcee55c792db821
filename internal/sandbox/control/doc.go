// Package control is the control endpoint of a long-running `warden
// serve`: other warden processes of the same user reach the workers it
// holds through it. `warden exec` runs its command in the held worker
// instead of building a jail for the call, and `warden sandbox status`
// lists the workers. It is HTTP over a unix socket named serve-PID.sock in
// a private directory (Dir).
//
// # Threat model
//
// Who may connect: the directory is 0700 and the socket 0600, both owned by
// the user; on top of that every connection's SO_PEERCRED must show the
// server's uid and a process in the server's user and PID namespaces. A
// jailed command runs in namespaces of its own (bubblewrap --unshare-user
// and --unshare-pid; a docker container shares the host's user namespace
// but has a PID namespace of its own), so even a jail that could see the
// socket (a workspace holding the control directory) is refused. Commands
// sent here run through the same sandbox.Manager.Runner as the server's own
// tool calls: inside the jail, never beside it, and only in a worker
// started with the same options (their fingerprint). Every request is
// bounded and checked (DecodeRequest); a client checks that the socket's
// server is its own user before it sends a command line.
//
// # Non-goals
//
// The control socket trusts every process of the user outside a jail (the
// same trust as the user's shell); a command sent through it runs with the
// environment of serve's worker, not of the caller.
package control
