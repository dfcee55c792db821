package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Attributor names the command behind a relayed connection from /proc:
// among the processes pids returns (the jail's: its pids cgroup's
// cgroup.procs is one read; Descendants walks a process tree), the one
// holding the client's end of the connection. The client's socket is found
// by its exact addresses with sock_diag in the jail's network namespace
// (sockdiag_linux.go), or, where that cannot be opened (no right to enter
// the namespace), in the namespace's /proc/PID/net/tcp. Lookup returns ""
// when it cannot tell (the process is gone, /proc is not readable, the
// jail's processes are not visible here, as in a container).
//
// The jail chose the socket it handed over, so the answer is a hint: a
// jailed program could hand over another process's socket, and have its
// connection attributed to that process of the same jail, never to
// anything outside it.
type Attributor struct {
	pids func() []int

	mu    sync.Mutex
	diags map[string]*sockDiag // by network namespace; nil: cannot be opened there
}

// maxDiags bounds the namespaces whose sock_diag sockets are kept open
// (a jail has one, or a few where its programs make their own).
const maxDiags = 8

// NewAttributor returns an attributor over the processes pids lists.
func NewAttributor(pids func() []int) *Attributor { return &Attributor{pids: pids} }

// Close releases the sock_diag sockets.
func (a *Attributor) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closeDiags()
}

func (a *Attributor) closeDiags() {
	for _, d := range a.diags {
		if d != nil {
			d.Close()
		}
	}
	a.diags = nil
}

// Lookup names the command behind ci, or "".
func (a *Attributor) Lookup(ci ConnInfo) string {
	if !ci.Relayed {
		return ""
	}
	procs := a.pids()
	inode := a.inode(procs, ci)
	if inode == "" {
		return ""
	}
	target := "socket:[" + inode + "]"
	for _, pid := range slices.Backward(procs) { // the client is likelier among the newest
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + fd.Name()); err == nil && l == target {
				return cmdline(pid)
			}
		}
	}
	return ""
}

// inode finds the client's socket in the network namespaces of the
// processes (the jail's before this process's own): with sock_diag where
// it can be opened, else in the namespace's net/tcp. Where sock_diag
// answered that no such socket is there (the connection has ended: a
// TIME_WAIT socket has no inode), net/tcp is not read, as it would say the
// same after the kernel printed every socket of the namespace — thousands,
// in the host's, once a busy jail's closed connections pile up.
func (a *Attributor) inode(procs []int, ci ConnInfo) string {
	own, _ := os.Readlink("/proc/self/ns/net")
	var unsearched []int // a process in each namespace sock_diag could not search
	seen := map[string]bool{}
	ownPID := 0
	for _, pid := range procs {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		if ns == own {
			ownPID = pid
			continue
		}
		inode, searched := a.diagInode(ns, pid, ci)
		if inode != "" {
			return inode
		}
		if !searched {
			unsearched = append(unsearched, pid)
		}
	}
	if ownPID != 0 {
		inode, searched := a.diagInode(own, ownPID, ci)
		if inode != "" {
			return inode
		}
		if !searched {
			unsearched = append(unsearched, ownPID)
		}
	}
	for _, pid := range unsearched {
		if inode := socketInode(pid, ci.ClientPort, ci.ListenerPort); inode != "" {
			return inode
		}
	}
	return ""
}

// diagInode looks the client's socket up with sock_diag in the namespace
// ns (entered through pid); searched is false when it could not.
func (a *Attributor) diagInode(ns string, pid int, ci ConnInfo) (inode string, searched bool) {
	if !ci.Client.IsValid() || !ci.Listener.IsValid() {
		return "", false
	}
	d := a.diagFor(ns, pid)
	if d == nil {
		return "", false
	}
	n, err := d.inode(ci.Client, ci.Listener)
	if err != nil {
		return "", false
	}
	if n == 0 {
		return "", true
	}
	return strconv.FormatUint(uint64(n), 10), true
}

// diagFor is the sock_diag socket of the namespace ns (entered through
// pid), opened on first use; nil when it cannot be.
func (a *Attributor) diagFor(ns string, pid int) *sockDiag {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d, ok := a.diags[ns]; ok {
		return d
	}
	if len(a.diags) >= maxDiags {
		return nil // net/tcp, then: one in use must not be closed under its user
	}
	if a.diags == nil {
		a.diags = map[string]*sockDiag{}
	}
	d, err := openSockDiag(pid)
	if err != nil {
		d = nil
	}
	a.diags[ns] = d
	return d
}

// CgroupPIDs lists the processes of a cgroup (its cgroup.procs file).
func CgroupPIDs(dir string) []int {
	b, err := os.ReadFile(dir + "/cgroup.procs")
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

// socketInode finds, in /proc/PID/net/tcp{,6}, the socket whose local
// port is local and remote port remote: the client's end.
func socketInode(pid int, local, remote uint16) string {
	want := fmt.Sprintf(":%04X", local)
	wantRemote := fmt.Sprintf(":%04X", remote)
	for _, f := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			if strings.HasSuffix(fields[1], want) && strings.HasSuffix(fields[2], wantRemote) {
				return fields[9]
			}
		}
	}
	return ""
}

// Descendants lists root and its descendants, following
// /proc/PID/task/TID/children: a walk over the jail's few processes, not
// the host's many.
func Descendants(root int) []int {
	var out []int
	queue, seen := []int{root}, map[int]bool{}
	for len(queue) > 0 && len(seen) < 4096 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		tasks, _ := os.ReadDir(dir)
		for _, task := range tasks {
			b, _ := os.ReadFile(dir + task.Name() + "/children")
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return out
}

// cmdline is a process's command line, arguments joined by spaces and cut
// to 200 bytes (arguments may carry what the audit log should not keep
// whole).
func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return ""
	}
	s := strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
