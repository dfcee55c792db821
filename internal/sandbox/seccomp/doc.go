// Package seccomp builds the seccomp-BPF filter warden's jail runs under.
//
// The filter is generated in pure Go from a rule table (policy as data): each
// [Rule] names a system call, optional conditions on its arguments and the
// action taken when it matches. [Program] compiles the table with
// golang.org/x/net/bpf, [Assemble] encodes it as the struct sock_filter array
// bwrap reads from --seccomp FD, and [MemFile] wraps those bytes in a sealed
// memfd to pass as that descriptor. [Rules] exposes the table read-only.
//
// # Threat model
//
// The jailed process is hostile: it runs whatever an LLM agent asked for, and
// may run code crafted to break out. It is already confined by bubblewrap
// (namespaces, --cap-drop ALL, --disable-userns, no_new_privs) and, inside
// the worker, by Landlock. The filter removes the kernel interfaces those
// layers do not: the ones that inspect or steer other processes (ptrace,
// process_vm_*, pidfd_getfd, kcmp), change the filesystem view (the mount
// family, old and new API, chroot, open_by_handle_at), create or join
// namespaces (unshare, setns, clone with a CLONE_NEW* flag), or offer large
// kernel attack surface for no use a tool has (bpf, perf_event_open,
// userfaultfd, io_uring, module loading, kexec, keyrings, personality
// changes, raw and packet sockets, the TIOCSTI and TIOCLINUX ioctls, the
// host clock, swap, reboot, quotas, the kernel log). Denied calls fail with
// EPERM, so programs that probe for a feature degrade instead of dying.
//
// clone3 fails with ENOSYS: its flags sit in memory a filter cannot read, and
// ENOSYS makes glibc fall back to clone(2), whose flags are checked. io_uring
// is refused outright because its operations run without passing through the
// filter.
//
// A system call made under a foreign architecture is killed, process and
// all (SECCOMP_RET_KILL_PROCESS): on x86_64 that is the i386 ABI (int 0x80,
// seccomp_data.arch == AUDIT_ARCH_I386) and any number carrying the x32 bit
// (0x40000000). Those ABIs number system calls differently, so a table
// written for one architecture means nothing for another; the check runs
// before any rule.
//
// # Why a denylist
//
// Everything the table does not name is allowed. The jail runs arbitrary
// toolchains (compilers, interpreters, package managers, test suites) whose
// system call sets cannot be listed ahead of time; an allowlist would break
// them in ways that look like random failures and push users to turn the
// sandbox off. The denylist removes what is dangerous and useless to tools;
// namespaces, dropped capabilities and Landlock carry the rest. A call added
// to the kernel after this table was written is allowed until the table
// names it.
//
// # Non-goals
//
// The filter does not confine file access (namespaces and Landlock do), does
// not limit resources (rlimits do), and does not isolate the network: the
// network namespace does, and [Options.DenyNetwork] only adds a second wall
// for lockdown. Argument conditions compare the low 32 bits of arguments the
// kernel itself reads as 32-bit values; the filter never reads user memory,
// so it cannot inspect paths or structures (hence clone3's ENOSYS). Only
// linux/amd64 and linux/arm64 have tables; elsewhere [Program] fails with
// [ErrUnsupportedArch] and a jail must not start.
package seccomp
