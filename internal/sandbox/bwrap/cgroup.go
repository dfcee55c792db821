package bwrap

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// pidsCgroup is a pids cgroup holding one jail. RLIMIT_NPROC does not bind a
// process whose user is root on the host (the kernel exempts it), and a jail
// started by root runs as root, so the pids controller is what contains a
// fork bomb. Its directory lives where warden can create it: cgroup v1's
// pids hierarchy, or warden's own cgroup v2 when pids is delegated there.
type pidsCgroup struct{ dir string }

var cgroupSeq atomic.Int64

// PidsRoot finds a directory under which warden may create a pids cgroup.
func PidsRoot() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var v1, v2 string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 >= len(fields) {
			continue
		}
		fstype, opts, mnt := fields[sep+1], fields[sep+3], fields[4]
		switch {
		case fstype == "cgroup" && containsOpt(opts, "pids"):
			v1 = mnt
		case fstype == "cgroup2" && v2 == "":
			v2 = mnt
		}
	}
	if v1 != "" {
		return v1, nil
	}
	if v2 != "" {
		own, err := ownCgroup2()
		if err == nil {
			dir := filepath.Join(v2, own)
			if b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && containsOpt(strings.ReplaceAll(string(b), " ", ","), "pids") {
				return dir, nil
			}
		}
	}
	return "", errors.New("no pids cgroup controller that warden can use")
}

func containsOpt(opts, name string) bool {
	for _, o := range strings.Split(strings.TrimSpace(opts), ",") {
		if o == name {
			return true
		}
	}
	return false
}

func ownCgroup2() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry")
}

// newPidsCgroup creates a pids cgroup allowing max tasks.
func newPidsCgroup(max int) (*pidsCgroup, error) {
	root, err := PidsRoot()
	if err != nil {
		return nil, err
	}
	sweepDeadCgroups(root)
	// The random part keeps a leftover of a dead process whose pid was
	// reused from colliding with this one.
	var rnd [4]byte
	rand.Read(rnd[:])
	dir := filepath.Join(root, fmt.Sprintf("warden-%d-%d-%x", os.Getpid(), cgroupSeq.Add(1), rnd))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("failed to set pids.max: %w", err)
	}
	return &pidsCgroup{dir: dir}, nil
}

// add moves pid (and, from then on, everything it forks) into the cgroup.
func (c *pidsCgroup) add(pid int) error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// pids lists the processes in the cgroup.
func (c *pidsCgroup) pids() []int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// destroy kills whatever is left in the cgroup and removes it.
func (c *pidsCgroup) destroy() error {
	if c == nil {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0) != nil {
			for _, p := range c.pids() {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("failed to remove pids cgroup %s: %w", c.dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sweepDeadCgroups removes the empty pids cgroups that warden processes
// which are gone left behind (killed before their cleanup ran). A cgroup
// that still has processes cannot be removed and stays.
func sweepDeadCgroups(root string) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "warden-")
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // alive
		}
		os.Remove(filepath.Join(root, e.Name()))
	}
}
