package sshjail_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/sshjail"
)

// BenchmarkSSHExecTrue compares, per call of `true` on a remote host (an
// sshd of the benchmark's own on loopback): the persistent ssh worker
// (jailed there), a new session on one open connection, a new
// x/crypto/ssh connection per call, and the OpenSSH client per call. The
// last three run `true` unjailed. worker-ping is the protocol's round trip
// through the connection alone. bench/ssh.sh prints the ratios.
func BenchmarkSSHExecTrue(b *testing.B) {
	d := startSSHD(b)
	w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: b.TempDir(), Sandbox: d.sandbox(), StartTimeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.Run("worker", func(b *testing.B) {
		r := w.Runner()
		spec := command.Spec{Argv: []string{"/bin/true"}, Timeout: 10 * time.Second}
		for b.Loop() {
			if res, err := r.Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	// The protocol's round trip alone (no process started).
	b.Run("worker-ping", func(b *testing.B) {
		for b.Loop() {
			if _, err := w.Ping(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("session-per-call", func(b *testing.B) {
		c, err := sshjail.Dial(d.sandbox(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for b.Loop() {
			s, err := c.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Run("/bin/true"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("xcrypto-conn-per-call", func(b *testing.B) {
		for b.Loop() {
			c, err := sshjail.Dial(d.sandbox(), b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			s, err := c.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Run("/bin/true"); err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	b.Run("openssh-per-call", func(b *testing.B) {
		args := []string{"-p", fmt.Sprint(d.port), "-i", d.clientKey, "-o", "UserKnownHostsFile=" + d.knownHosts,
			"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-F", "/dev/null",
			"root@127.0.0.1", "/bin/true"}
		for b.Loop() {
			if out, err := exec.Command("ssh", args...).CombinedOutput(); err != nil {
				b.Fatalf("ssh: %v\n%s", err, out)
			}
		}
	})
	b.Run("worker-cold-start", func(b *testing.B) {
		dir := b.TempDir()
		for b.Loop() {
			w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: dir, Sandbox: d.sandbox(), StartTimeout: 30 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			w.Close()
			b.StartTimer()
		}
	})
}
