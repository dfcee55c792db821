package bwrap

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// jailEnded tells a running process from one that exited, reaped or not
// (a zombie): only then may a failed mask guard be ignored.
func TestJailEnded(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if jailEnded(pid) {
		t.Fatal("a running process is reported ended")
	}
	cmd.Process.Kill()
	// Not reaped yet: a zombie.
	deadline := time.Now().Add(5 * time.Second)
	for !jailEnded(pid) {
		if time.Now().After(deadline) {
			t.Fatal("a killed, unreaped process is not reported ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err != nil {
		t.Fatal(err)
	}
	if !jailEnded(pid) {
		t.Fatal("a reaped process is not reported ended")
	}
}
