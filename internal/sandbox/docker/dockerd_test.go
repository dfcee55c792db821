package docker_test

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/docker"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/testenv"
)

// testUID owns the test workspaces: the docker backend runs as the owner.
const testUID, testGID = 1000, 1000

// testDockerd is a Docker daemon a test started for itself, with images
// made on the spot.
type testDockerd struct {
	host   string // unix://…
	image  string // busybox, bash and glibc: runs the warden binary and command lines
	noBash string // busybox and glibc, no bash
	bare   string // static busybox only: no C library
	env    []string
	docker string
}

// staticBusybox returns the path of a statically linked busybox (Debian's
// busybox-static), or why there is none.
func staticBusybox(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (apt-get install busybox-static)", p)
		}
	}
	return nil
}

// startTestDockerd starts dockerd on private directories with no network
// setup, imports the test images and stops it all when tb ends.
func startTestDockerd(tb testing.TB) *testDockerd {
	tb.Helper()
	paths := testenv.Need(tb, "root", "docker", "dockerd", "busybox")
	busybox := paths[3]
	if err := staticBusybox(busybox); err != nil {
		testenv.Skip(tb, "%v", err)
	}
	if runtime.GOARCH != "amd64" {
		testenv.Skip(tb, "the test images are built for amd64")
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
	cmd := exec.Command(paths[2], "--bridge=none", "--iptables=false", "--ip-forward=false", "--ip-masq=false",
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
	d := &testDockerd{host: "unix://" + sock, image: "warden-test:glibc", noBash: "warden-test:nobash", bare: "warden-test:busybox", docker: paths[1]}
	d.env = append(os.Environ(), "DOCKER_HOST="+d.host)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := d.run(5*time.Second, "version"); err == nil {
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
	d.importImage(tb, busybox, true, true, d.image)
	d.importImage(tb, busybox, true, false, d.noBash)
	d.importImage(tb, busybox, false, false, d.bare)
	return d
}

// run runs the docker client against the test daemon.
func (d *testDockerd) run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.docker, args...)
	cmd.Env = d.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("docker %s: %v: %s", args[0], err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// importImage builds a root filesystem (busybox and its applets, a passwd
// with the test user, an /etc/shadow only root may read; with glibc the C
// library and dynamic loader the warden binary needs; with bash, bash and
// its libraries) and imports it.
func (d *testDockerd) importImage(tb testing.TB, busybox string, glibc, bash bool, name string) {
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
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := os.ReadFile(real)
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
			copyFile(lib, strings.TrimPrefix(lib, "/"), 0o755)
		}
	}
	if bash {
		bashPath := testenv.Need(tb, "bash")[0]
		copyFile(bashPath, "bin/bash", 0o755)
		copyFile("/lib/x86_64-linux-gnu/libtinfo.so.6", "lib/x86_64-linux-gnu/libtinfo.so.6", 0o755)
	}
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000::/home/warden:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\nagent:x:1000:\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/shadow"), []byte("root:$6$canaryshadowhash:19000:0:99999:7:::\n"), 0o600)
	tar := exec.Command("tar", "--numeric-owner", "--owner=0", "--group=0", "-C", root, "-c", ".")
	imp := exec.Command(d.docker, "import", "-", name)
	imp.Env = d.env
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

// workspace makes a workspace owned by the test user, holding files, in a
// directory that user can reach (as a user's own workspace is).
func (d *testDockerd) workspace(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wdws")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, testUID, testGID); err != nil {
		t.Fatal(err)
	}
	sandboxtest.WriteFiles(t, dir, files)
	return dir
}

func (d *testDockerd) sandbox() *config.Sandbox {
	return &config.Sandbox{Enabled: true, Backend: jail.BackendDocker, DockerImage: d.image}
}

// start starts a worker in a container on a new workspace holding files.
func (d *testDockerd) start(t testing.TB, sb *config.Sandbox, files map[string]string) (*sandbox.Worker, string) {
	t.Helper()
	dir := d.workspace(t, files)
	if sb == nil {
		sb = d.sandbox()
	}
	w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: dir, Sandbox: sb, HostEnv: d.env, StartTimeout: time.Minute})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

// containers lists the containers of workspace ws.
func (d *testDockerd) containers(t testing.TB, ws string) []string {
	t.Helper()
	out, err := d.run(30*time.Second, "ps", "-a", "--filter", "label="+docker.LabelWorkspace+"="+ws, "--format", "{{.Names}}")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(out)
}

// fixture is the suite's view of this daemon.
func (d *testDockerd) fixture() *sandboxtest.Fixture {
	sock := strings.TrimPrefix(d.host, "unix://")
	return &sandboxtest.Fixture{
		Name:      jail.BackendDocker,
		Sandbox:   d.sandbox,
		Workspace: func(t *testing.T) string { return d.workspace(t, nil) },
		HostEnv:   d.env,
		Probe:     jail.JailExe,
		// The daemon's socket, its directory and the usual places.
		Secrets: []string{sock, filepath.Dir(sock), "/var/run/docker.sock", "/run/docker.sock"},
		Processes: func(t *testing.T, w *sandbox.Worker) int {
			names := d.containers(t, w.Info().Workspace)
			if len(names) != 1 {
				t.Fatalf("containers of the workspace: %v", names)
			}
			// docker top lists the processes (docker stats would count threads).
			out, err := d.run(30*time.Second, "top", names[0], "-eo", "pid")
			if err != nil {
				t.Fatal(err)
			}
			return len(strings.Fields(out)) - 1 // the PID header
		},
		Leftovers: func(t *testing.T, dir string) []string { return d.containers(t, dir) },
		// libseccomp keeps one comparison per argument: personality is
		// denied for every value but the query (see the package doc).
		Expect:       map[string]string{"personality-linux": "EPERM"},
		StartTimeout: time.Minute,
	}
}
