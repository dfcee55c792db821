package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcAttributor names the command behind a relayed connection from
// /proc: among the process rootPID returns (bubblewrap, the jail's init or
// the worker) and its descendants, the one holding the client's end of the
// TCP connection whose ports are those of the socket the relay handed
// over (found in the net/tcp of the descendants' network namespaces). It
// returns "" when it cannot tell (the process is gone, /proc is not
// readable, the jail's processes are not this host's children, as in a
// container). The lookup runs while the connection proceeds; a connection
// that ends within a millisecond or two may not be attributed.
//
// The jail chose the socket it handed over, so the answer is a hint: a
// jailed program could hand over another process's socket, and have its
// connection attributed to that process of the same jail, never to
// anything outside it.
func ProcAttributor(rootPID func() int) func(ConnInfo) string {
	return func(ci ConnInfo) string {
		if !ci.Relayed {
			return ""
		}
		root := rootPID()
		if root <= 0 {
			return ""
		}
		procs := descendants(root)
		seen := map[string]bool{}
		inode := ""
		for _, pid := range procs {
			ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil || seen[ns] {
				continue
			}
			seen[ns] = true
			if inode = socketInode(pid, ci.ClientPort, ci.ListenerPort); inode != "" {
				break
			}
		}
		if inode == "" {
			return ""
		}
		target := "socket:[" + inode + "]"
		for _, pid := range procs {
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

// descendants lists root and its descendants, following
// /proc/PID/task/TID/children: a walk over the jail's few processes, not
// the host's many.
func descendants(root int) []int {
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
