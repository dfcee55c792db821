// Package landlock is the second filesystem wall of warden's jail: the
// worker, already inside bubblewrap and its seccomp filter, calls [Restrict]
// before serving its first request, and from then on it and every command it
// starts can touch only the paths it was given.
//
// [Restrict] grants read-write access to the workspace (and the rw_paths),
// read and execute access to the ro_paths and to [SystemReadOnly] (program
// and library directories, a short list of /etc files, /proc), and write
// access to /dev/null and its kin. The mode follows the [sandbox] landlock
// key: "auto" uses Landlock when the kernel has it, "on" fails closed with an
// error wrapping [ErrUnavailable] when it does not, "off" does nothing.
// [ABI] reports the kernel's Landlock ABI for warden doctor; [Status] says
// what was applied, in the form warden status prints.
//
// # Threat model
//
// The restricted process is hostile. bubblewrap already decides what exists
// in its mount namespace; Landlock makes the same decision a second time
// from inside, in a way the process cannot undo, so that a mistake in the
// mount layout (a bind too wide, a path a mask missed, a file reached
// through /proc/self/root or a symbolic link) does not open the host. The
// ruleset is applied to every thread of the process, is inherited across
// fork and exec, and holds even for root: Landlock does not care about
// capabilities. Links and renames that would move a file across the
// boundary fail (EXDEV or EACCES). From ABI 6 on, abstract UNIX sockets
// are scoped to the confined processes, closing the classic escape through
// a host daemon's abstract socket when the network namespace is shared.
// Signals are not scoped: each thread of a Go process gets its own domain,
// so the scope would stop the worker from killing its own timed-out
// commands; the jail's pid namespace keeps signals inside the jail.
//
// The ruleset is built at the kernel's own ABI level, not in best-effort
// mode: it is applied whole or [Restrict] fails. In particular the "refer"
// right (ABI 2) is only requested where the kernel knows it, because asking
// for it on ABI 1 would make go-landlock's best-effort mode silently apply
// nothing.
//
// # Non-goals
//
// Landlock here confines the filesystem only. It does not restrict the
// network (the network namespace and, under lockdown, the seccomp filter
// do), system calls (seccomp does), or resources (rlimits do). It cannot
// hide what it allows: files under an rw or ro path are reachable whole, so
// masks must be applied by the mount layout before it. Paths are resolved
// when [Restrict] runs: a directory created later under an allowed path is
// allowed, one created elsewhere is not. Access through file descriptors
// opened before [Restrict] (stdin, stdout, the protocol pipe) is not
// affected. On a kernel without Landlock, mode "auto" leaves the other
// layers alone to hold the line, and says so in its [Status].
package landlock
