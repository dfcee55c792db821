package seccomp

import "golang.org/x/sys/unix"

// nativeArch is AArch64. A 32-bit ARM process (compat mode) reaches the
// kernel under AUDIT_ARCH_ARM with other numbers and is killed by the
// architecture check. arm64 has no ioperm, iopl, modify_ldt or uselib.
func nativeArch() (*arch, error) {
	return &arch{
		name:      "arm64",
		auditArch: unix.AUDIT_ARCH_AARCH64,
	}, nil
}
