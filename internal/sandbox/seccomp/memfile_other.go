//go:build !linux

package seccomp

import (
	"fmt"
	"os"
	"runtime"
)

// MemFile is only available on Linux, the only system with seccomp.
func MemFile(raw []byte) (*os.File, error) {
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedArch, runtime.GOOS)
}
