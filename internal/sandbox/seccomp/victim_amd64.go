package seccomp

// i386Syscall0 makes the argument-less system call nr through the i386
// entry point (int 0x80) and returns the raw result. It exists so the tests
// can prove, on a real kernel, that the architecture guard kills such calls;
// warden never calls it otherwise.
func i386Syscall0(nr uintptr) uintptr
