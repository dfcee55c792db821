//go:build linux

package landlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// victimEnv carries a victimPlan to the test binary re-executed as a
// subprocess: Restrict confines the whole process for good, so it never
// runs in the test process itself.
const victimEnv = "WARDEN_LANDLOCK_VICTIM"

// fakeABIEnv makes TestMain pretend the kernel has that Landlock ABI.
const fakeABIEnv = "WARDEN_LANDLOCK_FAKE_ABI"

func TestMain(m *testing.M) {
	if v := os.Getenv(fakeABIEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			panic(err)
		}
		testOnlyABI = func() int { return n }
	}
	if plan := os.Getenv(victimEnv); plan != "" {
		os.Exit(victimMain(plan))
	}
	os.Exit(m.Run())
}

type probe struct {
	Op   string // read, write, readdir, rename, link, exec
	Path string
	To   string   // rename and link target
	Args []string // exec arguments
}

type victimPlan struct {
	Mode   string
	RW, RO []string
	Probes []probe
}

type victimReport struct {
	Status      string
	Err         string
	Unavailable bool // errors.Is(err, ErrUnavailable)
	Results     []string
}

func victimMain(planJSON string) int {
	var plan victimPlan
	if err := json.Unmarshal([]byte(planJSON), &plan); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	st, err := Restrict(plan.Mode, plan.RW, plan.RO)
	rep := victimReport{Status: st.String()}
	if err != nil {
		rep.Err = err.Error()
		rep.Unavailable = errors.Is(err, ErrUnavailable)
	}
	for _, p := range plan.Probes {
		rep.Results = append(rep.Results, runProbe(p))
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 3
	}
	return 0
}

func runProbe(p probe) string {
	var err error
	switch p.Op {
	case "read":
		_, err = os.ReadFile(p.Path)
	case "write":
		err = os.WriteFile(p.Path, []byte("x"), 0o600)
	case "readdir":
		_, err = os.ReadDir(p.Path)
	case "rename":
		err = os.Rename(p.Path, p.To)
	case "link":
		err = os.Link(p.Path, p.To)
	case "dial-abstract":
		var c net.Conn
		c, err = net.Dial("unix", p.Path)
		if err == nil {
			c.Close()
		}
	case "mkdir":
		err = os.Mkdir(p.Path, 0o700)
	case "exec":
		err = exec.Command(p.Path, p.Args...).Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Sprintf("exit %d", exit.ExitCode())
		}
	default:
		return "unknown op " + p.Op
	}
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return "error: " + err.Error()
}

func runVictim(t *testing.T, plan victimPlan, env ...string) victimReport {
	t.Helper()
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append(env, victimEnv+"="+string(b))...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			stderr = exit.Stderr
		}
		t.Fatalf("victim: %v\n%s", err, stderr)
	}
	var rep victimReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("victim output %q: %v", out, err)
	}
	return rep
}

func requireLandlock(t *testing.T) int {
	t.Helper()
	abi := ABI()
	if abi < 1 {
		t.Skip("skipping: this kernel has no Landlock (ABI 0)")
	}
	return abi
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestrictConfines restricts a subprocess to one writable directory and
// one read-only directory, then tries to get past that.
func TestRestrictConfines(t *testing.T) {
	abi := requireLandlock(t)
	t.Parallel()
	rw, ro, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ro, "f"), "read-only")
	writeFile(t, filepath.Join(outside, "secret"), "secret")
	writeFile(t, filepath.Join(rw, "sub1", "a"), "a")
	if err := os.Mkdir(filepath.Join(rw, "sub2"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"to-hostname": "/etc/hostname",
		"to-secret":   filepath.Join(outside, "secret"),
		"to-outside":  outside,
	} {
		if err := os.Symlink(target, filepath.Join(rw, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat("/etc/hostname"); err != nil {
		t.Skipf("no /etc/hostname to try to read: %v", err)
	}
	// A host daemon's abstract socket, reachable through a shared network
	// namespace: scoped away from ABI 6 on.
	abstract := fmt.Sprintf("@warden-landlock-test-%d", os.Getpid())
	ln, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	wantAbstract := "ok"
	if abi >= 6 {
		wantAbstract = "EPERM"
	}

	cases := []struct {
		why  string
		p    probe
		want string
	}{
		{"the workspace is writable", probe{Op: "write", Path: filepath.Join(rw, "new")}, "ok"},
		{"and readable", probe{Op: "read", Path: filepath.Join(rw, "new")}, "ok"},
		{"and listable", probe{Op: "readdir", Path: rw}, "ok"},
		{"mkdir inside", probe{Op: "mkdir", Path: filepath.Join(rw, "d")}, "ok"},
		{"rename across directories inside", probe{Op: "rename", Path: filepath.Join(rw, "sub1", "a"), To: filepath.Join(rw, "sub2", "a")}, "ok"},
		{"host file outside every rule", probe{Op: "read", Path: "/etc/hostname"}, "EACCES"},
		{"shadow", probe{Op: "read", Path: "/etc/shadow"}, "EACCES"},
		{"listing /", probe{Op: "readdir", Path: "/"}, "EACCES"},
		{"listing /etc", probe{Op: "readdir", Path: "/etc"}, "EACCES"},
		{"read outside", probe{Op: "read", Path: filepath.Join(outside, "secret")}, "EACCES"},
		{"write outside", probe{Op: "write", Path: filepath.Join(outside, "new")}, "EACCES"},
		{"write into /usr", probe{Op: "write", Path: "/usr/warden-landlock-probe"}, "EACCES"},
		{"symlink inside to a host file", probe{Op: "read", Path: filepath.Join(rw, "to-hostname")}, "EACCES"},
		{"symlink inside to a file outside", probe{Op: "read", Path: filepath.Join(rw, "to-secret")}, "EACCES"},
		{"write through a symlinked directory", probe{Op: "write", Path: filepath.Join(rw, "to-outside", "new")}, "EACCES"},
		{"hard link an outside file in", probe{Op: "link", Path: filepath.Join(outside, "secret"), To: filepath.Join(rw, "hard")}, "EXDEV"},
		{"move a workspace file out", probe{Op: "rename", Path: filepath.Join(rw, "new"), To: filepath.Join(outside, "moved")}, "EACCES"},
		{"read-only path is readable", probe{Op: "read", Path: filepath.Join(ro, "f")}, "ok"},
		{"read-only file is not writable", probe{Op: "write", Path: filepath.Join(ro, "f")}, "EACCES"},
		{"read-only directory takes no new file", probe{Op: "write", Path: filepath.Join(ro, "g")}, "EACCES"},
		{"system binaries run", probe{Op: "exec", Path: "/bin/true"}, "ok"},
		{"children inherit the restriction", probe{Op: "exec", Path: "/bin/sh", Args: []string{"-c", "cat /etc/hostname"}}, "exit 1"},
		{"children can write the workspace", probe{Op: "exec", Path: "/bin/sh", Args: []string{"-c", "echo hi > " + filepath.Join(rw, "from-child")}}, "ok"},
		{"/dev/null is writable", probe{Op: "write", Path: "/dev/null"}, "ok"},
		{"/proc is readable", probe{Op: "read", Path: "/proc/self/status"}, "ok"},
		{"abstract socket of a process outside", probe{Op: "dial-abstract", Path: abstract}, wantAbstract},
	}
	plan := victimPlan{Mode: ModeOn, RW: []string{rw}, RO: []string{ro}}
	for _, c := range cases {
		plan.Probes = append(plan.Probes, c.p)
	}
	rep := runVictim(t, plan)
	if rep.Err != "" {
		t.Fatalf("Restrict: %s", rep.Err)
	}
	if ws := fmt.Sprintf("enforced (ABI %d)", min(abi, len(configs)-1)); rep.Status != ws {
		t.Errorf("status %q, want %q", rep.Status, ws)
	}
	if len(rep.Results) != len(cases) {
		t.Fatalf("victim ran %d probes, want %d", len(rep.Results), len(cases))
	}
	for i, c := range cases {
		if got := rep.Results[i]; got != c.want {
			t.Errorf("%s: %s %s: got %s, want %s", c.why, c.p.Op, c.p.Path, got, c.want)
		}
	}
	// Nothing leaked out of the workspace on the host side either.
	for _, p := range []string{filepath.Join(outside, "new"), filepath.Join(outside, "moved"), filepath.Join(ro, "g")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists after the restricted run", p)
		}
	}
}

// TestRestrictUnavailable pretends the kernel has no Landlock.
func TestRestrictUnavailable(t *testing.T) {
	t.Parallel()
	rw := t.TempDir()
	read := []probe{{Op: "read", Path: "/proc/self/status"}, {Op: "readdir", Path: "/"}}

	on := runVictim(t, victimPlan{Mode: ModeOn, RW: []string{rw}, Probes: read}, fakeABIEnv+"=0")
	if !on.Unavailable || !strings.Contains(on.Err, "landlock = on: landlock is not available") {
		t.Errorf("mode on without Landlock: err %q (ErrUnavailable %v), want ErrUnavailable", on.Err, on.Unavailable)
	}
	if !strings.HasPrefix(on.Status, "unavailable: ") {
		t.Errorf("mode on without Landlock: status %q", on.Status)
	}

	auto := runVictim(t, victimPlan{Mode: ModeAuto, RW: []string{rw}, Probes: read}, fakeABIEnv+"=0")
	if auto.Err != "" || !strings.HasPrefix(auto.Status, "unavailable: the kernel has no Landlock") {
		t.Errorf("mode auto without Landlock: err %q status %q, want no error and unavailable", auto.Err, auto.Status)
	}
	// Nothing was applied in either case.
	for _, rep := range []victimReport{on, auto} {
		if diff := cmp.Diff([]string{"ok", "ok"}, rep.Results); diff != "" {
			t.Errorf("probes after a refused Restrict (-want +got):\n%s", diff)
		}
	}
}

// TestRestrictOff applies nothing, even with Landlock present.
func TestRestrictOff(t *testing.T) {
	t.Parallel()
	rep := runVictim(t, victimPlan{Mode: ModeOff, RW: []string{t.TempDir()}, Probes: []probe{{Op: "readdir", Path: "/"}}})
	if rep.Err != "" || rep.Status != "off" || rep.Results[0] != "ok" {
		t.Errorf("mode off: %+v", rep)
	}
}

// TestRestrictRejects covers the errors returned before anything is
// applied, so they are safe to run in the test process itself.
func TestRestrictRejects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		mode   string
		rw, ro []string
		want   string
	}{
		{"bogus", []string{dir}, nil, `unknown mode "bogus"`},
		{"ON", []string{dir}, nil, `unknown mode "ON"`},
		{ModeOn, []string{"relative/dir"}, nil, `read-write path: "relative/dir" is not absolute`},
		{ModeOn, []string{dir}, []string{"."}, `read-only path: "." is not absolute`},
		{ModeOn, []string{filepath.Join(dir, "missing")}, nil, "no such file or directory"},
		{ModeAuto, nil, []string{filepath.Join(dir, "missing")}, "no such file or directory"},
	}
	for _, c := range cases {
		st, err := Restrict(c.mode, c.rw, c.ro)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Restrict(%q, %q, %q) = %v, want error containing %q", c.mode, c.rw, c.ro, err, c.want)
		}
		if st.Enforced {
			t.Errorf("Restrict(%q, %q, %q) reports enforced after an error", c.mode, c.rw, c.ro)
		}
	}
	st, err := Restrict(ModeOff, []string{"relative"}, nil)
	if err != nil || st.String() != "off" {
		t.Errorf("Restrict(off) = %v, %v; want off, nil", st, err)
	}
}

func TestABIMatchesLSMList(t *testing.T) {
	t.Parallel()
	lsm, err := os.ReadFile("/sys/kernel/security/lsm")
	if err != nil {
		t.Skipf("cannot read the LSM list: %v", err)
	}
	listed := strings.Contains(","+strings.TrimSpace(string(lsm))+",", ",landlock,")
	if got := ABI(); listed != (got > 0) {
		t.Errorf("ABI() = %d, but landlock in %q is %v", got, lsm, listed)
	}
}

func TestStatusString(t *testing.T) {
	t.Parallel()
	cases := []struct {
		st   Status
		want string
	}{
		{Status{Mode: ModeOn, ABI: 7, Used: 7, Enforced: true}, "enforced (ABI 7)"},
		{Status{Mode: ModeAuto, ABI: 14, Used: 11, Enforced: true}, "enforced (ABI 11)"},
		{Status{Mode: ModeOff, Reason: "landlock = off"}, "off"},
		{Status{Mode: ModeAuto, Reason: "no kernel support"}, "unavailable: no kernel support"},
	}
	for _, c := range cases {
		if got := c.st.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.st, got, c.want)
		}
	}
}
