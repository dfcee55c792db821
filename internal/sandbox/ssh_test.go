package sandbox

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/landlock"
	"github.com/wardenhq/warden/internal/workspace"
)

// TestSSH runs the ssh backend against a real OpenSSH server on loopback:
// one sshd and one remote warden binary for all the subtests.
func TestSSH(t *testing.T) {
	d := startSSHD(t)
	// Not parallel: it changes the keepalive interval.
	t.Run("dead connection noticed by keepalives", func(t *testing.T) { testSSHKeepalive(t, d) })
	t.Run("works", func(t *testing.T) { t.Parallel(); testSSHWorks(t, d) })
	t.Run("escapes", func(t *testing.T) { t.Parallel(); testSSHEscapes(t, d) })
	t.Run("lockdown network", func(t *testing.T) { t.Parallel(); testSSHLockdownNetwork(t, d) })
	t.Run("host keys", func(t *testing.T) { t.Parallel(); testSSHHostKeys(t, d) })
	t.Run("client keys", func(t *testing.T) { t.Parallel(); testSSHClientKeys(t, d) })
	t.Run("ssh agent", func(t *testing.T) { t.Parallel(); testSSHAgent(t, d) })
	t.Run("remote refusals", func(t *testing.T) { t.Parallel(); testSSHRemoteRefusals(t, d) })
	t.Run("dropped connection", func(t *testing.T) { t.Parallel(); testSSHDropped(t, d) })
	t.Run("killing warden", func(t *testing.T) { t.Parallel(); testSSHKillWarden(t, d) })
}

// startSSHJail starts an ssh-backed worker on a fresh workspace.
func startSSHJail(t *testing.T, sb *config.Sandbox, files map[string]string, tweak func(*Options)) (*Worker, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, body, 0o644)
	}
	o := &Options{Workspace: dir, Sandbox: sb, StartTimeout: 30 * time.Second}
	if tweak != nil {
		tweak(o)
	}
	w, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start over ssh: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	real, _ := filepath.EvalSymlinks(dir)
	return w, real
}

func testSSHWorks(t *testing.T, d *testSSHD) {
	w, dir := startSSHJail(t, d.sandbox(), map[string]string{"hello.txt": "hi\n"}, nil)
	res := run(t, w, "cat hello.txt && pwd && cat /proc/self/status | grep -c '^Seccomp:.2'")
	if want := "hi\n" + dir + "\n1\n"; res.Output != want || res.ExitCode != 0 {
		t.Fatalf("got %q (exit %d), want %q", res.Output, res.ExitCode, want)
	}
	if res := run(t, w, "exit 7"); res.ExitCode != 7 {
		t.Errorf("exit status: got %d, want 7", res.ExitCode)
	}
	if err := w.FS().WriteFile("out/new.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out/new.txt")); err != nil || string(b) != "x" {
		t.Fatalf("remote side sees %q, %v", b, err)
	}
	if b, err := w.FS().ReadFile("hello.txt", 0); err != nil || string(b) != "hi\n" {
		t.Fatalf("ReadFile: %q, %v", b, err)
	}
	info := w.Info()
	if info.Backend != BackendSSH || info.Seccomp != "enforced" {
		t.Errorf("Info: %+v", info)
	}
	wantDetail := fmt.Sprintf("remote root@127.0.0.1:%d, worker under bubblewrap there (seccomp enforced, landlock ", d.port)
	if !strings.HasPrefix(info.Detail, wantDetail) {
		t.Errorf("Detail = %q, want it to start with %q", info.Detail, wantDetail)
	}
	if landlock.ABI() > 0 && !strings.Contains(info.Detail, "landlock enforced") {
		t.Errorf("Landlock available but not enforced remotely: %q", info.Detail)
	}
	// Requests are multiplexed through the relay.
	errc := make(chan error, 8)
	for i := range 8 {
		go func() {
			res, err := w.Runner().Run(context.Background(), command.Spec{Shell: fmt.Sprintf("sleep 0.2; echo %d", i), Timeout: 10 * time.Second})
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
	// Streams (spawn, stdin, stdout events) pass through the remote side
	// untouched.
	p, err := w.Spawn(context.Background(), []string{"sh", "-c", "read x; echo got $x"}, "", nil)
	if err != nil {
		t.Fatalf("Spawn over ssh: %v", err)
	}
	io.WriteString(p.Stdin(), "ping\n")
	out, _ := io.ReadAll(p.Stdout())
	if code, err := p.Wait(); code != 0 || err != nil || string(out) != "got ping\n" {
		t.Errorf("stream over ssh: %q, exit %d, %v", out, code, err)
	}
	// The doctor line for the backend.
	if got := probeSSH(context.Background()); !strings.HasPrefix(got, "ok: golang.org/x/crypto/ssh") {
		t.Errorf("probe: %q", got)
	}
}

func testSSHEscapes(t *testing.T, d *testSSHD) {
	w, dir := startSSHJail(t, d.sandbox(), map[string]string{
		".env":          "SECRET=hunter2\n",
		"certs/srv.pem": "-----BEGIN PRIVATE KEY-----\n",
		"warden.toml":   "[sandbox]\nenabled = true\n",
	}, func(o *Options) {
		o.EnvAllowlist = []string{"WARDEN_TEST_CANARY_TOKEN"}
		o.Mask = []string{"deploy/credentials.json"}
		o.HostEnv = append(os.Environ(), "WARDEN_TEST_CANARY_TOKEN=canary-4f1e9", "WARDEN_TEST_PLAIN=canary-plain")
	})

	t.Run("remote system secrets", func(t *testing.T) {
		mustFail(t, w, "cat /etc/shadow")
		mustFail(t, w, "cat /etc/gshadow")
		mustFail(t, w, "ls /etc/ssh")
		mustFail(t, w, "ls /etc/sudoers.d || cat /etc/sudoers")
		// The remote user's keys and sshd's own host key.
		mustFail(t, w, "ls /root/.ssh")
		mustFail(t, w, "cat ~/.ssh/authorized_keys")
		mustFail(t, w, "cat "+d.dir+"/host_ed25519")
		mustFail(t, w, "cat "+d.clientKey)
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
			t.Errorf(".env changed: %q", b)
		}
	})
	t.Run("masked file created later", func(t *testing.T) {
		if err := w.FS().WriteFile(".env.local", []byte("X=1"), 0o600); !errors.Is(err, workspace.ErrMasked) {
			t.Errorf("WriteFile(.env.local): got %v, want ErrMasked", err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".env.local")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf(".env.local appeared: %v", err)
		}
		// A literal mask that did not exist when the jail started cannot be
		// created by a command either.
		mustFail(t, w, "echo token=1 > deploy/credentials.json")
		if b, _ := os.ReadFile(filepath.Join(dir, "deploy/credentials.json")); len(b) != 0 {
			t.Errorf("a command wrote the masked deploy/credentials.json: %q", b)
		}
	})
	t.Run("system is read-only", func(t *testing.T) {
		mustFail(t, w, "touch /usr/pwned")
		mustFail(t, w, "touch /usr/bin/pwned")
		mustFail(t, w, "echo x >> /etc/passwd")
		mustFail(t, w, "touch /etc/pwned")
		mustFail(t, w, "touch "+JailExe)
		mustFail(t, w, "touch "+d.warden)
	})
	t.Run("privilege", func(t *testing.T) {
		mustFail(t, w, "unshare -r true")
		mustFail(t, w, "unshare -U true")
		mustFail(t, w, "mount -t tmpfs none /tmp")
		mustFail(t, w, "chroot / true")
		res := run(t, w, `perl -e 'require "syscall.ph"; my $r = syscall(101, 0, 0, 0, 0); print "ptrace=$r errno=", $!+0, "\n"'`)
		if !strings.Contains(res.Output, "ptrace=-1 errno=1") {
			t.Errorf("PTRACE_TRACEME was not denied with EPERM: %q", res.Output)
		}
	})
	t.Run("environment", func(t *testing.T) {
		res := run(t, w, "env")
		// Neither the host's secrets nor the ssh session's variables.
		for _, bad := range []string{"canary-4f1e9", "canary-plain", "SSH_CONNECTION", "SSH_CLIENT", "SSH_AUTH_SOCK", "MAIL="} {
			if strings.Contains(res.Output, bad) {
				t.Errorf("jail environment leaks %q:\n%s", bad, res.Output)
			}
		}
	})
	t.Run("confinement", func(t *testing.T) {
		if _, err := w.FS().ReadFile("../../etc/passwd", 0); !errors.Is(err, workspace.ErrEscapes) {
			t.Errorf("got %v, want ErrEscapes", err)
		}
	})
}

func testSSHLockdownNetwork(t *testing.T, d *testSSHD) {
	// A listener on the remote host's loopback (the same machine here).
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
	probe := fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3'", ln.Addr().(*net.TCPAddr).Port)
	sb := d.sandbox()
	sb.Lockdown, sb.Network = true, true
	w, _ := startSSHJail(t, sb, nil, nil)
	if !w.Info().Lockdown {
		t.Fatalf("not in lockdown: %+v", w.Info())
	}
	if res := mustFail(t, w, probe); strings.Contains(res.Output, "reached") {
		t.Error("connected to the remote host's loopback under lockdown")
	}
	mustFail(t, w, "touch new.txt")
	sb = d.sandbox()
	sb.Network = true
	w2, _ := startSSHJail(t, sb, nil, nil)
	if res := run(t, w2, probe); !strings.Contains(res.Output, "reached") {
		t.Errorf("network = true: connect failed (%q), so the lockdown row proves nothing", res.Output)
	}
}

func testSSHHostKeys(t *testing.T, d *testSSHD) {
	fp := ssh.FingerprintSHA256(d.hostKey)
	fps := d.hostFingerprints(t)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	otherKey, _ := ssh.NewPublicKey(other)
	otherEC, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherECKey, _ := ssh.NewPublicKey(&otherEC.PublicKey)
	for _, tc := range []struct {
		name       string
		knownHosts string // contents; "-" for a missing file
		changed    bool
		want       []string
	}{
		{"unknown host", "", false, []string{fmt.Sprintf("[127.0.0.1]:%d", d.port), "not in", "never accepts"}},
		{"known for another port only", knownhostsLine(22, d.hostKey), false, []string{fmt.Sprintf("[127.0.0.1]:%d", d.port)}},
		{"changed host key", knownhostsLine(d.port, otherKey), true, []string{"CHANGED", fp, "man-in-the-middle"}},
		// The server holds an ECDSA key too (and x/crypto prefers ECDSA):
		// a different ECDSA key on file is a change, not a reason to pick
		// the server's other key.
		{"changed key of another type", knownhostsLine(d.port, otherECKey), true, []string{"CHANGED", "ecdsa-sha2-nistp256", "man-in-the-middle"}},
		{"missing known_hosts", "-", false, []string{"known_hosts", "never accepts an unknown host key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kh := filepath.Join(t.TempDir(), "known_hosts")
			if tc.knownHosts != "-" {
				writeFile(t, kh, tc.knownHosts, 0o600)
			}
			sb := d.sandbox()
			sb.KnownHosts = kh
			_, err := Start(context.Background(), &Options{Workspace: t.TempDir(), Sandbox: sb})
			if err == nil {
				t.Fatal("Start succeeded")
			}
			for _, s := range append(tc.want, kh) {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
			if tc.knownHosts == "-" {
				return
			}
			var he *HostKeyError
			if !errors.As(err, &he) {
				t.Fatalf("error is %T, want *HostKeyError", err)
			}
			if he.Changed != tc.changed || fps[he.KeyType] == "" || he.Fingerprint != fps[he.KeyType] {
				t.Errorf("HostKeyError %+v; the server's keys are %v", he, fps)
			}
			if !strings.Contains(err.Error(), he.Fingerprint) {
				t.Errorf("error %q does not name the offered key's fingerprint", err)
			}
			if tc.changed && len(he.Known) != 1 {
				t.Errorf("Known = %q, want the line of the other key", he.Known)
			}
			if !strings.Contains(he.Hint(), kh) {
				t.Errorf("hint %q does not name the file", he.Hint())
			}
		})
	}
}

func testSSHClientKeys(t *testing.T, d *testSSHD) {
	loose := filepath.Join(t.TempDir(), "id_loose")
	b, err := os.ReadFile(d.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, loose, string(b), 0o644)
	unauth := filepath.Join(t.TempDir(), "id_other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", unauth).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	locked := filepath.Join(t.TempDir(), "id_locked")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "passphrase", "-f", locked).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	for _, tc := range []struct {
		name string
		sb   func(*config.Sandbox)
		env  []string
		want []string
	}{
		{"key readable by others", func(s *config.Sandbox) { s.IdentityFile = loose }, nil, []string{loose, "0644", "refuses"}},
		{"key not authorized", func(s *config.Sandbox) { s.IdentityFile = unauth }, nil, []string{"failed to log in", "root@127.0.0.1"}},
		{"key with a passphrase", func(s *config.Sandbox) { s.IdentityFile = locked }, nil, []string{"passphrase"}},
		{"no key and no agent", func(s *config.Sandbox) { s.IdentityFile = "" }, []string{"HOME=/nonexistent"}, []string{"SSH_AUTH_SOCK"}},
		{"no remote_host", func(s *config.Sandbox) { s.RemoteHost = "" }, nil, []string{"remote_host"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := d.sandbox()
			tc.sb(sb)
			_, err := Start(context.Background(), &Options{Workspace: t.TempDir(), Sandbox: sb, HostEnv: tc.env})
			if err == nil {
				t.Fatal("Start succeeded")
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
		})
	}
}

// testSSHAgent logs in with a key held by a real ssh-agent (no
// identity_file).
func testSSHAgent(t *testing.T, d *testSSHD) {
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent did not create its socket")
		}
	}
	add := exec.Command("ssh-add", d.clientKey)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	sb := d.sandbox()
	sb.IdentityFile = ""
	w, _ := startSSHJail(t, sb, map[string]string{"a.txt": "agent\n"}, func(o *Options) {
		o.HostEnv = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	})
	if res := run(t, w, "cat a.txt; env | grep -c SSH_AUTH_SOCK"); res.Output != "agent\n0\n" {
		t.Errorf("over the agent's key: %q", res.Output)
	}
	// Without the key in the agent, the login fails.
	del := exec.Command("ssh-add", "-D")
	del.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := del.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add -D: %v %s", err, out)
	}
	_, err := Start(context.Background(), &Options{Workspace: t.TempDir(), Sandbox: sb, HostEnv: []string{"SSH_AUTH_SOCK=" + sock}})
	if err == nil || !strings.Contains(err.Error(), "failed to log in") {
		t.Errorf("empty agent: got %v, want a login failure", err)
	}
}

func testSSHRemoteRefusals(t *testing.T, d *testSSHD) {
	// A remote host without bubblewrap: the remote warden refuses, and so
	// does the backend; nothing runs unjailed.
	noBwrap := filepath.Join(t.TempDir(), "warden-no-bwrap")
	writeFile(t, noBwrap, "#!/bin/sh\nPATH=/nonexistent exec "+d.warden+" \"$@\"\n", 0o755)
	sb := d.sandbox()
	sb.RemoteWarden = noBwrap
	_, err := Start(context.Background(), &Options{Workspace: t.TempDir(), Sandbox: sb, StartTimeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "bubblewrap") || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("remote without bwrap: got %v, want a refusal naming bubblewrap and the fix", err)
	}
	sb = d.sandbox()
	sb.RemoteWarden = "/nonexistent/warden"
	_, err = Start(context.Background(), &Options{Workspace: t.TempDir(), Sandbox: sb, StartTimeout: 30 * time.Second})
	var he *HintError
	if err == nil || !errors.As(err, &he) || !strings.Contains(err.Error(), "was not found") {
		t.Errorf("missing remote warden: got %v", err)
	}
	// A remote workspace that is not there.
	sb = d.sandbox()
	sb.RemotePath = "/nonexistent/workspace"
	_, err = Start(context.Background(), &Options{Workspace: t.TempDir(), Sandbox: sb, StartTimeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/workspace") {
		t.Errorf("missing remote workspace: got %v", err)
	}
}

// remoteProcs lists the processes whose command line contains marker.
func remoteProcs(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			if st, _ := os.ReadFile("/proc/" + e.Name() + "/stat"); bytes.Contains(st, []byte(") Z ")) {
				continue
			}
			out = append(out, e.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func waitGone(t *testing.T, marker string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := remoteProcs(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left on the remote side after %v: %q", within, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testSSHDropped(t *testing.T, d *testSSHD) {
	proxy := newTCPProxy(t, fmt.Sprintf("127.0.0.1:%d", d.port))
	sb := d.sandbox()
	sb.RemotePort = proxy.port()
	sb.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	d.trustPorts(t, sb.KnownHosts, proxy.port())
	dir := t.TempDir()
	m := NewManager(nil)
	t.Cleanup(func() { m.Close() })
	opts := &Options{Workspace: dir, Sandbox: sb, StartTimeout: 30 * time.Second}
	r := m.Runner(opts)
	if res, err := r.Run(context.Background(), command.Spec{Shell: "echo first", Timeout: 10 * time.Second}); err != nil || res.Output != "first\n" {
		t.Fatalf("first call: %q %v", res.Output, err)
	}
	marker := fmt.Sprintf("warden-drop-%d", time.Now().UnixNano())
	errc := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), command.Spec{
			Argv:    []string{"bash", "-c", "echo line >> appended.txt; exec -a " + marker + " sleep 30"},
			Timeout: 60 * time.Second,
		})
		errc <- err
	}()
	appended := filepath.Join(dir, "appended.txt")
	for deadline := time.Now().Add(20 * time.Second); len(remoteProcs(marker)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t0 := time.Now()
	proxy.cut()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrWorkerGone) || !strings.Contains(err.Error(), "connection to root@127.0.0.1") {
			t.Fatalf("in-flight request after the drop: got %v, want ErrWorkerGone saying the connection was lost", err)
		}
		t.Logf("in-flight request failed %v after the drop: %v", time.Since(t0), err)
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight request still waiting 10 s after the drop")
	}
	// The remote jail went with the session.
	waitGone(t, marker, 10*time.Second)
	// The next call reconnects.
	res, err := r.Run(context.Background(), command.Spec{Shell: "cat appended.txt | wc -l", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("call after the drop: %v", err)
	}
	if strings.TrimSpace(res.Output) != "1" {
		t.Errorf("appended.txt has %q lines after the drop, want exactly 1 (never replayed)", res.Output)
	}
	if b, _ := os.ReadFile(appended); string(b) != "line\n" {
		t.Errorf("appended.txt = %q", b)
	}
	if n := len(m.List()); n != 1 {
		t.Errorf("%d workers after reconnecting", n)
	}
}

func testSSHKeepalive(t *testing.T, d *testSSHD) {
	old := sshKeepaliveInterval.Swap(int64(200 * time.Millisecond))
	defer sshKeepaliveInterval.Store(old)
	proxy := newTCPProxy(t, fmt.Sprintf("127.0.0.1:%d", d.port))
	sb := d.sandbox()
	sb.RemotePort = proxy.port()
	sb.KnownHosts = filepath.Join(t.TempDir(), "known_hosts")
	d.trustPorts(t, sb.KnownHosts, proxy.port())
	w, _ := startSSHJail(t, sb, nil, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := w.Runner().Run(context.Background(), command.Spec{Shell: "sleep 20", Timeout: 30 * time.Second})
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	proxy.freeze()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrWorkerGone) {
			t.Fatalf("got %v, want ErrWorkerGone", err)
		}
		t.Logf("dead connection noticed after %v", time.Since(t0))
	case <-time.After(10 * time.Second):
		t.Fatal("a dead connection went unnoticed for 10 s")
	}
	if w.Alive() {
		t.Error("worker still alive")
	}
	if !strings.Contains(w.deadMsg(), "keepalive") {
		t.Errorf("stderr tail %q does not say why", w.deadMsg())
	}
}

// testSSHKillWarden kills a `warden exec` holding an ssh jail: nothing of
// the jail survives on the remote side.
func testSSHKillWarden(t *testing.T, d *testSSHD) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "warden.toml")
	writeFile(t, cfg, fmt.Sprintf(`[sandbox]
enabled = true
backend = "ssh"
remote_host = "127.0.0.1"
remote_port = %d
remote_user = "root"
identity_file = %q
known_hosts = %q
remote_warden = %q
`, d.port, d.clientKey, d.knownHosts, d.warden), 0o600)
	// warden exec over ssh: the command's output and exit status.
	out0, err := exec.Command(d.warden, "exec", "--workspace", dir, "--config", cfg, "--", "bash", "-c", "echo remote-$((6*7)); exit 3").Output()
	var ee *exec.ExitError
	if string(out0) != "remote-42\n" || !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("warden exec over ssh: %q, %v", out0, err)
	}
	marker := fmt.Sprintf("warden-kill-%d", time.Now().UnixNano())
	cmd := exec.Command(d.warden, "exec", "--workspace", dir, "--config", cfg, "--",
		"bash", "-c", "(exec -a "+marker+" sleep 1000) & exec -a "+marker+" sleep 1000")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); len(remoteProcs(marker)) < 2; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the jailed commands never started: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The remote relay and bwrap carry the workspace path.
	if len(remoteProcs(dir)) < 2 {
		t.Fatalf("no remote jail found: %q", remoteProcs(dir))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitGone(t, marker, 10*time.Second)
	waitGone(t, dir, 10*time.Second)
}

func TestResolveSSH(t *testing.T) {
	t.Parallel()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sb   config.Sandbox
		env  []string
		want sshTarget
	}{
		{"defaults", config.Sandbox{RemoteHost: "build.example"}, []string{"HOME=/home/me", "SSH_AUTH_SOCK=/run/agent"},
			sshTarget{Host: "build.example", Port: 22, User: u.Username, KnownHosts: "/home/me/.ssh/known_hosts",
				RemotePath: "/work/ws", Warden: "warden", authSock: "/run/agent"}},
		{"everything set, ~ expanded", config.Sandbox{RemoteHost: "10.0.0.7", RemotePort: 2222, RemoteUser: "ci",
			IdentityFile: "~/.ssh/id_ed25519", KnownHosts: "~/kh", RemotePath: "/srv/ws", RemoteWarden: "/opt/warden/bin/warden"},
			[]string{"HOME=/home/me"},
			sshTarget{Host: "10.0.0.7", Port: 2222, User: "ci", Identity: "/home/me/.ssh/id_ed25519", KnownHosts: "/home/me/kh",
				RemotePath: "/srv/ws", Warden: "/opt/warden/bin/warden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveSSH(&tc.sb, "/work/ws", tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(sshTarget{})); diff != "" {
				t.Errorf("resolveSSH (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := resolveSSH(&config.Sandbox{}, "/work/ws", nil); err == nil || !strings.Contains(err.Error(), "remote_host") {
		t.Errorf("no remote_host: %v", err)
	}
	he := &HostKeyError{Host: "[::1]:2222", KnownHosts: "/kh"}
	if h := he.Hint(); !strings.Contains(h, "ssh-keyscan -p 2222 ::1 >> /kh") {
		t.Errorf("hint %q", h)
	}
	he = &HostKeyError{Host: "example.com", KnownHosts: "/kh", Changed: true}
	if h := he.Hint(); !strings.Contains(h, "ssh-keygen -R 'example.com' -f /kh") {
		t.Errorf("hint %q", h)
	}
}
