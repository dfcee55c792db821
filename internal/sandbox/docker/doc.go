// Package docker is the docker backend of internal/sandbox: backend =
// "docker" runs the same worker as the main process of one container per
// workspace (`docker run -i --rm --init`, through the docker CLI, so
// DOCKER_HOST and contexts apply), spoken to over the attached stdin and
// stdout. It translates the jail's layout (internal/sandbox/jail) into
// --mount and --tmpfs flags.
//
// # Threat model
//
// What runs in the container is hostile. The image (docker_image, user
// config) must provide glibc: the warden binary is bind-mounted read-only
// and is dynamically linked; a busybox-only or musl image fails at start
// with an error saying so. Command lines need bash in the image; without it
// they are refused, saying so, and never run by the image's sh. The
// container has no network (--network none; network = "host" shares the
// host's, never under lockdown; under "allowlist" it stays --network none
// and reaches out only through the egress gateway's socket, bound in),
// no capabilities, no-new-privileges, a
// Docker seccomp profile converted from the same rule table, a read-only
// root with tmpfs /tmp and HOME, --pids-limit and --memory (memory_mb,
// default 2048 MiB), the environment of jail.JailEnv only, masks as
// read-only empty bind mounts, protected paths read-only, and runs as the
// workspace owner's uid:gid (a workspace owned by root is refused). The
// Docker socket is never mounted. Containers are labelled warden.workspace
// and with the owning warden's boot id, pid and start time: a reaper
// process removes the container when warden dies, and a container whose
// warden is gone is removed at the next start. A missing client, an
// unreachable daemon, a missing image or no docker_image is an error
// wrapping jail.ErrBackendUnavailable.
//
// Docker's profile goes through libseccomp (in runc), which drops the
// system calls it does not know (open_tree_attr with Debian 12's
// libseccomp 2.5.4), so the worker also installs warden's own filter on
// itself (seccomp TSYNC) before it serves: both filters bind every command,
// and the stricter answer wins. A path the docker client would read back
// otherwise (CR LF in a --mount field) is refused rather than mounted
// elsewhere.
//
// # Non-goals and known differences from the local backend
//
//   - libseccomp keeps one comparison per argument, so personality is
//     denied for every value but the query 0xffffffff (PER_LINUX too).
//   - RLIMIT_NPROC counts the owner's processes on the whole host (the
//     pids limit is what bounds the container).
//   - The image's own ENV and /etc are the image's.
//   - The daemon must be on this machine, since the workspace is
//     bind-mounted; the daemon itself (and whoever can reach its socket) is
//     trusted as root is.
//   - Docker orders mounts parents first itself: a rw_path below a
//     protected path stays writable there (bubblewrap keeps the layout's
//     order, and the protected path wins).
//   - docker-init holds the protocol pipes as the container's first
//     process; without Landlock a command can reach them through /proc/1
//     (see internal/sandbox/bwrap).
package docker
