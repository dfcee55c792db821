package seccomp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func init() {
	// getpid is 20 on i386. Through int 0x80 it returns the pid (or a
	// negative errno) as a 32-bit value.
	victims["int80-getpid"] = func() string {
		r := int32(i386Syscall0(20))
		if r > 0 {
			return "ok"
		}
		return fmt.Sprintf("ret%d", r)
	}
	victims["x32-getpid"] = func() string { return raw(x32SyscallBit | unix.SYS_GETPID) }
}

// killCases are the foreign-ABI probes; baseline is the result without the
// filter (x32 is not built into most kernels, so its baseline is ENOSYS).
func killCases() []realCase {
	return []realCase{
		{action: "int80-getpid", baseline: "ok"},
		{action: "x32-getpid", baseline: "ENOSYS"},
	}
}
