package seccomp

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// MemFile returns a sealed anonymous in-memory file holding raw (the output
// of [Assemble]), positioned at its start, to hand to bwrap as --seccomp FD
// through exec.Cmd.ExtraFiles. bwrap reads the file from its current offset
// to the end, so a MemFile serves one bwrap start: make a new one (or Seek
// back to 0) for the next. The seals forbid any later change to the program.
func MemFile(raw []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("warden-seccomp", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("seccomp: failed to create memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "warden-seccomp")
	if err := fillSealed(f, raw); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func fillSealed(f *os.File, raw []byte) error {
	if _, err := f.Write(raw); err != nil {
		return fmt.Errorf("seccomp: failed to write memfd: %w", err)
	}
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seccomp: failed to seal memfd: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("seccomp: failed to rewind memfd: %w", err)
	}
	return nil
}
