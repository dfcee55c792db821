package seccomp

import "golang.org/x/sys/unix"

// archCases are the x86_64 rows: the foreign ABIs that reach an x86_64
// kernel and the rows only this architecture has.
func archCases(a *arch) []vmCase {
	const i386Getpid, i386Ptrace = 20, 26
	return []vmCase{
		{"i386 getpid (int 0x80)", sdata{nr: i386Getpid, arch: unix.AUDIT_ARCH_I386}, KillProcess},
		{"i386 read, a number x86_64 allows", sdata{nr: 3, arch: unix.AUDIT_ARCH_I386}, KillProcess},
		{"i386 nr 101 (ptrace on x86_64)", sdata{nr: unix.SYS_PTRACE, arch: unix.AUDIT_ARCH_I386}, KillProcess},
		{"i386 ptrace", sdata{nr: i386Ptrace, arch: unix.AUDIT_ARCH_I386}, KillProcess},
		{"aarch64 arch on x86_64", sdata{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_AARCH64}, KillProcess},
		{"x32 getpid", call(a, x32SyscallBit|unix.SYS_GETPID), KillProcess},
		{"x32 read", call(a, x32SyscallBit|unix.SYS_READ), KillProcess},
		{"x32 ptrace", call(a, x32SyscallBit|unix.SYS_PTRACE), KillProcess},
		{"nr -1", call(a, 0xffffffff), KillProcess},
		{"nr above the table", call(a, 1000), Allow},
		{"ioperm", call(a, unix.SYS_IOPERM, 0x3f8, 8, 1), wantEPERM},
		{"iopl", call(a, unix.SYS_IOPL, 3), wantEPERM},
		{"modify_ldt", call(a, unix.SYS_MODIFY_LDT, 1), wantEPERM},
		{"uselib", call(a, unix.SYS_USELIB), wantEPERM},
		{"_sysctl", call(a, unix.SYS__SYSCTL), wantEPERM},
		{"arch_prctl", call(a, unix.SYS_ARCH_PRCTL, 0x1002), Allow},
	}
}
