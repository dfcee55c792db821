package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/workspace"
)

// startJail starts a worker on a fresh workspace holding files.
func startJail(t *testing.T, sb *config.Sandbox, files map[string]string, tweak func(*Options)) (*Worker, string) {
	t.Helper()
	needJail(t)
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
	if sb == nil {
		sb = &config.Sandbox{Enabled: true, Backend: "local"}
	}
	o := &Options{Workspace: dir, Sandbox: sb, StartTimeout: 20 * time.Second}
	if tweak != nil {
		tweak(o)
	}
	w, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	real, _ := filepath.EvalSymlinks(dir)
	return w, real
}

func run(t *testing.T, w *Worker, shell string) command.Result {
	t.Helper()
	res, err := w.Runner().Run(context.Background(), command.Spec{Shell: shell, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("run %q: %v", shell, err)
	}
	return res
}

// mustFail runs shell in the jail and fails the test if it exits 0.
func mustFail(t *testing.T, w *Worker, shell string) command.Result {
	t.Helper()
	res := run(t, w, shell)
	if res.ExitCode == 0 {
		t.Errorf("escape: %q succeeded in the jail; output:\n%s", shell, res.Output)
	}
	return res
}

func TestJailWorks(t *testing.T) {
	w, dir := startJail(t, nil, map[string]string{"hello.txt": "hi\n"}, nil)
	res := run(t, w, "cat hello.txt && pwd && id -u")
	if want := "hi\n" + dir + "\n0\n"; res.Output != want || res.ExitCode != 0 {
		t.Fatalf("got %q (exit %d), want %q", res.Output, res.ExitCode, want)
	}
	if res := run(t, w, "exit 7"); res.ExitCode != 7 {
		t.Errorf("exit status: got %d, want 7", res.ExitCode)
	}
	// Writes through the worker land on the host.
	if err := w.FS().WriteFile("out/new.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out/new.txt")); err != nil || string(b) != "x" {
		t.Fatalf("host sees %q, %v", b, err)
	}
	info := w.Info()
	if info.Backend != "local" || info.PID == 0 || info.Seccomp != "enforced" {
		t.Errorf("Info: %+v", info)
	}
	if landlock.ABI() > 0 && !strings.HasPrefix(info.Landlock, "enforced") {
		t.Errorf("Landlock available but not enforced: %q", info.Landlock)
	}
	// Under Landlock, what should stay writable does.
	if res := run(t, w, "grep -c . /proc/self/status >/dev/null && touch /home/warden/ok && echo fine"); res.Output != "fine\n" {
		t.Errorf("HOME not writable under Landlock: %q", res.Output)
	}
}

func TestJailEscapes(t *testing.T) {
	// A fake ~/.ssh on the host, in a HOME the test owns.
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh/id_ed25519"), []byte("PRIVATE KEY"), 0o600)
	t.Setenv("HOME", home)
	t.Setenv("WARDEN_TEST_CANARY_TOKEN", "canary-4f1e9")
	t.Setenv("WARDEN_TEST_PLAIN", "canary-plain")

	w, dir := startJail(t, nil, map[string]string{
		".env":          "SECRET=hunter2\n",
		"certs/srv.pem": "-----BEGIN PRIVATE KEY-----\n",
		"warden.toml":   "[sandbox]\nenabled = true\n",
		"src/main.go":   "package main\n",
	}, func(o *Options) { o.EnvAllowlist = []string{"WARDEN_TEST_CANARY_TOKEN"} })

	t.Run("system secrets", func(t *testing.T) {
		mustFail(t, w, "cat /etc/shadow")
		mustFail(t, w, "cat /etc/gshadow")
		mustFail(t, w, "ls /etc/ssh")
		mustFail(t, w, "ls /etc/sudoers.d || cat /etc/sudoers")
	})
	t.Run("host home", func(t *testing.T) {
		mustFail(t, w, "cat "+home+"/.ssh/id_ed25519")
		mustFail(t, w, "cat ~/.ssh/id_ed25519")
		mustFail(t, w, "ls /root/.ssh")
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
		// .env.local does not exist: the file tools refuse it and a
		// command cannot read back what it wrote... the worker refuses it.
		if err := w.FS().WriteFile(".env.local", []byte("X=1"), 0o600); !errors.Is(err, workspace.ErrMasked) {
			t.Errorf("WriteFile(.env.local): got %v, want ErrMasked", err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".env.local")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf(".env.local appeared on the host: %v", err)
		}
		ents, err := w.FS().ReadDir(".")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".env") || e.Name() == "warden.toml" {
				t.Errorf("ReadDir shows masked %s", e.Name())
			}
		}
	})
	t.Run("system is read-only", func(t *testing.T) {
		mustFail(t, w, "touch /usr/pwned")
		mustFail(t, w, "touch /usr/bin/pwned")
		mustFail(t, w, "echo x >> /etc/passwd")
		mustFail(t, w, "touch /etc/pwned")
		mustFail(t, w, "touch "+JailExe)
	})
	t.Run("privilege", func(t *testing.T) {
		mustFail(t, w, "unshare -r true")
		mustFail(t, w, "unshare -U true")
		mustFail(t, w, "mount -t tmpfs none /tmp")
		mustFail(t, w, "chroot / true")
		mustFail(t, w, "mknod /tmp/sda b 8 0")
	})
	t.Run("environment", func(t *testing.T) {
		res := run(t, w, "env")
		for _, bad := range []string{"canary-4f1e9", "canary-plain", home} {
			if strings.Contains(res.Output, bad) {
				t.Errorf("jail environment leaks %q:\n%s", bad, res.Output)
			}
		}
		// Even a request that brings its own environment cannot carry it in.
		r2, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"env"}, Env: os.Environ(), Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r2.Output, "canary-4f1e9") {
			t.Errorf("explicit env leaks the canary:\n%s", r2.Output)
		}
	})
	t.Run("confinement", func(t *testing.T) {
		if _, err := w.FS().ReadFile("../../etc/passwd", 0); !errors.Is(err, workspace.ErrEscapes) {
			t.Errorf("got %v, want ErrEscapes", err)
		}
		if _, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"true"}, Dir: "../"}); !errors.Is(err, workspace.ErrEscapes) {
			t.Errorf("exec in ../: got %v, want ErrEscapes", err)
		}
	})
}

func TestJailHostFiles(t *testing.T) {
	// What a test cannot reach on the host, the jail does not show either.
	w, _ := startJail(t, nil, nil, nil)
	res := run(t, w, "ls /; ls /etc | sort | tr '\\n' ' '")
	for _, bad := range []string{"shadow", "sudoers", "ssh"} {
		if strings.Contains(res.Output, bad) {
			t.Errorf("/etc shows %s: %s", bad, res.Output)
		}
	}
	if strings.Contains(res.Output, "root\n") && !strings.Contains(res.Output, "root") {
		t.Error("unreachable")
	}
}

func TestJailLockdownNetwork(t *testing.T) {
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
			c.Write([]byte("reached\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3", port)

	for _, tc := range []struct {
		name string
		sb   *config.Sandbox
	}{
		{"lockdown", &config.Sandbox{Enabled: true, Lockdown: true, Network: true}},
		{"network off", &config.Sandbox{Enabled: true}},
		{"invalid section", &config.Sandbox{Enabled: true, Network: true, Invalid: "sandbox.netwrk: unknown key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := startJail(t, tc.sb, map[string]string{"a.txt": "a"}, nil)
			res := mustFail(t, w, "bash -c '"+probe+"'")
			if strings.Contains(res.Output, "reached") {
				t.Errorf("connected to the host's loopback listener")
			}
		})
	}
	t.Run("network on reaches", func(t *testing.T) {
		w, _ := startJail(t, &config.Sandbox{Enabled: true, Network: true}, nil, nil)
		if res := run(t, w, "bash -c '"+probe+"'"); !strings.Contains(res.Output, "reached") {
			t.Errorf("network = true: connect failed (%q), so the lockdown rows above prove nothing", res.Output)
		}
	})
}

func TestJailLockdownReadOnly(t *testing.T) {
	sb := &config.Sandbox{Enabled: true, Invalid: "sandbox: wrong type for lockdown", RWPaths: []string{"build"}}
	w, dir := startJail(t, sb, map[string]string{"src/a.go": "package a\n", "build/.keep": ""}, nil)
	if !w.Info().Lockdown || w.Info().Forced == "" {
		t.Fatalf("invalid section did not force lockdown: %+v", w.Info())
	}
	mustFail(t, w, "echo x > src/a.go")
	mustFail(t, w, "touch new.txt")
	if err := w.FS().WriteFile("new.txt", []byte("x"), 0o644); err == nil {
		t.Error("FS.WriteFile succeeded in a read-only lockdown workspace")
	}
	if res := run(t, w, "echo ok > build/out.txt && cat build/out.txt"); res.ExitCode != 0 {
		t.Errorf("rw_paths not writable under lockdown: %q", res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "src/a.go")); string(b) != "package a\n" {
		t.Errorf("src/a.go changed: %q", b)
	}
}

func TestJailForkBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("fork bomb is slow")
	}
	w, _ := startJail(t, &config.Sandbox{Enabled: true, Lockdown: true}, nil, nil)
	if w.Info().PidsMax == 0 {
		t.Fatal("lockdown started without a process limit")
	}
	done := make(chan command.Result, 1)
	go func() {
		res, _ := w.Runner().Run(context.Background(), command.Spec{Shell: "bomb() { bomb | bomb & }; bomb; sleep 4", Timeout: 5 * time.Second})
		done <- res
	}()
	// While it runs, the host keeps answering quickly.
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
	if n := len(w.cg.pids()); n > PidsMaxLockdown {
		t.Errorf("%d processes in the jail, limit %d", n, PidsMaxLockdown)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("bomb command did not end")
	}
	// The worker survives and the group is gone.
	if _, err := w.Ping(context.Background()); err != nil {
		t.Fatalf("worker died: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(w.cg.pids()) > 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(w.cg.pids()); n > 2 {
		t.Errorf("%d processes left in the jail after the bomb's timeout", n)
	}
}

// A command that outlives its timeout is killed by the worker, with its
// whole group, and the worker goes on serving. Under Landlock's signal
// scope a command started by one worker thread could not be killed from
// another: the call hung until the host reset the worker.
func TestJailTimeoutKills(t *testing.T) {
	t.Parallel()
	w, _ := startJail(t, nil, nil, nil)
	pid := w.Info().PID
	for i := range 6 { // the runner's goroutines land on several threads
		start := time.Now()
		res, err := w.Runner().Run(context.Background(), command.Spec{
			Shell: "sleep 60 & sleep 60; echo never", Timeout: 300 * time.Millisecond,
		})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if !res.TimedOut || strings.Contains(res.Output, "never") {
			t.Fatalf("run %d: %+v, want a timed-out command", i, res)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("run %d: a 300 ms timeout took %v", i, d)
		}
	}
	if got := w.Info().PID; got != pid || !w.Alive() {
		t.Fatalf("the worker was replaced (pid %d, now %d, alive %v)", pid, got, w.Alive())
	}
	if res := run(t, w, "pgrep -x sleep || echo none"); !strings.Contains(res.Output, "none") {
		t.Errorf("sleep processes survived their timeout: %q", res.Output)
	}
}
