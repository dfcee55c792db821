// Package sandbox runs a workspace's tools inside a jail: one persistent
// worker per workspace (the warden binary re-executed as `warden worker`
// under bubblewrap), spoken to in JSON lines, through which every file
// access and every command of a sandboxed workspace goes.
//
// # Threat model
//
// The agent (or a prompt injection) controls the arguments of every file
// operation and every command line that reaches the worker, and can run any
// program available inside the jail. The jail must keep it from:
//
//   - reading host secrets: only /usr, /bin, /lib*, /sbin, /opt and an
//     allowlist of /etc entries (never shadow, gshadow, sudoers, ssh,
//     ssl/private) are visible, read-only; HOME and /tmp are private
//     tmpfs; the environment is cleared down to an allowlist, and no
//     variable whose name looks like a secret enters, even if allowlisted;
//   - reading masked paths of the workspace (.env, keys, warden.toml, the
//     user's masks): existing matches are covered with empty read-only
//     files or directories; literal masks that do not exist yet are covered
//     too (warden creates an empty placeholder on the host and mounts over
//     it), so a command can neither create nor read them;
//   - writing outside the workspace and rw_paths, or writing protected
//     paths (.git/hooks, .git/config: bound read-only);
//   - gaining privilege: every namespace is unshared, nested user
//     namespaces are disabled, all capabilities are dropped, the jail's
//     root is read-only, and the seccomp filter (internal/sandbox/seccomp,
//     when built in) denies the dangerous system calls;
//   - using the network under lockdown or network = false (own network
//     namespace: not even the host's loopback);
//   - exhausting the host: a pids cgroup bounds the jail's processes
//     (RLIMIT_NPROC does not bind a jail whose user is root on the host),
//     rlimits bound files and core dumps, and the jail dies with warden
//     (--die-with-parent, pid namespace, cgroup kill).
//
// A long-running warden serve offers its workers to the user's other
// warden processes (warden exec, warden sandbox status) on a control
// socket (control.go): HTTP over a unix socket in a 0700 directory of the
// user, each connection admitted only if SO_PEERCRED shows the server's uid
// and a process in the server's user and PID namespaces. A jailed command
// has namespaces of its own (a docker container shares the host's user
// namespace, not its PID namespace), so it is refused even where it can
// see the socket; commands sent there run through the same worker, in the
// jail.
//
// Inside the jail the worker still opens the workspace through
// internal/workspace, so confinement, masks and protected paths hold for
// file operations even if a mount were wrong, and Landlock
// (internal/sandbox/landlock, when built in) is a further layer. The
// worker makes itself undumpable, so the commands it runs (its user, its
// jail) cannot open its protocol pipes through /proc/PID/fd and answer the
// host's requests in its place.
//
// Long-lived processes (a stdio MCP server configured by the user) run in
// the same jail through Worker.Spawn: the worker starts them in their own
// process group and carries their stdin and stdout as streams (see
// "Streams" in proto.go), bounded in chunk size, in how far stdout is read
// ahead of the host (a chatty process blocks on its pipe, the worker does
// not buffer it) and in number. A stream is killed when the host closes it,
// when the worker's input ends, and with the jail when the worker is reset
// or warden dies; a worker with a live stream is not reaped as idle.
//
// A [sandbox] section that is invalid or names something unknown runs in
// lockdown; a backend this build does not have (modal) and a host without
// bubblewrap are errors. Nothing of a sandboxed workspace ever runs
// unjailed.
//
// # The docker backend
//
// backend = "docker" runs the same worker as the main process of one
// container per workspace (`docker run -i --rm --init`, through the docker
// CLI, so DOCKER_HOST and contexts apply), spoken to over the attached
// stdin/stdout. The image (docker_image, user config) must provide glibc:
// the warden binary is bind-mounted read-only and is dynamically linked; a
// busybox-only or musl image fails at start with an error saying so. The
// container has no network (--network none; network = true shares the
// host's, never under lockdown), no capabilities, no-new-privileges, a
// Docker seccomp profile converted from the same rule table, a read-only
// root with tmpfs /tmp and HOME, --pids-limit and --memory (memory_mb,
// default 2048 MiB), the environment of JailEnv only, masks as read-only
// empty bind mounts, protected paths read-only, and runs as the workspace
// owner's uid:gid (a workspace owned by root is refused). The Docker socket
// is never mounted. Containers are labelled warden.workspace and with the
// owning warden's boot id, pid and start time: a reaper process removes the
// container when warden dies, and a container whose warden is gone is
// removed at the next start. A missing client, an unreachable daemon, a
// missing image or no docker_image is an error wrapping
// ErrBackendUnavailable.
//
// Docker's profile goes through libseccomp (in runc), which drops the
// system calls it does not know (open_tree_attr with Debian 12's
// libseccomp 2.5.4), so the worker also installs warden's own filter on
// itself (seccomp TSYNC) before it serves: both filters bind every command,
// and the stricter answer wins.
//
// Known differences from the local backend: libseccomp keeps one
// comparison per argument, so personality is denied for every value but
// the query 0xffffffff (PER_LINUX too); RLIMIT_NPROC counts
// the owner's processes on the whole host (the pids limit is what bounds
// the container); the image's own ENV and /etc are the image's; the daemon
// must be on this machine, since the workspace is bind-mounted.
//
// # The ssh backend
//
// backend = "ssh" runs the same jail on another host: one SSH connection
// (golang.org/x/crypto/ssh) per workspace, on which `warden worker --jail`
// builds the bubblewrap jail there, with the session's stdin and stdout as
// the worker's. The remote host must have warden and bubblewrap (a host
// without bwrap is refused, never used unjailed) and the workspace already
// at remote_path. It also guards against:
//
//   - a host that is not the one configured: its key must be in known_hosts
//     (strict: an unknown, changed or revoked key is refused, never accepted
//     on first use; the key types negotiated are those on file);
//   - a private key others can read: an identity_file accessible by group
//     or others is refused, as ssh does (or the ssh agent is used);
//   - a dead or dropped connection: keepalives close a connection that stops
//     answering; requests in flight fail with ErrWorkerGone and are never
//     sent again (a command may have run once, never twice), and the next
//     request connects anew. When the session ends, the remote warden
//     (PR_SET_PDEATHSIG on sshd) kills its jail, which bwrap's
//     --die-with-parent and pid namespace take down whole;
//   - the host's environment: only JailEnv's allowlisted, non-secret
//     variables of the local host travel, and none of the ssh session's.
//
// Not covered: the remote host itself (its root, its sshd, its warden binary
// are trusted as the local ones are); syncing the workspace (it must be
// there); paths in answers (dirpath) are the remote host's, so with a
// remote_path other than the local path they name remote locations; the
// masks and rw_paths/ro_paths resolve on the remote host.
//
// # Non-goals and known limits
//
//   - The jail's first process (bubblewrap's init, docker-init) holds the
//     worker's protocol pipes as its stdin and stdout. Where Landlock is
//     enforced, a command cannot open /proc/1/fd/0 or /proc/1/fd/1; on a
//     kernel without Landlock it can, and could then forge answers to the
//     host or read its requests (the worker itself is not dumpable, so its
//     own /proc/self/fd are out of reach). `warden doctor` lists a missing
//     Landlock as degraded; landlock = "on" refuses to start without it.
//     Moving the protocol off the init's stdio is planned.
//   - Glob masks ("**/*.pem") are resolved when the worker starts: a match a
//     command creates later is visible to commands in that jail (the file
//     tools still refuse it). A file hard-linked to a masked file is not
//     masked for commands (the file tools refuse hard links).
//   - Placeholders for missing literal masks stay on the host, empty
//     (missing warden.toml and warden.yaml get one too: the config loader
//     reads an empty file as absent).
//   - Kernel bugs, side channels and denial of service through memory or
//     CPU are not covered; run warden in a VM for that.
//   - The control socket trusts every process of the user outside a jail
//     (the same trust as the user's shell); a command sent through it runs
//     with the environment of serve's worker, not of the caller.
//   - The worker protocol trusts its peer's framing (it is warden's own
//     child), but not its content: every request is bounded and checked.
package sandbox
