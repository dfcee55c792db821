package seccomp

// killCases is empty on arm64: a 64-bit process cannot enter the 32-bit
// compat ABI, so the architecture guard is covered by the VM tests only.
func killCases() []realCase { return nil }
