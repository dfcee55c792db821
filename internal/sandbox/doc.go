// Package sandbox is the host side of warden's jail: it runs a workspace's
// tools inside a jail, one persistent worker per workspace (the warden
// binary re-executed as `warden worker` in the jail), spoken to in JSON
// lines, through which every file access and every command of a sandboxed
// workspace goes.
//
// Start builds a jail with the backend the [sandbox] section names and
// starts a Worker in it; a Worker's FS and Runner are workspace.FS and
// command.Runner over the jail, and Spawn runs a long-lived process (a
// stdio MCP server) there, its stdin and stdout carried as a stream. The
// Manager keeps one worker per workspace: started on first use, reaped when
// idle, replaced after a crash or a timed-out request (a protocol reset),
// never asked to run a request twice.
//
// The packages along the trust boundary:
//
//   - internal/sandbox/jail: settings, the jail's layout (one pure function
//     of the settings), masks, the environment allowlist, and the contract
//     between this package and a backend. A leaf.
//   - internal/sandbox/proto: the worker protocol's wire types, including
//     what crosses to a remote host.
//   - internal/sandbox/jailworker: everything that runs inside the jail. It
//     does not import this package: the compiler keeps the sides apart.
//   - internal/sandbox/bwrap, docker, sshjail: the backends, listed in
//     registry.go (local, docker, ssh).
//   - internal/sandbox/control: the control socket through which other
//     warden processes of the user reach the workers of a warden serve.
//   - internal/sandbox/sandboxtest: the conformance suite every backend
//     passes (escapes, syscalls, network, lockdown, fork bomb, kills).
//   - internal/sandbox/seccomp and landlock: the filter and the second
//     filesystem wall.
//
// # Threat model
//
// The agent (or a prompt injection) controls the arguments of every file
// operation and every command line that reaches the worker, and can run any
// program available inside the jail. The jail must keep it from:
//
//   - reading host secrets: a jail sees only the system (bubblewrap: /usr,
//     /bin, /lib*, /sbin, /opt and an allowlist of /etc entries, never
//     shadow, gshadow, sudoers, ssh, ssl/private; a container: its image),
//     read-only; HOME and /tmp are private tmpfs; the environment is cleared
//     down to an allowlist, and no variable whose name looks like a secret
//     enters, even if allowlisted;
//   - reading masked paths of the workspace (.env, keys, warden.toml, the
//     user's masks), existing or not yet created (see jail);
//   - writing outside the workspace and rw_paths, or writing protected
//     paths: among them git's whole control surface (config, hooks,
//     commondir, config.worktree, info, worktrees, submodules' config and
//     hooks, gitlinks), bound read-only even where it did not exist, and
//     .git itself, which cannot be renamed or replaced (see jail);
//   - using what warden inherited: every descriptor above stderr is marked
//     close-on-exec before a backend starts, in the worker, and before
//     every command, so an agent host's leaked socket, pty or log file
//     reaches neither bubblewrap, docker, the jail nor a command;
//   - gaining privilege: every namespace is unshared, nested user
//     namespaces are disabled, all capabilities are dropped, the jail's
//     root is read-only, and the seccomp filter denies the dangerous system
//     calls and kills any made under a foreign architecture;
//   - using the network under lockdown or network = "none" (an own network
//     namespace: not even the host's loopback); under network =
//     "allowlist" the namespace is the same, and the worker's relay on its
//     loopback hands every connection to the jail's egress gateway on the
//     host (internal/egress, started and closed with the worker, its socket
//     and CA bundle bound read-only), which decides by [sandbox.egress];
//     every command gets the proxy variables and the brokered secrets'
//     placeholders whatever environment its request brings (the ssh
//     backend refuses allowlist: the relay hands sockets over a local unix
//     socket);
//   - exhausting the host: a pids cgroup (or the container's pids limit)
//     bounds the jail's processes, rlimits bound files and core dumps, and
//     the jail dies with warden.
//
// A [sandbox] section that is invalid or names something unknown runs in
// lockdown; a backend this build does not have (modal) and a host without
// bubblewrap are errors. Nothing of a sandboxed workspace ever runs
// unjailed.
//
// Long-lived processes (a stdio MCP server configured by the user) run in
// the same jail through Worker.Spawn: the worker starts them in their own
// process group and carries their stdin and stdout as streams (see
// "Streams" in internal/sandbox/proto), bounded in chunk size, in how far
// stdout is read ahead of the host (a chatty process blocks on its pipe,
// the worker does not buffer it) and in number. A stream is killed when the
// host closes it, when the worker's input ends, and with the jail when the
// worker is reset or warden dies; a worker with a live stream is not
// reaped as idle.
//
// The host does not trust what the worker sends either: a malformed line,
// a line too long, an event for no stream, stdout beyond the window the
// host granted, each resets the worker.
//
// # Non-goals and known limits
//
//   - Kernel bugs, side channels and denial of service through memory or
//     CPU are not covered; run warden in a VM for that.
//   - Each backend's own limits are in its package documentation (the
//     jail's first process holding the protocol pipes without Landlock;
//     the docker daemon; the remote host of the ssh backend).
//   - The masks' limits (glob matches created later, hard links) are in
//     internal/sandbox/jail.
package sandbox
