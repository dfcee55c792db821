package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// The test binary doubles as two helpers, picked by its first argument
// before TestMain runs: "docker-probe NAME" (run inside a container: tries
// one system call or connection and prints the outcome) and "hold-docker"
// (a warden that starts a container and is then killed).
func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "docker-probe":
		fmt.Println(dockerProbe(os.Args[2:]))
		os.Exit(0)
	case "hold-docker":
		holdDocker(os.Args[2], os.Args[3], os.Args[4])
	}
}

// testUID owns the test workspaces: the docker backend runs as the owner.
const testUID, testGID = 1000, 1000

func errnoName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if e == 0 {
			return "ok"
		}
		return unix.ErrnoName(e)
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// dockerProbe makes one attempt and reports its errno ("EPERM", "ok"...).
// The probes that must be killed never return.
func dockerProbe(args []string) string {
	if len(args) == 0 {
		return "no probe"
	}
	raw := func(nr uintptr, a ...uintptr) string {
		a = append(a, 0, 0, 0, 0, 0, 0)
		_, _, e := unix.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return errnoName(e)
	}
	switch args[0] {
	case "ptrace":
		return raw(unix.SYS_PTRACE, unix.PTRACE_TRACEME)
	case "io_uring":
		var params [120]byte
		return raw(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)))
	case "bpf":
		return raw(unix.SYS_BPF, 999, 0, 0)
	case "tiocsti":
		// On a pipe the ioctl itself would say ENOTTY; EPERM is the filter.
		c := byte('x')
		return raw(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "personality":
		return raw(unix.SYS_PERSONALITY, 0x0040000) // ADDR_NO_RANDOMIZE
	case "personality-query":
		return raw(unix.SYS_PERSONALITY, 0xffffffff)
	case "personality-linux":
		return raw(unix.SYS_PERSONALITY, 0)
	case "clone3":
		return raw(unix.SYS_CLONE3, 0, 0)
	case "clone-newuser":
		r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if e == 0 && r == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		return errnoName(e)
	case "unshare":
		return raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
	case "open_tree_attr":
		return raw(unix.SYS_OPEN_TREE_ATTR, ^uintptr(0), 0, 0, 0, 0)
	case "ioctl-tiocsti-highbits":
		c := byte('x')
		return raw(unix.SYS_IOCTL, 0, 0xffffffff00000000|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "x32", "int80":
		// libseccomp kills the calling thread (SECCOMP_RET_KILL_THREAD) on a
		// foreign ABI; the Go runtime goes on without it, so the call runs
		// on a thread of its own and its silence is the verdict.
		res := make(chan string, 1)
		go func() {
			runtime.LockOSThread()
			if args[0] == "x32" {
				res <- raw(0x40000000 | unix.SYS_GETPID)
			} else if r := int32(dockerI386Getpid()); r > 0 {
				res <- "ok"
			} else {
				res <- fmt.Sprintf("ret%d", r)
			}
		}()
		select {
		case r := <-res:
			return r
		case <-time.After(2 * time.Second):
			return "thread killed"
		}
	case "alloc":
		// Allocate and touch N MiB.
		var n int
		fmt.Sscan(args[1], &n)
		keep := make([][]byte, 0, n)
		for range n {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		return fmt.Sprintf("allocated %d MiB", len(keep))
	case "control-status":
		// GET /v1/status on a warden serve's control socket.
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", args[1])
			},
		}}
		resp, err := c.Get("http://warden/v1/status")
		if err != nil {
			return "error: " + err.Error()
		}
		resp.Body.Close()
		return strconv.Itoa(resp.StatusCode)
	case "connect":
		c, err := net.DialTimeout("tcp", args[1], 3*time.Second)
		if err != nil {
			return "refused: " + err.Error()
		}
		defer c.Close()
		b := make([]byte, 7)
		n, _ := c.Read(b)
		return string(b[:n])
	}
	return "unknown probe " + args[0]
}

// holdDocker starts a docker worker on dir, runs a long command in it,
// prints the container's name and waits to be killed.
func holdDocker(dir, host, image string) {
	w, err := Start(context.Background(), &Options{
		Workspace: dir, HostEnv: append(os.Environ(), "DOCKER_HOST="+host), StartTimeout: time.Minute,
		Sandbox: &config.Sandbox{Enabled: true, Backend: BackendDocker, DockerImage: image},
	})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	go w.Runner().Run(context.Background(), command.Spec{Shell: "sleep 1000", Timeout: 500 * time.Second})
	time.Sleep(300 * time.Millisecond)
	fmt.Println(w.proc.(*dockerProc).name)
	select {}
}

// testDockerd is a Docker daemon a test started for itself, with an image
// made on the spot.
type testDockerd struct {
	host  string // unix://…
	image string // busybox + glibc, runs the warden binary
	bare  string // static busybox only: no C library
	env   []string
	cli   *dockerCLI
}

// requireSandbox skips with why, or fails under WARDEN_REQUIRE_SANDBOX=1.
func requireSandbox(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("WARDEN_REQUIRE_SANDBOX") == "1" {
		t.Fatalf("%s, and WARDEN_REQUIRE_SANDBOX=1", why)
	}
	t.Skipf("skipping: %s; set WARDEN_REQUIRE_SANDBOX=1 to make this a failure", why)
}

// staticBusybox returns the path of a statically linked busybox (Debian's
// busybox-static), or why there is none.
func staticBusybox() (string, error) {
	p, err := exec.LookPath("busybox")
	if err != nil {
		return "", errors.New("busybox is not installed (apt-get install busybox-static)")
	}
	f, err := elf.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is dynamically linked (apt-get install busybox-static)", p)
		}
	}
	return p, nil
}

// startTestDockerd starts dockerd on private directories with no network
// setup, imports the test images and stops it all when tb ends.
func startTestDockerd(tb testing.TB) *testDockerd {
	tb.Helper()
	if os.Geteuid() != 0 {
		requireSandbox(tb, "the docker tests start their own dockerd and need root")
	}
	for _, bin := range []string{"docker", "dockerd"} {
		if _, err := exec.LookPath(bin); err != nil {
			requireSandbox(tb, bin+" is not installed (apt-get install docker.io)")
		}
	}
	busybox, err := staticBusybox()
	if err != nil {
		requireSandbox(tb, err.Error())
	}
	// Short paths: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("/tmp", "wd")
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "d.sock")
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("dockerd", "--bridge=none", "--iptables=false", "--ip-forward=false", "--ip-masq=false",
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"-H", "unix://"+sock, "--pidfile", filepath.Join(dir, "dockerd.pid"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("failed to start dockerd: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
		// dockerd may leave its network namespace file mounted.
		if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
			for _, l := range strings.Split(string(mi), "\n") {
				if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
					unix.Unmount(f[4], unix.MNT_DETACH)
				}
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			tb.Logf("removing the daemon's directory: %v", err)
		}
	})
	d := &testDockerd{host: "unix://" + sock, image: "warden-test:glibc", bare: "warden-test:busybox"}
	d.env = append(os.Environ(), "DOCKER_HOST="+d.host)
	d.cli = &dockerCLI{path: mustLookPath(tb, "docker"), env: d.env}
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := d.cli.run(context.Background(), 5*time.Second, "version"); err == nil {
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			tb.Fatalf("dockerd exited:\n%s", tail(log, 2000))
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			tb.Fatalf("dockerd did not answer within 60 s:\n%s", tail(log, 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.importImage(tb, busybox, true, d.image)
	d.importImage(tb, busybox, false, d.bare)
	return d
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func mustLookPath(tb testing.TB, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// importImage builds a root filesystem (busybox and its applets, a passwd
// with the test user, an /etc/shadow only root may read, and with glibc the
// C library and dynamic loader the warden binary needs) and imports it.
func (d *testDockerd) importImage(tb testing.TB, busybox string, glibc bool, name string) {
	tb.Helper()
	root := tb.TempDir()
	mk := func(p string, mode fs.FileMode) {
		if err := os.MkdirAll(filepath.Join(root, p), mode); err != nil {
			tb.Fatal(err)
		}
		os.Chmod(filepath.Join(root, p), mode)
	}
	for _, p := range []string{"bin", "etc", "usr/bin", "run", "proc", "sys", "dev", "home", "opt"} {
		mk(p, 0o755)
	}
	mk("tmp", 0o1777)
	copyFile := func(src, dst string, mode fs.FileMode) {
		b, err := os.ReadFile(src)
		if err != nil {
			tb.Fatal(err)
		}
		mk(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(filepath.Join(root, dst), b, mode); err != nil {
			tb.Fatal(err)
		}
	}
	copyFile(busybox, "bin/busybox", 0o755)
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		tb.Fatal(err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			os.Symlink("busybox", filepath.Join(root, "bin", applet))
		}
	}
	if glibc {
		for _, lib := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"} {
			if runtime.GOARCH != "amd64" {
				tb.Skip("the test image is built for amd64")
			}
			real, err := filepath.EvalSymlinks(lib)
			if err != nil {
				tb.Fatal(err)
			}
			copyFile(real, strings.TrimPrefix(lib, "/"), 0o755)
		}
	}
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000::/home/warden:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\nagent:x:1000:\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/shadow"), []byte("root:$6$canaryshadowhash:19000:0:99999:7:::\n"), 0o600)
	tar := exec.Command("tar", "--numeric-owner", "--owner=0", "--group=0", "-C", root, "-c", ".")
	imp := d.cli.command(context.Background(), "import", "-", name)
	pipe, err := tar.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	imp.Stdin = pipe
	if err := tar.Start(); err != nil {
		tb.Fatal(err)
	}
	if out, err := imp.CombinedOutput(); err != nil {
		tb.Fatalf("docker import: %v\n%s", err, out)
	}
	if err := tar.Wait(); err != nil {
		tb.Fatal(err)
	}
}

// options for a docker worker on a fresh workspace holding files, owned by
// the test user.
func (d *testDockerd) workspace(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, testUID, testGID)
		}
		return err
	})
	real, _ := filepath.EvalSymlinks(dir)
	return real
}

func (d *testDockerd) start(t testing.TB, sb *config.Sandbox, files map[string]string, tweak func(*Options)) (*Worker, string) {
	t.Helper()
	dir := d.workspace(t, files)
	if sb == nil {
		sb = &config.Sandbox{Enabled: true}
	}
	sb.Backend, sb.DockerImage = BackendDocker, d.image
	o := &Options{Workspace: dir, Sandbox: sb, HostEnv: d.env, StartTimeout: time.Minute}
	if tweak != nil {
		tweak(o)
	}
	w, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

// containers lists the containers of workspace ws.
func (d *testDockerd) containers(t testing.TB, ws string) []string {
	t.Helper()
	out, err := d.cli.run(context.Background(), 30*time.Second, "ps", "-a", "--filter", "label="+dockerLabelWorkspace+"="+ws, "--format", "{{.Names}}")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)
}

func probe(t *testing.T, w *Worker, args ...string) command.Result {
	t.Helper()
	res, err := w.Runner().Run(context.Background(), command.Spec{Argv: append([]string{JailExe, "docker-probe"}, args...), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("probe %v: %v", args, err)
	}
	return res
}

func TestDockerSeccompProfile(t *testing.T) {
	t.Parallel()
	for _, lockdown := range []bool{false, true} {
		b, err := dockerSeccompProfile(lockdown)
		if err != nil {
			t.Fatal(err)
		}
		var p dockerSeccomp
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if p.DefaultAction != "SCMP_ACT_ALLOW" || len(p.Architectures) != 1 {
			t.Errorf("profile head: %+v", p)
		}
		find := func(name string) []dockerSeccompEntry {
			var out []dockerSeccompEntry
			for _, e := range p.Syscalls {
				if e.Names[0] == name {
					out = append(out, e)
				}
			}
			return out
		}
		for _, name := range []string{"ptrace", "mount", "unshare", "bpf", "io_uring_setup", "keyctl", "open_by_handle_at", "chroot"} {
			e := find(name)
			if len(e) != 1 || e[0].Action != "SCMP_ACT_ERRNO" || *e[0].ErrnoRet != uint(syscall.EPERM) || len(e[0].Args) != 0 {
				t.Errorf("%s: %+v", name, e)
			}
		}
		if e := find("clone3"); len(e) != 1 || *e[0].ErrnoRet != uint(syscall.ENOSYS) {
			t.Errorf("clone3: %+v", e)
		}
		// clone: one entry per CLONE_NEW* bit.
		if e := find("clone"); len(e) != 7 {
			t.Errorf("clone: %d entries, want 7: %+v", len(e), e)
		}
		// ioctl TIOCSTI: a 32-bit masked match, so high bits do not slip past.
		want := []dockerSeccompArg{{Index: 1, Value: 0xffffffff, ValueTwo: unix.TIOCSTI, Op: "SCMP_CMP_MASKED_EQ"}}
		if e := find("ioctl"); len(e) == 0 || !cmp.Equal(e[0].Args, want) {
			t.Errorf("ioctl: %+v", e)
		}
		inet := 0
		for _, e := range find("socket") {
			if len(e.Args) == 1 && e.Args[0].ValueTwo == unix.AF_INET {
				inet++
			}
		}
		if lockdown != (inet == 1) {
			t.Errorf("lockdown %v: %d AF_INET rows", lockdown, inet)
		}
	}
}

func TestDockerRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sb := func(image string) *config.Sandbox {
		return &config.Sandbox{Enabled: true, Backend: BackendDocker, DockerImage: image}
	}
	tests := []struct {
		name string
		opts *Options
	}{
		{"no docker_image", &Options{Workspace: dir, Sandbox: sb("")}},
		{"no docker client", &Options{Workspace: dir, Sandbox: sb("debian:12"), HostEnv: []string{"PATH=/nonexistent"}}},
	}
	if _, err := exec.LookPath("docker"); err == nil {
		tests = append(tests, struct {
			name string
			opts *Options
		}{"daemon unreachable", &Options{Workspace: dir, Sandbox: sb("debian:12"),
			HostEnv: append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/docker.sock")}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Start(context.Background(), tc.opts)
			if err == nil {
				w.Close()
				t.Fatal("started")
			}
			if !errors.Is(err, ErrBackendUnavailable) {
				t.Fatalf("got %v, want ErrBackendUnavailable", err)
			}
			var h interface{ Hint() string }
			if !errors.As(err, &h) || h.Hint() == "" {
				t.Errorf("no hint on %v", err)
			}
			t.Logf("%v (hint: %s)", err, h.Hint())
		})
	}
	if got := probeDocker(context.Background()); got == "" {
		t.Error("empty probe")
	}
}

// TestDocker runs the docker backend against a real dockerd the test
// starts, with the escape attempts of the local jail's tests.
func TestDocker(t *testing.T) {
	d := startTestDockerd(t)

	t.Run("probe", func(t *testing.T) {
		t.Setenv("DOCKER_HOST", d.host)
		if got := probeDocker(context.Background()); !strings.HasPrefix(got, "ok: server ") {
			t.Errorf("probe: %q", got)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		ws := d.workspace(t, nil)
		rootWS := t.TempDir()
		for _, tc := range []struct {
			name, ws, image string
			want            error
			hint            string
		}{
			{"image missing", ws, "warden-test:absent", ErrBackendUnavailable, "docker pull"},
			{"root-owned workspace", rootWS, d.image, nil, "chown"},
			{"no C library in the image", ws, d.bare, nil, "glibc"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w, err := Start(context.Background(), &Options{Workspace: tc.ws, HostEnv: d.env, StartTimeout: time.Minute,
					Sandbox: &config.Sandbox{Enabled: true, Backend: BackendDocker, DockerImage: tc.image}})
				if err == nil {
					w.Close()
					t.Fatal("started")
				}
				if tc.want != nil && !errors.Is(err, tc.want) {
					t.Errorf("got %v, want %v", err, tc.want)
				}
				var h interface{ Hint() string }
				if !errors.As(err, &h) || !strings.Contains(h.Hint(), tc.hint) {
					t.Errorf("error %v: want a hint mentioning %q", err, tc.hint)
				}
				if n := d.containers(t, tc.ws); len(n) != 0 {
					t.Errorf("containers left behind: %v", n)
				}
			})
		}
	})

	t.Run("works", func(t *testing.T) {
		w, dir := d.start(t, nil, map[string]string{"hello.txt": "hi\n"}, nil)
		res := run(t, w, "cat hello.txt && pwd && id -u && id -g")
		if want := fmt.Sprintf("hi\n%s\n%d\n%d\n", dir, testUID, testGID); res.Output != want || res.ExitCode != 0 {
			t.Fatalf("got %q (exit %d), want %q", res.Output, res.ExitCode, want)
		}
		if res := run(t, w, "exit 7"); res.ExitCode != 7 {
			t.Errorf("exit status: got %d, want 7", res.ExitCode)
		}
		if err := w.FS().WriteFile("out/new.txt", []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "out/new.txt")); err != nil || string(b) != "x" {
			t.Fatalf("host sees %q, %v", b, err)
		}
		info := w.Info()
		name := w.proc.(*dockerProc).name
		if info.Backend != "docker" || info.Seccomp != "enforced" || !strings.Contains(info.Detail, name) || info.PidsMax != PidsMax || info.Network {
			t.Errorf("Info: %+v", info)
		}
		if got := d.containers(t, dir); !cmp.Equal(got, []string{name}) {
			t.Errorf("containers: %v, want [%s]", got, name)
		}
		hostConf, err := d.cli.run(context.Background(), 30*time.Second, "inspect", "--format",
			"{{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.HostConfig.Init}} {{.Config.User}}", name)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("none true [ALL] %d %d true %d:%d", DefaultDockerMemoryMB<<20, PidsMax, testUID, testGID); hostConf != want {
			t.Errorf("container config: %q, want %q", hostConf, want)
		}
		// Capabilities, no_new_privs and seccomp, as the kernel sees them.
		res = run(t, w, "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status")
		for _, want := range []string{"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(res.Output, want) {
				t.Errorf("status lacks %q:\n%s", want, res.Output)
			}
		}
		// Close removes the container.
		w.Close()
		if got := d.containers(t, dir); len(got) != 0 {
			t.Errorf("containers after Close: %v", got)
		}
	})

	// Mount values are CSV: names holding commas, quotes, '=' or newlines
	// are masked as written; one holding CR LF (which the docker client
	// reads back as LF) must not leave the file readable.
	t.Run("mask names", func(t *testing.T) {
		names := []string{".env.a,b", ".env.\"q\"", ".env.x=y,readonly=false", ".env. lead", ".env.nl\nx", ".env.lonecr\rx"}
		files := map[string]string{}
		for _, n := range append(names, ".env.cr\r\nx") {
			files[n] = "SECRET=hunter2\n"
		}
		dir := d.workspace(t, files)
		w, err := Start(context.Background(), &Options{Workspace: dir, HostEnv: d.env, StartTimeout: time.Minute,
			Sandbox: &config.Sandbox{Enabled: true, Backend: BackendDocker, DockerImage: d.image}})
		if err == nil {
			defer w.Close()
			res, _ := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"cat", ".env.cr\r\nx"}, Timeout: 20 * time.Second})
			t.Fatalf("started with a mask docker cannot name; cat read %q", res.Output)
		}
		if !strings.Contains(err.Error(), "--mount") {
			t.Errorf("error does not say why: %v", err)
		}
		if n := d.containers(t, dir); len(n) != 0 {
			t.Errorf("containers left behind: %v", n)
		}
		delete(files, ".env.cr\r\nx")
		w, _ = d.start(t, nil, files, nil)
		for _, n := range names {
			res, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"cat", n}, Timeout: 20 * time.Second})
			if err != nil || strings.Contains(res.Output, "hunter2") {
				t.Errorf("cat %q: %q, %v", n, res.Output, err)
			}
		}
	})

	// A command runs as the worker's user: it must not reach the worker's
	// stdout (or stdin) through /proc and answer the host's requests.
	t.Run("protocol from a command", func(t *testing.T) {
		// Without Landlock, whose ptrace check refuses this only when the
		// worker's main thread happens to be the one it restricted.
		w, _ := d.start(t, &config.Sandbox{Enabled: true, Landlock: LandlockOff}, nil, nil)
		forge := `W=$PPID; i=1; while [ $i -lt 200 ]; do ` +
			`{ printf '{"id":%d,"ok":true,"exec":{"exit_code":0,"output":"forged"}}\n' $i > /proc/$W/fd/1; } 2>/dev/null || { echo refused; exit 0; }; ` +
			`i=$((i+1)); done; echo wrote`
		res, err := w.Runner().Run(context.Background(), command.Spec{Shell: forge, Timeout: 20 * time.Second})
		if err != nil || res.Output != "refused\n" {
			t.Errorf("a command wrote to the worker's protocol: %q, %v", res.Output, err)
		}
		if res := run(t, w, "(exec 3</proc/$PPID/fd/0) 2>/dev/null && echo opened || echo refused"); res.Output != "refused\n" {
			t.Errorf("a command opened the worker's requests: %q", res.Output)
		}
	})

	// A container shares the host's user namespace: a jail that can reach
	// the control socket of its user's warden serve (a workspace holding
	// the control directory, as ~/.local/state/warden/run is when the
	// workspace is the home directory) must still be refused, or it could
	// run commands in the jails of the other workspaces that serve holds.
	t.Run("control socket", func(t *testing.T) {
		w, dir := d.start(t, nil, nil, nil)
		ctl := filepath.Join(dir, "run")
		c, err := ListenControl(ctl, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The serve runs as the workspace's owner, as a user's own does.
		c.uid = testUID
		for _, p := range []string{ctl, c.Path()} {
			if err := os.Chown(p, testUID, testGID); err != nil {
				t.Fatal(err)
			}
		}
		if res := probe(t, w, "control-status", c.Path()); res.Output != "403\n" {
			t.Errorf("the jail asked the control socket for the status: %q (exit %d), want 403", res.Output, res.ExitCode)
		}
	})

	t.Run("escapes", func(t *testing.T) {
		home := t.TempDir()
		os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
		os.WriteFile(filepath.Join(home, ".ssh/id_ed25519"), []byte("PRIVATE KEY"), 0o600)
		env := append(append([]string{}, d.env...), "HOME="+home, "WARDEN_TEST_CANARY_TOKEN=canary-4f1e9", "WARDEN_TEST_PLAIN=canary-plain")
		w, dir := d.start(t, nil, map[string]string{
			".env":          "SECRET=hunter2\n",
			"certs/srv.pem": "-----BEGIN PRIVATE KEY-----\n",
			"warden.toml":   "[sandbox]\nenabled = true\n",
			"src/main.go":   "package main\n",
			".git/config":   "[core]\n",
		}, func(o *Options) {
			o.HostEnv = env
			o.EnvAllowlist = []string{"WARDEN_TEST_CANARY_TOKEN"}
		})
		sock := strings.TrimPrefix(d.host, "unix://")

		t.Run("secrets of the image and host", func(t *testing.T) {
			res := mustFail(t, w, "cat /etc/shadow")
			if strings.Contains(res.Output, "canaryshadowhash") {
				t.Errorf("read the image's /etc/shadow: %q", res.Output)
			}
			mustFail(t, w, "cat "+home+"/.ssh/id_ed25519")
			mustFail(t, w, "cat ~/.ssh/id_ed25519")
			mustFail(t, w, "ls /root/.ssh")
		})
		t.Run("docker socket", func(t *testing.T) {
			for _, p := range []string{sock, "/var/run/docker.sock", "/run/docker.sock", filepath.Dir(sock)} {
				mustFail(t, w, "ls -d "+p)
			}
			if res := run(t, w, "find / -xdev -type s 2>/dev/null; grep -h sock /proc/self/mountinfo"); strings.Contains(res.Output, "docker") || strings.Contains(res.Output, "d.sock") {
				t.Errorf("a docker socket is visible: %q", res.Output)
			}
		})
		t.Run("masked files", func(t *testing.T) {
			for _, f := range []string{".env", "certs/srv.pem", "warden.toml"} {
				res := run(t, w, "cat "+f)
				if strings.Contains(res.Output, "hunter2") || strings.Contains(res.Output, "BEGIN") || strings.Contains(res.Output, "enabled") {
					t.Errorf("cat %s leaked %q", f, res.Output)
				}
				mustFail(t, w, "echo pwned > "+f)
				if _, err := w.FS().ReadFile(f, 0); !errors.Is(err, workspace.ErrMasked) {
					t.Errorf("FS.ReadFile(%s): got %v, want ErrMasked", f, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, ".env")); string(b) != "SECRET=hunter2\n" {
				t.Errorf("host .env changed: %q", b)
			}
		})
		t.Run("masked file created later", func(t *testing.T) {
			// warden.yaml is a literal mask that did not exist: its
			// placeholder is covered, so a command cannot write it.
			mustFail(t, w, "echo 'sandbox: {enabled: false}' > warden.yaml")
			if b, _ := os.ReadFile(filepath.Join(dir, "warden.yaml")); len(b) != 0 {
				t.Errorf("warden.yaml written from the container: %q", b)
			}
			if err := w.FS().WriteFile(".env.local", []byte("X=1"), 0o600); !errors.Is(err, workspace.ErrMasked) {
				t.Errorf("WriteFile(.env.local): got %v, want ErrMasked", err)
			}
			if _, err := os.Stat(filepath.Join(dir, ".env.local")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf(".env.local appeared on the host: %v", err)
			}
		})
		t.Run("read-only system and protected paths", func(t *testing.T) {
			for _, c := range []string{"touch /usr/pwned", "touch /usr/bin/pwned", "echo x >> /etc/passwd", "touch /etc/pwned",
				"touch /pwned", "touch " + JailExe, "echo x >> .git/config"} {
				mustFail(t, w, c)
			}
			if res := run(t, w, "touch /tmp/ok ~/ok && echo fine"); res.Output != "fine\n" {
				t.Errorf("/tmp and HOME not writable: %q", res.Output)
			}
		})
		t.Run("privilege", func(t *testing.T) {
			mustFail(t, w, "unshare -r true")
			mustFail(t, w, "unshare -U true")
			mustFail(t, w, "mount -t tmpfs none /tmp")
			mustFail(t, w, "chroot / true")
			mustFail(t, w, "mknod /tmp/sda b 8 0")
		})
		t.Run("seccomp", func(t *testing.T) {
			for _, tc := range []struct{ probe, want string }{
				{"ptrace", "EPERM"},
				{"io_uring", "EPERM"},
				{"bpf", "EPERM"},
				{"tiocsti", "EPERM"},
				{"ioctl-tiocsti-highbits", "EPERM"},
				{"personality", "EPERM"},
				{"personality-query", "ok"},
				{"personality-linux", "EPERM"}, // stricter than the local filter: see dockerEntries
				{"clone3", "ENOSYS"},
				{"clone-newuser", "EPERM"},
				{"unshare", "EPERM"},
				// libseccomp drops it from Docker's profile; warden's own
				// filter, stacked by the worker, denies it.
				{"open_tree_attr", "EPERM"},
			} {
				res := probe(t, w, tc.probe)
				if got := strings.TrimSpace(res.Output); got != tc.want {
					t.Errorf("%s: got %q (exit %d), want %s", tc.probe, got, res.ExitCode, tc.want)
				}
			}
			// A system call under a foreign ABI never runs: libseccomp kills
			// the calling thread. Without the profile, x32 says ENOSYS (the
			// kernel has no x32) and int 0x80 reaches the i386 entry where
			// the kernel has one; where it has none (it faults on the host
			// too), that row proves nothing and is only logged.
			// Docker's profile kills the thread, warden's stacked filter the
			// whole process (the stricter action wins): either way the call
			// never runs and never answers.
			killed := func(res command.Result) bool {
				got := strings.TrimSpace(res.Output)
				return got == "thread killed" || (got == "" && res.ExitCode != 0)
			}
			res := probe(t, w, "x32")
			if !killed(res) {
				t.Errorf("x32: exit %d, output %q; want the call killed", res.ExitCode, strings.TrimSpace(res.Output))
			}
			host, _ := exec.Command(os.Args[0], "docker-probe", "int80").Output()
			res = probe(t, w, "int80")
			got := strings.TrimSpace(res.Output)
			switch {
			case strings.TrimSpace(string(host)) != "ok":
				t.Logf("int 0x80 does not reach the kernel on this host (%.40q); the x32 row covers the guard", host)
			case !killed(res):
				t.Errorf("int80: exit %d, output %.80q; want the call killed", res.ExitCode, got)
			}
		})
		t.Run("environment", func(t *testing.T) {
			res := run(t, w, "env")
			for _, bad := range []string{"canary-4f1e9", "canary-plain", home, "DOCKER_HOST"} {
				if strings.Contains(res.Output, bad) {
					t.Errorf("container environment leaks %q:\n%s", bad, res.Output)
				}
			}
		})
		t.Run("confinement", func(t *testing.T) {
			if _, err := w.FS().ReadFile("../../etc/passwd", 0); !errors.Is(err, workspace.ErrEscapes) {
				t.Errorf("got %v, want ErrEscapes", err)
			}
		})
	})

	t.Run("network", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
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
				c.Write([]byte("reached"))
				c.Close()
			}
		}()
		addr := ln.Addr().String()
		for _, tc := range []struct {
			name  string
			sb    *config.Sandbox
			reach bool
		}{
			{"network off", &config.Sandbox{Enabled: true}, false},
			{"lockdown", &config.Sandbox{Enabled: true, Lockdown: true, Network: true}, false},
			{"invalid section", &config.Sandbox{Enabled: true, Network: true, Invalid: "sandbox.netwrk: unknown key"}, false},
			{"network on reaches", &config.Sandbox{Enabled: true, Network: true}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w, _ := d.start(t, tc.sb, nil, nil)
				res := probe(t, w, "connect", addr)
				if got := strings.TrimSpace(res.Output) == "reached"; got != tc.reach {
					t.Errorf("connect to the host's loopback: %q, want reached=%v", res.Output, tc.reach)
				}
			})
		}
	})

	t.Run("lockdown read-only", func(t *testing.T) {
		sb := &config.Sandbox{Enabled: true, Lockdown: true, RWPaths: []string{"build"}}
		w, dir := d.start(t, sb, map[string]string{"src/a.go": "package a\n", "build/.keep": ""}, nil)
		if !w.Info().Lockdown || w.Info().PidsMax != PidsMaxLockdown {
			t.Fatalf("Info: %+v", w.Info())
		}
		mustFail(t, w, "echo x > src/a.go")
		mustFail(t, w, "touch new.txt")
		if res := run(t, w, "echo ok > build/out.txt && cat build/out.txt"); res.ExitCode != 0 {
			t.Errorf("rw_paths not writable under lockdown: %q", res.Output)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "src/a.go")); string(b) != "package a\n" {
			t.Errorf("src/a.go changed: %q", b)
		}
	})

	t.Run("memory limit", func(t *testing.T) {
		w, _ := d.start(t, &config.Sandbox{Enabled: true, MemoryMB: 96}, nil, nil)
		if res := probe(t, w, "alloc", "16"); strings.TrimSpace(res.Output) != "allocated 16 MiB" {
			t.Fatalf("a small allocation failed: %q (exit %d)", res.Output, res.ExitCode)
		}
		res := probe(t, w, "alloc", "400")
		if res.ExitCode == 0 || strings.Contains(res.Output, "allocated") {
			t.Errorf("allocated 400 MiB under memory_mb = 96: %q (exit %d)", res.Output, res.ExitCode)
		}
		t.Logf("400 MiB under a 96 MiB limit: exit %d", res.ExitCode)
		if _, err := w.Ping(context.Background()); err != nil {
			t.Errorf("the worker did not survive its command's OOM kill: %v", err)
		}
	})

	t.Run("fork bomb", func(t *testing.T) {
		if testing.Short() {
			t.Skip("fork bomb is slow")
		}
		w, _ := d.start(t, &config.Sandbox{Enabled: true, Lockdown: true}, nil, nil)
		name := w.proc.(*dockerProc).name
		done := make(chan command.Result, 1)
		go func() {
			res, _ := w.Runner().Run(context.Background(), command.Spec{Shell: "bomb() { bomb | bomb & }; bomb; sleep 4", Timeout: 6 * time.Second})
			done <- res
		}()
		time.Sleep(time.Second)
		var worst time.Duration
		for range 5 {
			t0 := time.Now()
			if err := exec.Command("true").Run(); err != nil {
				t.Fatalf("host cannot start a process during the bomb: %v", err)
			}
			worst = max(worst, time.Since(t0))
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("worst host process start during the bomb: %v", worst)
		if worst > 5*time.Second {
			t.Errorf("host start latency during the bomb: %v", worst)
		}
		pids, err := d.cli.run(context.Background(), 30*time.Second, "stats", "--no-stream", "--format", "{{.PIDs}}", name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("processes in the container during the bomb: %s (limit %d)", pids, PidsMaxLockdown)
		var n int
		if fmt.Sscan(pids, &n); n > PidsMaxLockdown {
			t.Errorf("%d processes in the container, limit %d", n, PidsMaxLockdown)
		}
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("bomb command did not end")
		}
		if _, err := w.Ping(context.Background()); err != nil {
			t.Fatalf("worker died: %v", err)
		}
	})

	t.Run("killed mid-write", func(t *testing.T) {
		old := []byte("old contents\n")
		big := bytes.Repeat([]byte("new contents, a lot of them\n"), (24<<20)/28)
		caught := 0
		for try := 0; try < 12 && caught < 2; try++ { // timing: a busy host may let a write finish first
			w, dir := d.start(t, nil, map[string]string{"data.txt": string(old)}, nil)
			errc := make(chan error, 1)
			go func() { errc <- w.FS().WriteFile("data.txt", big, 0o644) }()
			mid := false
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
				if tmps, _ := filepath.Glob(filepath.Join(dir, ".warden-*")); len(tmps) > 0 {
					mid = true
					break
				}
				select {
				case err := <-errc:
					errc <- err
					deadline = time.Time{}
				default:
				}
				time.Sleep(100 * time.Microsecond)
			}
			w.kill()
			err := <-errc
			got, rerr := os.ReadFile(filepath.Join(dir, "data.txt"))
			if rerr != nil {
				t.Fatalf("data.txt gone: %v", rerr)
			}
			if !bytes.Equal(got, old) && !bytes.Equal(got, big) {
				t.Fatalf("torn file: %d bytes (write error %v)", len(got), err)
			}
			if mid && err != nil {
				caught++
			}
			<-w.Done()
			if n := d.containers(t, dir); len(n) != 0 {
				t.Errorf("container left after the kill: %v", n)
			}
		}
		if caught == 0 {
			t.Fatal("never caught the worker in the middle of a write; the test proved nothing")
		}
	})

	t.Run("timeout replaces the container", func(t *testing.T) {
		w, dir := d.start(t, nil, nil, func(o *Options) { o.RequestTimeout = 500 * time.Millisecond })
		_, err := w.call(context.Background(), &Request{Op: OpExec, Argv: []string{"sleep", "30"}, TimeoutMS: 60_000}, 500*time.Millisecond)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
		select {
		case <-w.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("worker not killed after a timeout")
		}
		if n := d.containers(t, dir); len(n) != 0 {
			t.Errorf("container left after the timeout: %v", n)
		}
	})

	t.Run("killing warden leaves no container", func(t *testing.T) {
		dir := d.workspace(t, nil)
		holder := exec.Command(os.Args[0], "hold-docker", dir, d.host, d.image)
		out, err := holder.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || strings.HasPrefix(line, "error") {
			holder.Process.Kill()
			holder.Wait()
			t.Fatalf("holder: %q %v", line, err)
		}
		name := strings.TrimSpace(line)
		if got := d.containers(t, dir); !cmp.Equal(got, []string{name}) {
			t.Errorf("containers while warden runs: %v, want [%s]", got, name)
		}
		holder.Process.Signal(syscall.SIGKILL)
		holder.Wait()
		deadline := time.Now().Add(20 * time.Second)
		for len(d.containers(t, dir)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("container outlived warden: %v", d.containers(t, dir))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("stale containers removed at start", func(t *testing.T) {
		dir := d.workspace(t, nil)
		boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
		mk := func(owner string) string {
			id, err := d.cli.run(context.Background(), 30*time.Second, "create", "--network", "none",
				"--label", dockerLabelWorkspace+"="+dir, "--label", dockerLabelOwner+"="+owner, d.image, "true")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.cli.run(context.Background(), 30*time.Second, "rm", "-f", id) })
			return id
		}
		// A warden that is gone (no such pid, or the pid was reused), and one
		// that is alive (this test): only the first two are removed.
		mk(strings.TrimSpace(string(boot)) + "/999999999/1")
		mk(ownerLabel(os.Getpid())[:strings.LastIndex(ownerLabel(os.Getpid()), "/")] + "/1")
		live := mk(ownerLabel(os.Getpid()))
		w, err := Start(context.Background(), &Options{Workspace: dir, HostEnv: d.env, StartTimeout: time.Minute,
			Sandbox: &config.Sandbox{Enabled: true, Backend: BackendDocker, DockerImage: d.image}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ids, err := d.cli.run(context.Background(), 30*time.Second, "ps", "-a", "-q", "--no-trunc",
			"--filter", "label="+dockerLabelWorkspace+"="+dir, "--filter", "status=created")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(ids); !cmp.Equal(got, []string{live}) {
			t.Errorf("created containers after start: %v, want only the live warden's %s", got, live)
		}
	})
}

// FuzzOwnerGone feeds container labels (anyone who can reach the daemon can
// set them) to the stale-container check: it must never panic, and must
// never call the running test process gone, whatever follows its label.
func FuzzOwnerGone(f *testing.F) {
	self := ownerLabel(os.Getpid())
	f.Add(self)
	f.Add(self + "/extra")
	f.Add("boot/1/2")
	f.Add("//")
	f.Add("x/-1/")
	f.Add(strings.Repeat("/", 100))
	boot, _, _ := strings.Cut(self, "/")
	f.Fuzz(func(t *testing.T, label string) {
		gone := ownerGone(label)
		if ownerGone(self) {
			t.Fatal("the live process is called gone")
		}
		// A container from another machine or boot id is never removed
		// unless the boot id is ours.
		if b, _, _ := strings.Cut(label, "/"); gone && b != boot {
			t.Fatalf("label %q of another boot id called gone", label)
		}
	})
}

func TestDockerMountArg(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"/w/plain", true}, {"/w/a,b", true}, {`/w/"q"`, true}, {"/w/x=y,readonly=false", true},
		{"/w/ lead", true}, {"/w/nl\nx", true}, {"/w/cr\rx", true}, {"/w/trail\r", true},
		{"/w/crlf\r\nx", false}, {"/w/end\r\n", false},
	} {
		v, err := bindMount(c.path, c.path, true)
		if (err == nil) != c.ok {
			t.Errorf("bindMount(%q): %q, %v", c.path, v, err)
			continue
		}
		if err != nil {
			continue
		}
		// What the docker client reads back.
		back, err := csv.NewReader(strings.NewReader(v)).Read()
		want := []string{"type=bind", "source=" + c.path, "target=" + c.path, "bind-propagation=rprivate", "readonly"}
		if err != nil || !cmp.Equal(back, want) {
			t.Errorf("bindMount(%q) = %q reads back as %q, %v", c.path, v, back, err)
		}
	}
}
