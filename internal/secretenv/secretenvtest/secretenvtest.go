// Package secretenvtest is the other process of the secret-hygiene tests:
// it tries every way a process of the same user has to another process's
// environment and memory. Only tests import it.
package secretenvtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Findings is what Probe found, way by way.
type Findings struct {
	Environ, Mem       bool   // the secret was found there
	EnvironErr, MemErr string // or why it could not be read
	PtraceErr          string // "" when PTRACE_SEIZE worked
}

// Probe looks for secret in /proc/PID/environ, in every readable mapping
// of pid through /proc/PID/mem, and tries to attach with ptrace.
func Probe(pid int, secret []byte) Findings {
	var r Findings
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err != nil {
		r.EnvironErr = err.Error()
	} else {
		r.Environ = bytes.Contains(b, secret)
	}
	r.Mem, r.MemErr = scanMem(pid, secret)
	if err := unix.PtraceSeize(pid); err != nil {
		r.PtraceErr = err.Error()
	} else {
		unix.PtraceDetach(pid)
	}
	return r
}

func scanMem(pid int, secret []byte) (bool, string) {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false, err.Error()
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return false, err.Error()
	}
	defer mem.Close()
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1][0] != 'r' {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		if b-a > 1<<30 {
			continue
		}
		buf := make([]byte, b-a)
		n, _ := mem.ReadAt(buf, int64(a))
		if bytes.Contains(buf[:n], secret) {
			return true, ""
		}
	}
	return false, ""
}

// SameUser is the credential a test runs both processes as: an
// unprivileged user when the test runs as root (root reads any process,
// whatever it does), else none (the test's own user).
func SameUser() *syscall.Credential {
	if os.Getuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534}
}
