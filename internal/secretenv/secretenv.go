package secretenv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Protect marks the process non-dumpable and empties the initial
// environment block, so that no other process of the user can read the
// environment it was started with (see the package documentation). Call
// it early, in every process that holds a secret; the process's own
// os.Getenv keeps working. A second call does nothing.
func Protect() error {
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d == 0 {
		return nil // done already (or by whoever started us)
	}
	// In this order: once non-dumpable, /proc/self/mem belongs to root and
	// a process without privileges can no longer open it, even its own.
	// Each step is tried even when the other fails.
	var errs []error
	if err := clearEnvironBlock(); err != nil {
		errs = append(errs, fmt.Errorf("failed to clear the environment block /proc/self/environ shows: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		errs = append(errs, fmt.Errorf("failed to mark the process non-dumpable: %w", err))
	}
	return errors.Join(errs...)
}

// clearEnvironBlock overwrites [env_start, env_end) with zero bytes.
func clearEnvironBlock() error {
	start, end, err := environBounds()
	if err != nil {
		return err
	}
	if end <= start {
		return nil
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	_, err = mem.WriteAt(make([]byte, end-start), int64(start))
	return err
}

// environBounds reads env_start and env_end (fields 50 and 51) from
// /proc/self/stat. The second field, the command name, is in parentheses
// and may hold spaces or parentheses itself, so fields are counted from
// the last ')'.
func environBounds() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, errors.New("unexpected /proc/self/stat")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	const envStart, envEnd = 50, 51
	if len(f) < envEnd-2 {
		return 0, 0, errors.New("/proc/self/stat has no env_start/env_end (Linux 3.5 or later needed)")
	}
	if start, err = strconv.ParseUint(f[envStart-3], 10, 64); err != nil {
		return 0, 0, err
	}
	if end, err = strconv.ParseUint(f[envEnd-3], 10, 64); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}
