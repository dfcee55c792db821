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
// /proc: the TCP socket whose ports are those of the socket the relay
// handed over, in the network
// namespace of the process rootPID returns (the jail's init, or the
// worker), and the process among it and its descendants holding it. It
// returns "" when it cannot tell (the process is gone, /proc is not
// readable). The lookup runs while the connection
// proceeds; a connection that ends within a millisecond or two may not be
// attributed.
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
		pid := rootPID()
		if pid <= 0 {
			return ""
		}
		inode := socketInode(pid, ci.ClientPort, ci.ListenerPort)
		if inode == "" {
			return ""
		}
		owner := socketOwner(pid, inode)
		if owner <= 0 {
			return ""
		}
		return cmdline(owner)
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

// socketOwner finds the process holding the socket inode among root and
// its descendants (a jail's processes are its init's), following
// /proc/PID/task/TID/children: a walk over the jail's few processes, not
// the host's many.
func socketOwner(root int, inode string) int {
	target := "socket:[" + inode + "]"
	queue, seen := []int{root}, map[int]bool{}
	for len(queue) > 0 && len(seen) < 4096 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		dir := "/proc/" + strconv.Itoa(pid)
		if fds, err := os.ReadDir(dir + "/fd"); err == nil {
			for _, fd := range fds {
				if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && l == target {
					return pid
				}
			}
		}
		tasks, _ := os.ReadDir(dir + "/task")
		for _, task := range tasks {
			b, _ := os.ReadFile(dir + "/task/" + task.Name() + "/children")
			for _, c := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(c); err == nil {
					queue = append(queue, n)
				}
			}
		}
	}
	return 0
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
