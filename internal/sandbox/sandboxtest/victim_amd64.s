#include "textflag.h"

// func i386Getpid() uintptr
TEXT ·i386Getpid(SB), NOSPLIT, $0-8
	MOVQ $20, AX
	INT  $0x80
	MOVQ AX, ret+0(FP)
	RET
