//go:build linux && (amd64 || arm64)

package seccomp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

var eperm = Errno(syscall.EPERM)

func deny(name string, nr uintptr, why string, args ...ArgMatch) Rule {
	return Rule{Syscall: name, Nr: uint32(nr), Args: args, Action: eperm, Why: why}
}

// cloneNamespaceFlags are the CLONE_NEW* bits clone(2) accepts in its flags.
// CLONE_NEWTIME (0x80) is absent: clone(2) reads that bit as part of the exit
// signal, and only clone3(2) and unshare(2), both refused, accept it.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// sockTypeMask selects the socket type from socket(2)'s type argument, which
// may also carry SOCK_NONBLOCK and SOCK_CLOEXEC (the kernel's SOCK_TYPE_MASK).
const sockTypeMask = 0xf

// commonRules are the rows shared by amd64 and arm64; the numbers come from
// x/sys/unix for the architecture being built.
func commonRules(opts *Options) []Rule {
	rules := []Rule{
		// Looking into or steering other processes.
		deny("ptrace", unix.SYS_PTRACE, "reads and writes other processes' memory and registers"),
		deny("process_vm_readv", unix.SYS_PROCESS_VM_READV, "reads another process's memory"),
		deny("process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, "writes another process's memory"),
		deny("kcmp", unix.SYS_KCMP, "compares kernel objects of other processes (ptrace access)"),
		deny("pidfd_getfd", unix.SYS_PIDFD_GETFD, "steals a file descriptor from another process"),
		deny("process_madvise", unix.SYS_PROCESS_MADVISE, "advises on another process's memory (ptrace access)"),

		// Changing the filesystem view.
		deny("mount", unix.SYS_MOUNT, "would remount or uncover what the jail hides"),
		deny("umount2", unix.SYS_UMOUNT2, "would uncover what a mount in the jail hides"),
		deny("pivot_root", unix.SYS_PIVOT_ROOT, "changes the root filesystem"),
		deny("chroot", unix.SYS_CHROOT, "changes the root directory (classic escape with an open fd)"),
		deny("fsopen", unix.SYS_FSOPEN, "new mount API"),
		deny("fsconfig", unix.SYS_FSCONFIG, "new mount API"),
		deny("fsmount", unix.SYS_FSMOUNT, "new mount API"),
		deny("fspick", unix.SYS_FSPICK, "new mount API"),
		deny("move_mount", unix.SYS_MOVE_MOUNT, "new mount API"),
		deny("open_tree", unix.SYS_OPEN_TREE, "new mount API: clones a mount tree"),
		deny("open_tree_attr", unix.SYS_OPEN_TREE_ATTR, "new mount API: clones a mount tree"),
		deny("mount_setattr", unix.SYS_MOUNT_SETATTR, "new mount API: changes mount flags"),
		deny("open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, "opens any inode of a mounted filesystem by handle (shocker escape)"),
		deny("name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, "produces the handles open_by_handle_at consumes"),

		// New namespaces: the jail is the only namespace set a process gets.
		deny("unshare", unix.SYS_UNSHARE, "creates namespaces (user namespaces bring back capabilities)"),
		deny("setns", unix.SYS_SETNS, "joins another namespace"),
		deny("clone", unix.SYS_CLONE, "clone with a CLONE_NEW* flag creates namespaces; plain fork and threads stay allowed",
			ArgMatch{Index: 0, Op: ArgAnyBit, Mask: cloneNamespaceFlags}),
		{Syscall: "clone3", Nr: unix.SYS_CLONE3, Action: Errno(syscall.ENOSYS),
			Why: "its flags live in memory a filter cannot read; ENOSYS makes libc fall back to clone, whose flags are checked"},

		// Kernel attack surface a tool has no use for.
		deny("bpf", unix.SYS_BPF, "loads programs into the kernel"),
		deny("perf_event_open", unix.SYS_PERF_EVENT_OPEN, "large kernel attack surface, side channels"),
		deny("userfaultfd", unix.SYS_USERFAULTFD, "lets exploits stall the kernel at a chosen page fault"),
		deny("io_uring_setup", unix.SYS_IO_URING_SETUP, "io_uring runs system calls this filter never sees"),
		deny("io_uring_enter", unix.SYS_IO_URING_ENTER, "io_uring runs system calls this filter never sees"),
		deny("io_uring_register", unix.SYS_IO_URING_REGISTER, "io_uring runs system calls this filter never sees"),
		deny("init_module", unix.SYS_INIT_MODULE, "loads a kernel module"),
		deny("finit_module", unix.SYS_FINIT_MODULE, "loads a kernel module"),
		deny("delete_module", unix.SYS_DELETE_MODULE, "unloads a kernel module"),
		deny("kexec_load", unix.SYS_KEXEC_LOAD, "replaces the running kernel"),
		deny("kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, "replaces the running kernel"),
		deny("add_key", unix.SYS_ADD_KEY, "kernel keyrings are not namespaced: host secrets live there"),
		deny("keyctl", unix.SYS_KEYCTL, "kernel keyrings are not namespaced: host secrets live there"),
		deny("request_key", unix.SYS_REQUEST_KEY, "kernel keyrings are not namespaced: host secrets live there"),
		deny("personality", unix.SYS_PERSONALITY, "can turn off ASLR or make data executable; the query 0xffffffff and PER_LINUX stay allowed",
			ArgMatch{Index: 0, Op: ArgNotEqual, Mask: 0xffffffff, Value: 0xffffffff},
			ArgMatch{Index: 0, Op: ArgNotEqual, Mask: 0xffffffff, Value: 0}),
		deny("acct", unix.SYS_ACCT, "host-wide process accounting"),
		deny("swapon", unix.SYS_SWAPON, "host-wide swap"),
		deny("swapoff", unix.SYS_SWAPOFF, "host-wide swap"),
		deny("reboot", unix.SYS_REBOOT, "reboots the host"),
		deny("settimeofday", unix.SYS_SETTIMEOFDAY, "the clock is not namespaced"),
		deny("clock_settime", unix.SYS_CLOCK_SETTIME, "the clock is not namespaced"),
		deny("clock_adjtime", unix.SYS_CLOCK_ADJTIME, "the clock is not namespaced"),
		deny("adjtimex", unix.SYS_ADJTIMEX, "the clock is not namespaced"),
		deny("quotactl", unix.SYS_QUOTACTL, "host-wide disk quotas"),
		deny("quotactl_fd", unix.SYS_QUOTACTL_FD, "host-wide disk quotas"),
		deny("lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE, "profiling interface, leaks kernel paths"),
		deny("syslog", unix.SYS_SYSLOG, "reads the kernel log (addresses, host events)"),
		deny("vhangup", unix.SYS_VHANGUP, "hangs up the controlling terminal"),
		deny("nfsservctl", unix.SYS_NFSSERVCTL, "removed NFS server interface"),
		deny("fanotify_init", unix.SYS_FANOTIFY_INIT, "filesystem-wide event monitoring"),

		// Sockets that reach below the network namespace or craft packets.
		deny("socket", unix.SYS_SOCKET, "AF_PACKET sees and forges link-layer frames",
			ArgMatch{Index: 0, Op: ArgEqual, Mask: 0xffffffff, Value: unix.AF_PACKET}),
		deny("socket", unix.SYS_SOCKET, "AF_KEY manages IPsec keys",
			ArgMatch{Index: 0, Op: ArgEqual, Mask: 0xffffffff, Value: unix.AF_KEY}),
		deny("socket", unix.SYS_SOCKET, "raw sockets forge packets; AF_NETLINK is exempt (its SOCK_RAW is its ordinary datagram type, used by getifaddrs)",
			ArgMatch{Index: 0, Op: ArgNotEqual, Mask: 0xffffffff, Value: unix.AF_NETLINK},
			ArgMatch{Index: 1, Op: ArgEqual, Mask: sockTypeMask, Value: unix.SOCK_RAW}),

		// Terminal injection.
		deny("ioctl", unix.SYS_IOCTL, "TIOCSTI pushes keystrokes into the terminal's input (runs commands outside the jail)",
			ArgMatch{Index: 1, Op: ArgEqual, Mask: 0xffffffff, Value: unix.TIOCSTI}),
		deny("ioctl", unix.SYS_IOCTL, "TIOCLINUX can paste the console selection into its input",
			ArgMatch{Index: 1, Op: ArgEqual, Mask: 0xffffffff, Value: unix.TIOCLINUX}),
	}
	if opts != nil && opts.DenyNetwork {
		rules = append(rules,
			deny("socket", unix.SYS_SOCKET, "DenyNetwork: no IPv4 sockets",
				ArgMatch{Index: 0, Op: ArgEqual, Mask: 0xffffffff, Value: unix.AF_INET}),
			deny("socket", unix.SYS_SOCKET, "DenyNetwork: no IPv6 sockets",
				ArgMatch{Index: 0, Op: ArgEqual, Mask: 0xffffffff, Value: unix.AF_INET6}),
		)
	}
	return rules
}
