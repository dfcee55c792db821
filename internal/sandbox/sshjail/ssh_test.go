package sshjail_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
	"github.com/wardenhq/warden/internal/sandbox/sshjail"
)

// TestSSH runs the backend suite, then what only the ssh backend has,
// against a real OpenSSH server on loopback: one sshd and one remote warden
// binary for all the subtests.
func TestSSH(t *testing.T) {
	d := startSSHD(t)
	// Not parallel: it changes the keepalive interval.
	t.Run("dead connection noticed by keepalives", func(t *testing.T) { testSSHKeepalive(t, d) })
	t.Run("conformance", func(t *testing.T) { sandboxtest.Run(t, d.fixture(t)) })
	t.Run("host keys", func(t *testing.T) { t.Parallel(); testSSHHostKeys(t, d) })
	t.Run("client keys", func(t *testing.T) { t.Parallel(); testSSHClientKeys(t, d) })
	t.Run("ssh agent", func(t *testing.T) { t.Parallel(); testSSHAgent(t, d) })
	t.Run("remote refusals", func(t *testing.T) { t.Parallel(); testSSHRemoteRefusals(t, d) })
	t.Run("dropped connection", func(t *testing.T) { t.Parallel(); testSSHDropped(t, d) })
	t.Run("killing warden", func(t *testing.T) { t.Parallel(); testSSHKillWarden(t, d) })
}

// startSSHJail starts an ssh-backed worker on a fresh workspace.
func startSSHJail(t *testing.T, sb *config.Sandbox, files map[string]string, tweak func(*sandbox.Options)) (*sandbox.Worker, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, body, 0o644)
	}
	o := &sandbox.Options{Workspace: dir, Sandbox: sb, StartTimeout: 30 * time.Second}
	if tweak != nil {
		tweak(o)
	}
	w, err := sandbox.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start over ssh: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	real, _ := filepath.EvalSymlinks(dir)
	return w, real
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
			_, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: t.TempDir(), Sandbox: sb})
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
			var he *sshjail.HostKeyError
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
			_, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: t.TempDir(), Sandbox: sb, HostEnv: tc.env})
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
	w, _ := startSSHJail(t, sb, map[string]string{"a.txt": "agent\n"}, func(o *sandbox.Options) {
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
	_, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: t.TempDir(), Sandbox: sb, HostEnv: []string{"SSH_AUTH_SOCK=" + sock}})
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
	_, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: t.TempDir(), Sandbox: sb, StartTimeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "bubblewrap") || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("remote without bwrap: got %v, want a refusal naming bubblewrap and the fix", err)
	}
	sb = d.sandbox()
	sb.RemoteWarden = "/nonexistent/warden"
	_, err = sandbox.Start(context.Background(), &sandbox.Options{Workspace: t.TempDir(), Sandbox: sb, StartTimeout: 30 * time.Second})
	var he *sandbox.HintError
	if err == nil || !errors.As(err, &he) || !strings.Contains(err.Error(), "was not found") {
		t.Errorf("missing remote warden: got %v", err)
	}
	// A remote workspace that is not there.
	sb = d.sandbox()
	sb.RemotePath = "/nonexistent/workspace"
	_, err = sandbox.Start(context.Background(), &sandbox.Options{Workspace: t.TempDir(), Sandbox: sb, StartTimeout: 30 * time.Second})
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
	m := sandbox.NewManager(nil)
	t.Cleanup(func() { m.Close() })
	opts := &sandbox.Options{Workspace: dir, Sandbox: sb, StartTimeout: 30 * time.Second}
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
		if !errors.Is(err, sandbox.ErrWorkerGone) || !strings.Contains(err.Error(), "connection to root@127.0.0.1") {
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
	defer sshjail.SetKeepaliveInterval(200 * time.Millisecond)()
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
		if !errors.Is(err, sandbox.ErrWorkerGone) || !strings.Contains(err.Error(), "stopped answering keepalives") {
			t.Fatalf("got %v, want ErrWorkerGone saying the keepalives went unanswered", err)
		}
		t.Logf("dead connection noticed after %v", time.Since(t0))
	case <-time.After(10 * time.Second):
		t.Fatal("a dead connection went unnoticed for 10 s")
	}
	if w.Alive() {
		t.Error("worker still alive")
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

func run(t *testing.T, w *sandbox.Worker, shell string) command.Result {
	t.Helper()
	res, err := w.Runner().Run(context.Background(), command.Spec{Shell: shell, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("run %q: %v", shell, err)
	}
	return res
}

// fixture is the suite's view of this sshd: the remote host is this
// machine, so the suite sees the remote jail's processes and files. This
// test binary (the suite's probe) is bound into the remote jail read-only.
func (d *testSSHD) fixture(t *testing.T) *sandboxtest.Fixture {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &sandboxtest.Fixture{
		Name: jail.BackendSSH,
		Sandbox: func() *config.Sandbox {
			sb := d.sandbox()
			sb.ROPaths = []string{filepath.Dir(exe)}
			return sb
		},
		Probe: exe,
		// sshd's keys, the client's key and the remote user's.
		Secrets:      []string{d.dir + "/host_ed25519", d.clientKey, "/root/.ssh/authorized_keys"},
		StartTimeout: 30 * time.Second,
	}
}
