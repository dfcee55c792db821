package bwrap

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// HostSystem describes the host's system directories for a Plan.
func HostSystem() []SystemDir {
	var out []SystemDir
	for _, d := range SystemDirs {
		st, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			if t, err := os.Readlink(d); err == nil {
				out = append(out, SystemDir{Path: d, Symlink: t})
			}
			continue
		}
		if st.IsDir() {
			out = append(out, SystemDir{Path: d})
		}
	}
	return out
}

// HostEtc lists the entries of EtcAllowlist present on the host.
func HostEtc() []string {
	var out []string
	for _, e := range EtcAllowlist {
		if _, err := os.Stat(e); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// hostGPU lists GPU device nodes on the host.
func hostGPU() []string {
	var out []string
	if _, err := os.Stat("/dev/dri"); err == nil {
		out = append(out, "/dev/dri")
	}
	nv, _ := filepath.Glob("/dev/nvidia*")
	return append(out, nv...)
}

// Find locates bubblewrap (p, default "bwrap" on PATH) or explains how to
// get it.
func Find(p string) (string, error) {
	if p == "" {
		p = "bwrap"
	}
	path, err := exec.LookPath(p)
	if err != nil {
		return "", &jail.HintError{
			Err:     fmt.Errorf("bubblewrap (%s) is not installed, and warden never runs a sandboxed workspace unsandboxed: %w", p, jail.ErrUnsupportedHost),
			HintMsg: "install it: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora); `warden doctor` checks the host",
		}
	}
	return path, nil
}

// MemFile returns an anonymous in-memory file holding data, positioned at
// its start (for bubblewrap's --seccomp and --ro-bind-data).
func MemFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("failed to create memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
