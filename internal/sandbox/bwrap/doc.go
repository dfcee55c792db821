// Package bwrap is the local backend of internal/sandbox: a bubblewrap
// jail on this host, with `warden worker` inside it, spoken to over its
// stdin and stdout. Plan.Args translates the jail's layout
// (internal/sandbox/jail) into bubblewrap's flags, as a pure function;
// Start builds the jail.
//
// # Threat model
//
// What runs inside is hostile. The jail has every namespace of its own
// (--unshare-all, a user namespace, nested user namespaces disabled),
// --die-with-parent, --new-session, --cap-drop ALL, --clearenv plus the
// allowlisted environment, the host's system directories and an allowlist
// of /etc read-only, the jail's own root read-only, no GPU devices under
// no_gpu, and warden's seccomp filter (--seccomp) denying the dangerous
// system calls with EPERM and killing any made under a foreign
// architecture. Under lockdown or network = "none" it has no network at all
// (not even the host's loopback); under "allowlist" only its own loopback,
// where the worker's relay hands connections to the egress gateway.
//
// A pids cgroup bounds the jail's processes: RLIMIT_NPROC does not bind a
// jail whose user is root on the host (the kernel exempts it), and a jail
// started by root runs as root. bubblewrap reports the jail's first process
// and waits (--info-fd, --block-fd) until warden has put it in the cgroup,
// so nothing forks before the limit holds. Lockdown refuses to start
// without the cgroup. The jail dies with warden: bubblewrap's
// --die-with-parent and the pid namespace take it down, and the cgroup
// catches anything left; cgroups of a warden that died are swept at the
// next start.
//
// The jail's masks are kept over the names they cover while it runs
// (jail.MaskGuard): a masked path the host replaces (a rename over it, a
// delete) loses its mount in the jail, and is mounted again from the host
// side. Go cannot join a mount namespace, so nsenter(1) joins the user
// namespace that owns the jail's mount namespace (the host user that ran
// bubblewrap is root there), the mount namespace and the jail's root, and
// runs the jail's copy of the warden binary (jail.JailExe, the host's,
// read-only) as the mask helper, started with the jail and ended with it:
// it builds each mask detached and read-only (open_tree or fsmount,
// mount_setattr) and moves it over the path (move_mount, which follows no
// symbolic link there), a fraction of a millisecond. Where the helper
// cannot start or dies, mount(8) from the jail's /usr (the host's,
// read-only; nothing of the jail can replace it or preload into it: its
// root and /etc are read-only) is run through a new nsenter each time
// (about 3 ms). Those processes are in none of the jail's pid namespaces
// and under none of its seccomp or Landlock rules: no jailed process can
// see, signal or trace them. File masks are bound from MaskSource, an empty
// file bubblewrap writes into the jail's read-only root (--file). Without
// nsenter, a replaced mask kills the jail instead.
//
// # Non-goals and known limits
//
//   - The jail's first process (bubblewrap's init) holds the worker's
//     protocol pipes as its stdin and stdout. Where Landlock is enforced, a
//     command cannot open /proc/1/fd/0 or /proc/1/fd/1; on a kernel without
//     Landlock it can, and could then forge answers to the host or read its
//     requests (the worker itself is not dumpable, so its own /proc/self/fd
//     are out of reach). `warden doctor` lists a missing Landlock as
//     degraded; landlock = "on" refuses to start without it.
//   - The host's /usr is the jail's: a vulnerable setuid program there is
//     harmless (no_new_privs, no capabilities) but a vulnerable library is
//     the jail's too.
package bwrap
