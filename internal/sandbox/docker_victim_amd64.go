package sandbox

// dockerI386Getpid makes getpid through the i386 entry point (int 0x80).
// It exists so the docker backend's tests can prove, on a real kernel, that
// the container's seccomp profile kills system calls of a foreign
// architecture; warden never calls it otherwise.
func dockerI386Getpid() uintptr
