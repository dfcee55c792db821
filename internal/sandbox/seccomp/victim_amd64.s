#include "textflag.h"

// func i386Syscall0(nr uintptr) uintptr
TEXT ·i386Syscall0(SB), NOSPLIT, $0-16
	MOVQ nr+0(FP), AX
	INT  $0x80
	MOVQ AX, ret+8(FP)
	RET
