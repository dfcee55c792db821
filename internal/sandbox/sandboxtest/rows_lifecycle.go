package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// testForkBomb: under lockdown a fork bomb stays within the process limit,
// the host keeps starting processes quickly, the command ends at its
// timeout and the worker survives it.
func testForkBomb(t *testing.T, f *Fixture) {
	if testing.Short() {
		t.Skip("a fork bomb is slow")
	}
	sb := f.Sandbox()
	sb.Lockdown = true
	w, _ := f.start(t, sb, nil, nil)
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
			t.Fatalf("the host cannot start a process during the bomb: %v", err)
		}
		worst = max(worst, time.Since(t0))
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("worst host process start during the bomb: %v", worst)
	if worst > 5*time.Second {
		t.Errorf("host start latency during the bomb: %v", worst)
	}
	if f.Processes != nil {
		n := f.Processes(t, w)
		t.Logf("processes in the jail during the bomb: %d (limit %d)", n, jail.PidsMaxLockdown)
		if n > jail.PidsMaxLockdown {
			t.Errorf("%d processes in the jail, limit %d", n, jail.PidsMaxLockdown)
		}
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the bomb's command did not end")
	}
	if _, err := w.Ping(context.Background()); err != nil {
		t.Fatalf("the worker died: %v", err)
	}
	if f.Processes != nil {
		n := 0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if n = f.Processes(t, w); n <= 2 {
				break
			}
		}
		if n > 2 {
			t.Errorf("%d processes left in the jail after the bomb's timeout", n)
		}
	}
}

// testKilledMidWrite: a worker killed while it writes a file leaves the old
// file or the new one, never a torn one, and nothing of the jail.
func testKilledMidWrite(t *testing.T, f *Fixture) {
	old := []byte("old contents\n")
	big := bytes.Repeat([]byte("new contents, a lot of them\n"), (24<<20)/28)
	caught := 0
	for try := 0; try < 12 && caught < 2; try++ { // timing: a busy host may let a write finish first
		w, dir := f.start(t, nil, map[string]string{"data.txt": string(old)}, nil)
		errc := make(chan error, 1)
		go func() { errc <- w.FS().WriteFile("data.txt", big, 0o644) }()
		// Kill the worker as soon as its temporary file is on disk, that
		// is in the middle of writing it.
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
		w.Kill()
		err := <-errc
		got, rerr := os.ReadFile(filepath.Join(dir, "data.txt"))
		if rerr != nil {
			t.Fatalf("data.txt is gone: %v", rerr)
		}
		if !bytes.Equal(got, old) && !bytes.Equal(got, big) {
			t.Fatalf("torn file: %d bytes (write error %v)", len(got), err)
		}
		if mid && err != nil {
			caught++
		}
		<-w.Done()
		leftovers(t, f, dir)
	}
	if caught == 0 {
		t.Fatal("never caught the worker in the middle of a write; the row proved nothing")
	}
}

// testKillLeavesNothing: a worker killed with commands running (what a
// timed-out request does) takes its jail with it.
func testKillLeavesNothing(t *testing.T, f *Fixture) {
	m := marker("kill")
	w, dir := f.start(t, nil, nil, nil)
	go w.Runner().Run(context.Background(), command.Spec{Shell: marked(m) + " & " + marked(m), Timeout: time.Minute})
	for deadline := time.Now().Add(30 * time.Second); len(pidsWith(m)) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command never started: %q", pidsWith(m))
		}
	}
	w.Kill()
	select {
	case <-w.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not die")
	}
	waitNoPids(t, m, 10*time.Second)
	leftovers(t, f, dir)
}

// testWardenKilled: when the warden process that holds a jail is killed
// (SIGKILL: no cleanup runs), nothing of the jail survives it.
func testWardenKilled(t *testing.T, f *Fixture) {
	dir := f.workspace(t, nil)
	m := marker("hold")
	spec, err := json.Marshal(holdSpec{Options: *f.options(dir, nil), Marker: m})
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command(os.Args[0], holdArg, string(spec))
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("holder: %q %v", line, err)
	}
	if len(pidsWith(dir)) == 0 {
		t.Fatalf("no process of the jail names the workspace %s, so the row cannot see it go", dir)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	waitNoPids(t, m, 20*time.Second)
	waitNoPids(t, dir, 20*time.Second)
	leftovers(t, f, dir)
}

// leftovers waits for the fixture's view of what is left of a workspace's
// jails on the host to empty.
func leftovers(t *testing.T, f *Fixture, dir string) {
	t.Helper()
	if f.Leftovers == nil {
		return
	}
	var left []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if left = f.Leftovers(t, dir); len(left) == 0 {
			return
		}
	}
	t.Errorf("left on the host after the worker went: %q", left)
}

// testForgedProtocol: a command runs as the worker's user; it must not
// reach the worker's protocol pipes through /proc and answer the host's
// requests in its place, nor read them. Without Landlock the worker's own
// undumpability holds the line; with it, the jail's first process (which
// holds the pipes too) is out of reach as well.
func testForgedProtocol(t *testing.T, f *Fixture) {
	forge := `W=%s; i=1; while [ $i -lt 200 ]; do ` +
		`{ printf '{"id":%%d,"ok":true,"exec":{"exit_code":0,"output":"forged"}}\n' $i > /proc/$W/fd/1; } 2>/dev/null || { echo refused; exit 0; }; ` +
		`i=$((i+1)); done; echo wrote`
	for _, tc := range []struct {
		name, landlock, pid string
	}{
		{"the worker, without Landlock", jail.LandlockOff, "$PPID"},
		{"the worker", jail.LandlockAuto, "$PPID"},
		{"the jail's first process", jail.LandlockAuto, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := f.Sandbox()
			sb.Landlock = tc.landlock
			w, _ := f.start(t, sb, nil, nil)
			if tc.pid == "1" && !strings.HasPrefix(w.Info().Landlock, "enforced") {
				t.Skipf("Landlock is %q: the jail's first process is reachable without it (a documented limit)", w.Info().Landlock)
			}
			res, err := w.Runner().Run(context.Background(), command.Spec{Shell: strings.Replace(forge, "%s", tc.pid, 1), Timeout: 20 * time.Second})
			if err != nil || res.Output != "refused\n" {
				t.Errorf("a command wrote to the protocol through /proc/%s/fd/1: %q, %v", tc.pid, res.Output, err)
			}
			if res := run(t, w, "(exec 3</proc/"+tc.pid+"/fd/0) 2>/dev/null && echo opened || echo refused"); res.Output != "refused\n" {
				t.Errorf("a command opened the requests through /proc/%s/fd/0: %q", tc.pid, res.Output)
			}
			if _, err := w.Ping(context.Background()); err != nil {
				t.Errorf("the worker did not survive: %v", err)
			}
		})
	}
}

// testControlSocket: a jail that can see the control socket of its
// user's warden serve (a workspace holding the control directory, as
// ~/.local/state/warden/run is when the workspace is the home directory)
// is refused by it, or it could run commands in the jails of the other
// workspaces serve holds. The server runs as the workspace's owner, as a
// user's own serve does.
func testControlSocket(t *testing.T, f *Fixture) {
	w, dir := f.start(t, nil, nil, nil)
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	owner := st.Sys().(*syscall.Stat_t)
	// A copy of this binary the owner can run.
	binDir, err := os.MkdirTemp("", "wctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	os.Chmod(binDir, 0o755)
	bin := filepath.Join(binDir, "serve")
	if err := copyExe(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(bin, controlArg, filepath.Join(dir, "run"))
	srv.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	srv.Dir = binDir
	if owner.Uid != uint32(os.Getuid()) {
		srv.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: owner.Uid, Gid: owner.Gid}}
	}
	stdin, err := srv.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); srv.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	sock := strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(sock, dir) {
		t.Fatalf("control server: %q %v", line, err)
	}
	if res := f.probe(t, w, "control-status", sock); res.Output != "403\n" {
		t.Errorf("the jail asked the control socket for the status: %q (exit %d), want 403", res.Output, res.ExitCode)
	}
}

func copyExe(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
