package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox/bwrap"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// HostReport is what `warden doctor` says about this machine.
type HostReport struct {
	Bwrap          string `json:"bwrap"`           // path, or "" when missing
	BwrapVersion   string `json:"bwrap_version"`   // "bubblewrap 0.8.0"
	UserNamespaces string `json:"user_namespaces"` // "ok" or why not
	Seccomp        string `json:"seccomp"`         // kernel support and whether warden has a filter
	Landlock       string `json:"landlock"`        // "ABI n" or why not
	PidsCgroup     string `json:"pids_cgroup"`
	JailWorks      bool   `json:"jail_works"`
	JailError      string `json:"jail_error,omitempty"`
	// Degraded lists what a sandboxed workspace would run without.
	Degraded []string `json:"degraded,omitempty"`
	// Backends says, for each backend other than local, whether it can
	// start here ("ok: …" or why not).
	Backends map[string]string `json:"backends,omitempty"`
}

// Probe examines the host. It runs bwrap once, with every namespace, to
// prove a jail can be built here.
func Probe(ctx context.Context, bwrapPath string) HostReport {
	var r HostReport
	if p, err := bwrap.Find(bwrapPath); err == nil {
		r.Bwrap = p
		out, _ := exec.CommandContext(ctx, p, "--version").Output()
		r.BwrapVersion = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		r.UserNamespaces = "disabled (user.max_user_namespaces = 0)"
	} else {
		r.UserNamespaces = "available"
	}
	if err := unix.Prctl(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		r.Seccomp = "not supported by the kernel: " + err.Error()
	} else if _, err := seccomp.Program(nil); err != nil {
		r.Seccomp = "filter fails to build: " + err.Error()
	} else {
		r.Seccomp = "kernel supports filters; warden's filter builds"
	}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if errno != 0 {
		r.Landlock = "unavailable: " + errno.Error()
	} else {
		r.Landlock = fmt.Sprintf("ABI %d", abi)
	}
	if root, err := bwrap.PidsRoot(); err == nil {
		r.PidsCgroup = root
	} else {
		r.PidsCgroup = "unavailable: " + err.Error()
	}
	if r.Bwrap != "" {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, r.Bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
			"--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true").CombinedOutput()
		if err != nil {
			r.JailError = strings.TrimSpace(string(out) + " " + err.Error())
		} else {
			r.JailWorks = true
		}
	}
	switch {
	case r.Bwrap == "":
		r.Degraded = append(r.Degraded, "no sandbox at all: bubblewrap is missing (apt-get install bubblewrap); sandboxed workspaces refuse to run")
	case !r.JailWorks:
		r.Degraded = append(r.Degraded, "no sandbox at all: bwrap cannot build a jail here ("+r.JailError+"); sandboxed workspaces refuse to run")
	}
	if !strings.HasPrefix(r.Seccomp, "kernel supports filters; warden's filter builds") {
		r.Degraded = append(r.Degraded, "no seccomp filter: dangerous system calls are stopped only by dropped capabilities and namespaces")
	}
	if !strings.HasPrefix(r.Landlock, "ABI") {
		r.Degraded = append(r.Degraded, `no Landlock layer (landlock = "on" refuses to start)`)
	}
	if strings.HasPrefix(r.PidsCgroup, "unavailable") {
		r.Degraded = append(r.Degraded, "no pids cgroup: a jail run as root has no process limit (lockdown refuses to start)")
	}
	for name, b := range backends {
		if b.Probe == nil {
			continue
		}
		if r.Backends == nil {
			r.Backends = map[string]string{}
		}
		r.Backends[name] = b.Probe(ctx)
	}
	return r
}
