package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/command/commandtest"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/workspace"
)

// testWorks: commands, files and streams go through the jail, with the
// seccomp filter (and Landlock, where the kernel has it) in force.
func testWorks(t *testing.T, f *Fixture) {
	w, dir := f.start(t, nil, map[string]string{"hello.txt": "hi\n"}, nil)
	res := run(t, w, "cat hello.txt && pwd")
	if want := "hi\n" + dir + "\n"; res.Output != want || res.ExitCode != 0 {
		t.Fatalf("got %q (exit %d), want %q", res.Output, res.ExitCode, want)
	}
	if res := run(t, w, "exit 7"); res.ExitCode != 7 {
		t.Errorf("exit status: got %d, want 7", res.ExitCode)
	}
	if err := w.FS().WriteFile("out/new.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out/new.txt")); err != nil || string(b) != "x" {
		t.Fatalf("the host sees %q, %v", b, err)
	}
	if b, err := w.FS().ReadFile("hello.txt", 0); err != nil || string(b) != "hi\n" {
		t.Fatalf("ReadFile: %q, %v", b, err)
	}
	info := w.Info()
	if info.Backend != f.Name || info.Seccomp != "enforced" || info.Workspace != dir {
		t.Errorf("Info: %+v", info)
	}
	if landlock.ABI() > 0 && !strings.HasPrefix(info.Landlock, "enforced") {
		t.Errorf("Landlock is available but not enforced: %q", info.Landlock)
	}
	// As the kernel sees a command: no capabilities, no_new_privs, a filter.
	res = run(t, w, "grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status")
	for _, want := range []string{"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("a command runs without %q:\n%s", want, res.Output)
		}
	}
	if res := run(t, w, "touch /tmp/ok ~/ok && echo fine"); res.Output != "fine\n" {
		t.Errorf("/tmp and HOME are not writable: %q", res.Output)
	}
	// Requests are multiplexed.
	errc := make(chan error, 8)
	for i := range 8 {
		go func() {
			res, err := w.Runner().Run(context.Background(), command.Spec{Shell: fmt.Sprintf("sleep 0.2; echo %d", i), Timeout: 20 * time.Second})
			if err == nil && res.Output != fmt.Sprintf("%d\n", i) {
				err = fmt.Errorf("request %d got %q", i, res.Output)
			}
			errc <- err
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	// A stream: stdin in, stdout out, exit status.
	p, err := w.Spawn(context.Background(), []string{"sh", "-c", "read x; echo got $x; exit 3"}, "", nil)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	io.WriteString(p.Stdin(), "ping\n")
	out, _ := io.ReadAll(p.Stdout())
	if code, err := p.Wait(); code != 3 || err != nil || string(out) != "got ping\n" {
		t.Errorf("stream: %q, exit %d, %v", out, code, err)
	}
}

// testRunner runs the runner table of internal/command against the
// backend: a command reads the same to the model here as on the host.
func testRunner(t *testing.T, f *Fixture) {
	commandtest.Run(t, func(t *testing.T) commandtest.Target {
		dir := f.workspace(t, nil)
		m := sandbox.NewManager(nil)
		t.Cleanup(func() { m.Close() })
		return commandtest.Target{Runner: m.Runner(f.options(dir, nil)), Dir: dir}
	})
}

// testEscapes tries, from one jail, what a hostile command would: the
// host's secrets, masked files (existing and not), writes outside, the
// system, privilege, the environment, the workspace's bounds.
func testEscapes(t *testing.T, f *Fixture) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh/id_ed25519"), []byte("PRIVATE KEY"), 0o600)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("outside\n"), 0o644)
	w, dir := f.start(t, nil, map[string]string{
		".env":          "SECRET=hunter2\n",
		"certs/srv.pem": "-----BEGIN PRIVATE KEY-----\n",
		"warden.toml":   "[sandbox]\nenabled = true\n",
		".git/config":   "[core]\n",
		"src/main.go":   "package main\n",
		"deploy/.keep":  "",
	}, func(o *sandbox.Options) {
		o.HostEnv = append(o.HostEnv, "HOME="+home, "WARDEN_TEST_CANARY_TOKEN=canary-4f1e9", "WARDEN_TEST_PLAIN=canary-plain")
		o.EnvAllowlist = []string{"WARDEN_TEST_CANARY_TOKEN"}
		o.Mask = []string{"deploy/credentials.json"}
	})

	t.Run("system secrets", func(t *testing.T) {
		for _, c := range []string{"cat /etc/shadow", "cat /etc/gshadow", "ls /etc/ssh", "ls /etc/sudoers.d || cat /etc/sudoers"} {
			if res := mustFail(t, w, c); strings.Contains(res.Output, "$6$") || strings.Contains(res.Output, "canary") {
				t.Errorf("%s read a hash: %q", c, res.Output)
			}
		}
	})
	t.Run("host files", func(t *testing.T) {
		for _, p := range append([]string{home + "/.ssh/id_ed25519", home, outside, "/root/.ssh"}, f.Secrets...) {
			mustFail(t, w, "ls -d "+p+" || cat "+p)
		}
		mustFail(t, w, "cat ~/.ssh/id_ed25519")
	})
	t.Run("masked files", func(t *testing.T) {
		for _, name := range []string{".env", "certs/srv.pem", "warden.toml"} {
			res := run(t, w, "cat "+name)
			if strings.Contains(res.Output, "hunter2") || strings.Contains(res.Output, "BEGIN") || strings.Contains(res.Output, "enabled") {
				t.Errorf("cat %s leaked %q", name, res.Output)
			}
			mustFail(t, w, "echo pwned > "+name)
			if _, err := w.FS().ReadFile(name, 0); !errors.Is(err, workspace.ErrMasked) {
				t.Errorf("FS.ReadFile(%s): got %v, want ErrMasked", name, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, ".env")); string(b) != "SECRET=hunter2\n" {
			t.Errorf("the host's .env changed: %q", b)
		}
		ents, err := w.FS().ReadDir(".")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".env") || e.Name() == "warden.toml" {
				t.Errorf("ReadDir shows the masked %s", e.Name())
			}
		}
	})
	t.Run("masked files created later", func(t *testing.T) {
		// Literal masks that did not exist when the jail started: a command
		// can neither create nor fill them.
		for _, c := range []string{"echo 'sandbox: {enabled: false}' > warden.yaml", "echo token=1 > deploy/credentials.json"} {
			mustFail(t, w, c)
		}
		for _, name := range []string{"warden.yaml", "deploy/credentials.json"} {
			if b, _ := os.ReadFile(filepath.Join(dir, name)); len(b) != 0 {
				t.Errorf("a command wrote the masked %s: %q", name, b)
			}
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
			"touch /pwned", "touch " + jail.JailExe, "echo x >> .git/config", "echo x > " + outside} {
			mustFail(t, w, c)
		}
		if b, _ := os.ReadFile(outside); string(b) != "outside\n" {
			t.Errorf("a file outside the workspace changed: %q", b)
		}
	})
	t.Run("privilege", func(t *testing.T) {
		for _, c := range []string{"unshare -r true", "unshare -U true", "mount -t tmpfs none /tmp", "chroot / true", "mknod /tmp/sda b 8 0"} {
			mustFail(t, w, c)
		}
	})
	t.Run("environment", func(t *testing.T) {
		res := run(t, w, "env")
		for _, bad := range []string{"canary-4f1e9", "canary-plain", home, "SSH_CONNECTION", "SSH_AUTH_SOCK", "DOCKER_HOST"} {
			if strings.Contains(res.Output, bad) {
				t.Errorf("the jail's environment leaks %q:\n%s", bad, res.Output)
			}
		}
		// Even a request that brings its own environment cannot carry it in.
		r2, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"env"}, Env: append(os.Environ(), "WARDEN_TEST_CANARY_TOKEN=canary-4f1e9"), Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r2.Output, "canary-4f1e9") {
			t.Errorf("an explicit environment leaks the canary:\n%s", r2.Output)
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

// testSockets: a unix socket of the host, by path or abstract name, is out
// of the jail's reach; with network = true (the host's network namespace)
// the abstract one is refused by Landlock's scope where the kernel has it.
func testSockets(t *testing.T, f *Fixture) {
	dir, err := os.MkdirTemp("", "wsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "s")
	abstract := "@" + marker("sock")
	for _, addr := range []string{path, abstract} {
		ln, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		os.Chmod(path, 0o777)
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
	}
	w, _ := f.start(t, nil, nil, nil)
	for _, addr := range []string{path, abstract} {
		if res := f.probe(t, w, "connect-unix", addr); strings.Contains(res.Output, "reached") {
			t.Errorf("a jailed command reached the host's unix socket %s", addr)
		}
	}
	sb := f.Sandbox()
	sb.Network = true
	w2, _ := f.start(t, sb, nil, nil)
	res := f.probe(t, w2, "connect-unix", abstract)
	switch {
	case landlock.ABI() >= 6 && strings.HasPrefix(w2.Info().Landlock, "enforced"):
		if strings.Contains(res.Output, "reached") {
			t.Errorf("network = true: a jailed command reached the host's abstract socket despite Landlock's scope")
		}
	default:
		t.Logf("network = true without Landlock's socket scope: the abstract socket answers %q (documented)", strings.TrimSpace(res.Output))
	}
}
