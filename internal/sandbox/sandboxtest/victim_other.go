//go:build !amd64

package sandboxtest

// hasI386 is false: this architecture has no i386 entry point to try (the
// seccomp package's own tests cover arm64's compat ABI in its BPF
// interpreter).
const hasI386 = false

func i386Getpid() uintptr { panic("no i386 entry point on this architecture") }
