package sandboxtest

// hasI386 is set where a system call can be made through the i386 entry
// point (int 0x80): the foreign architecture the seccomp filters must kill.
const hasI386 = true

// i386Getpid makes getpid through the i386 entry point (int 0x80). It
// exists so the conformance suite can prove, on a real kernel, that every
// backend kills system calls of a foreign architecture; warden never calls
// it otherwise.
func i386Getpid() uintptr
