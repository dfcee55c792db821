package seccomp

import "golang.org/x/sys/unix"

// nativeArch is x86_64. Two other ABIs reach the same kernel from an x86_64
// process and get their own system call numbers: i386 through int 0x80 (the
// filter sees AUDIT_ARCH_I386) and x32 (AUDIT_ARCH_X86_64 with bit 30 set in
// the number). Both are killed: the table below only knows x86_64 numbers.
func nativeArch() (*arch, error) {
	return &arch{
		name:      "amd64",
		auditArch: unix.AUDIT_ARCH_X86_64,
		x32Bit:    true,
		extra: []Rule{
			deny("ioperm", unix.SYS_IOPERM, "direct I/O port access"),
			deny("iopl", unix.SYS_IOPL, "direct I/O port access"),
			deny("modify_ldt", unix.SYS_MODIFY_LDT, "segment descriptors: old exploit surface"),
			deny("uselib", unix.SYS_USELIB, "obsolete a.out loader"),
			deny("_sysctl", unix.SYS__SYSCTL, "removed binary sysctl interface"),
		},
	}, nil
}
