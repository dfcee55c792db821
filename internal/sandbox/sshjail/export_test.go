package sshjail

import (
	"context"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wardenhq/warden/internal/config"
)

// SetKeepaliveInterval makes keepalives go every d until the returned
// function restores the interval.
func SetKeepaliveInterval(d time.Duration) (restore func()) {
	old := sshKeepaliveInterval.Swap(int64(d))
	return func() { sshKeepaliveInterval.Store(old) }
}

// Dial opens an ssh connection as the backend would for sb.
func Dial(sb *config.Sandbox, dir string) (*ssh.Client, error) {
	t, err := resolveSSH(sb, dir, nil)
	if err != nil {
		return nil, err
	}
	return t.dial(context.Background(), 10*time.Second)
}
