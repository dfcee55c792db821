package store

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Unowned owns a request that no process waits for: its asker (a hook
// process, an MCP call past its wait) left it for a person to decide while
// it is away, and an identical later call takes the decision up. Such a
// request is never swept as an orphan; it ends when decided or expired.
var Unowned = Owner{Host: "-"}

// CurrentOwner identifies this process.
func CurrentOwner() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start, _, _ := procStat(pid)
	return Owner{Host: host, PID: pid, Start: start}
}

// Alive reports whether the process o still runs. An owner on another host
// cannot be checked from here and counts as alive; so does any doubt other
// than the process being gone, a zombie, or a different process reusing
// the pid.
func Alive(o Owner) bool {
	if host, err := os.Hostname(); err == nil && o.Host != "" && o.Host != host {
		return true
	}
	if o.PID <= 0 {
		return false
	}
	start, state, err := procStat(o.PID)
	if err != nil {
		return !os.IsNotExist(err)
	}
	if state == 'Z' || state == 'X' || state == 'x' {
		return false
	}
	return o.Start == 0 || start == o.Start
}

// procStat reads the start time (field 22) and the state (field 3) of pid
// from /proc/PID/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from its last ')'.
func procStat(pid int) (start int64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseProcStat(string(b))
}

func parseProcStat(s string) (start int64, state byte, err error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("malformed /proc stat line: no ')'")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, fmt.Errorf("malformed /proc stat line: %d fields after the command name", len(f))
	}
	start, err = strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("malformed /proc stat start time %q: %w", f[19], err)
	}
	return start, f[0][0], nil
}
