package seccomp

import "golang.org/x/sys/unix"

// archCases are the AArch64 rows: a 32-bit ARM (compat) call is killed.
func archCases(a *arch) []vmCase {
	return []vmCase{
		{"arm compat getpid", sdata{nr: 20, arch: unix.AUDIT_ARCH_ARM}, KillProcess},
		{"x86_64 arch on arm64", sdata{nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_X86_64}, KillProcess},
		{"nr above the table", call(a, 1000), Allow},
	}
}
