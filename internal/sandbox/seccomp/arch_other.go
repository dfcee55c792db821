//go:build !linux || !(amd64 || arm64)

package seccomp

import (
	"fmt"
	"runtime"
)

func nativeArch() (*arch, error) {
	return nil, fmt.Errorf("%w: %s/%s", ErrUnsupportedArch, runtime.GOOS, runtime.GOARCH)
}

func commonRules(*Options) []Rule { return nil }
