package sshjail

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// The ssh backend: one persistent SSH connection per workspace, over which
// `warden worker --jail` runs on the remote host. That process starts the
// local (bubblewrap) backend there with the session's stdin and stdout as
// the jail's own, so the worker protocol passes straight through (see
// ServeJail). The workspace must already be present on the remote host, at
// remote_path.

// sshKeepaliveInterval is how often an idle connection is checked, and
// sshKeepaliveMissed how many intervals without an answer mean it is dead.
var (
	sshKeepaliveInterval atomic.Int64
	sshKeepaliveMissed   = 3
)

func init() { sshKeepaliveInterval.Store(int64(15 * time.Second)) }

// HostKeyError refuses a host key that known_hosts does not vouch for:
// an unknown host (never accepted on first use), a changed key, or a
// revoked one.
type HostKeyError struct {
	// Host is the address as looked up in known_hosts ("[host]:port" for a
	// port other than 22).
	Host string
	// KeyType and Fingerprint describe the key the server offered.
	KeyType, Fingerprint string
	// KnownHosts is the file consulted.
	KnownHosts string
	// Changed is set when the file has another key for the host; Known
	// lists those entries ("file:line").
	Changed bool
	Known   []string
	Revoked bool
}

func (e *HostKeyError) Error() string {
	switch {
	case e.Revoked:
		return fmt.Sprintf("ssh host key of %s (%s %s) is marked @revoked in %s; refusing to connect", e.Host, e.KeyType, e.Fingerprint, e.KnownHosts)
	case e.Changed:
		return fmt.Sprintf("ssh host key of %s has CHANGED: the server offered %s %s, but %s has another key for it (%s); this may be a man-in-the-middle attack, refusing to connect",
			e.Host, e.KeyType, e.Fingerprint, e.KnownHosts, strings.Join(e.Known, ", "))
	default:
		return fmt.Sprintf("ssh host key of %s (%s %s) is not in %s; warden never accepts an unknown host key, refusing to connect",
			e.Host, e.KeyType, e.Fingerprint, e.KnownHosts)
	}
}

// Hint tells the user how to proceed.
func (e *HostKeyError) Hint() string {
	host, port := e.Host, "22"
	if h, p, err := net.SplitHostPort(e.Host); err == nil {
		host, port = h, p
	}
	if e.Changed || e.Revoked {
		return fmt.Sprintf("if the host was reinstalled, check the new fingerprint with its administrator, then remove the old key: ssh-keygen -R '%s' -f %s", e.Host, e.KnownHosts)
	}
	return fmt.Sprintf("check the fingerprint with the host's administrator, then add the key: ssh-keyscan -p %s %s >> %s (or connect once with ssh and compare)", port, host, e.KnownHosts)
}

// sshTarget is the resolved ssh configuration of a workspace.
type sshTarget struct {
	Host, User         string
	Port               int
	Identity           string // "" for the agent
	KnownHosts         string
	RemotePath, Warden string
	authSock           string
}

func (t *sshTarget) addr() string { return net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) }

func (t *sshTarget) String() string { return fmt.Sprintf("%s@%s", t.User, t.addr()) }

// resolveSSH fills the defaults of the ssh keys of [sandbox].
func resolveSSH(sb *config.Sandbox, workspaceDir string, hostEnv []string) (*sshTarget, error) {
	if sb.RemoteHost == "" {
		return nil, &jail.HintError{
			Err:     fmt.Errorf("backend ssh needs remote_host in [sandbox]: %w", jail.ErrBackendUnavailable),
			HintMsg: `set remote_host (and remote_user, identity_file or an ssh agent, known_hosts) in [sandbox], or backend = "local"`,
		}
	}
	t := &sshTarget{
		Host: sb.RemoteHost, Port: sb.RemotePort, User: sb.RemoteUser,
		Identity: sb.IdentityFile, KnownHosts: sb.KnownHosts,
		RemotePath: sb.RemotePath, Warden: sb.RemoteWarden,
	}
	if t.Port == 0 {
		t.Port = 22
	}
	if t.User == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("backend ssh: remote_user is not set and the local user is unknown: %w", err)
		}
		t.User = u.Username
	}
	home := envValue(hostEnv, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	expand := func(p string) string {
		if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
			return filepath.Join(home, rest)
		}
		return p
	}
	if t.KnownHosts == "" {
		if home == "" {
			return nil, errors.New("backend ssh: known_hosts is not set and there is no HOME for ~/.ssh/known_hosts")
		}
		t.KnownHosts = filepath.Join(home, ".ssh", "known_hosts")
	}
	t.KnownHosts, t.Identity = expand(t.KnownHosts), expand(t.Identity)
	if t.RemotePath == "" {
		t.RemotePath = workspaceDir
	}
	if t.Warden == "" {
		t.Warden = "warden"
	}
	t.authSock = envValue(hostEnv, "SSH_AUTH_SOCK")
	return t, nil
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// authMethods returns the key of identity_file, refusing one that group or
// others can read (as ssh does), or the agent's keys.
func (t *sshTarget) authMethods() ([]ssh.AuthMethod, func(), error) {
	if t.Identity != "" {
		st, err := os.Stat(t.Identity)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to read identity_file: %w", err)
		}
		if perm := st.Mode().Perm(); perm&0o077 != 0 {
			return nil, nil, &jail.HintError{
				Err:     fmt.Errorf("identity_file %s is accessible by group or others (mode %#o); like ssh, warden refuses such a private key", t.Identity, perm),
				HintMsg: "chmod 600 " + t.Identity,
			}
		}
		pem, err := os.ReadFile(t.Identity)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to read identity_file: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(pem)
		if err != nil {
			var pp *ssh.PassphraseMissingError
			if errors.As(err, &pp) {
				return nil, nil, &jail.HintError{
					Err:     fmt.Errorf("identity_file %s is protected by a passphrase, which warden does not ask for", t.Identity),
					HintMsg: "load the key into ssh-agent (ssh-add " + t.Identity + ") and leave identity_file empty",
				}
			}
			return nil, nil, fmt.Errorf("failed to read the private key in identity_file %s: %w", t.Identity, err)
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, func() {}, nil
	}
	if t.authSock == "" {
		return nil, nil, &jail.HintError{
			Err:     errors.New("backend ssh: identity_file is not set and there is no ssh agent (SSH_AUTH_SOCK is empty)"),
			HintMsg: "set identity_file in [sandbox] to a private key readable only by you, or start ssh-agent and ssh-add a key",
		}
	}
	conn, err := net.Dial("unix", t.authSock)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to reach the ssh agent at SSH_AUTH_SOCK=%s: %w", t.authSock, err)
	}
	ag := agent.NewClient(conn)
	return []ssh.AuthMethod{ssh.PublicKeysCallback(ag.Signers)}, func() { conn.Close() }, nil
}

// hostKeyCheck builds the strict known_hosts check, and the host key
// algorithms to negotiate: those of the keys on file for the host, so that
// a server holding several keys shows the one known_hosts vouches for.
func (t *sshTarget) hostKeyCheck() (ssh.HostKeyCallback, []string, error) {
	cb, err := knownhosts.New(t.KnownHosts)
	if err != nil {
		return nil, nil, &jail.HintError{
			Err:     fmt.Errorf("failed to read known_hosts %s (warden never accepts an unknown host key): %w", t.KnownHosts, err),
			HintMsg: fmt.Sprintf("create it with the host's verified key: ssh-keyscan -p %d %s >> %s", t.Port, t.Host, t.KnownHosts),
		}
	}
	// Ask the database about a key nobody holds: the mismatch lists every
	// key on file for the host.
	var algos []string
	probe, _ := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	var ke *knownhosts.KeyError
	if err := cb(t.addr(), &net.TCPAddr{IP: net.IPv4zero, Port: t.Port}, probe); errors.As(err, &ke) {
		for _, k := range ke.Want {
			for _, a := range algorithmsFor(k.Key.Type()) {
				if !slices.Contains(algos, a) {
					algos = append(algos, a)
				}
			}
		}
	}
	file := t.KnownHosts
	check := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(hostname, remote, key)
		if err == nil {
			return nil
		}
		he := &HostKeyError{Host: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), KnownHosts: file}
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &ke):
			for _, k := range ke.Want {
				he.Known = append(he.Known, fmt.Sprintf("%s:%d %s", k.Filename, k.Line, ssh.FingerprintSHA256(k.Key)))
			}
			he.Changed = len(ke.Want) > 0
		case errors.As(err, &re):
			he.Revoked = true
		default:
			return fmt.Errorf("failed to check the host key of %s against %s: %w", hostname, file, err)
		}
		return he
	}
	return check, algos, nil
}

func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// dial opens the SSH connection: strict host key check, then public key
// authentication.
func (t *sshTarget) dial(ctx context.Context, timeout time.Duration) (*ssh.Client, error) {
	check, algos, err := t.hostKeyCheck()
	if err != nil {
		return nil, err
	}
	auth, done, err := t.authMethods()
	if err != nil {
		return nil, err
	}
	defer done()
	var hostErr error
	cfg := &ssh.ClientConfig{
		User: t.User, Auth: auth, HostKeyAlgorithms: algos, Timeout: timeout,
		HostKeyCallback: func(h string, r net.Addr, k ssh.PublicKey) error {
			hostErr = check(h, r, k)
			return hostErr
		},
	}
	d := net.Dialer{Timeout: timeout, KeepAlive: 15 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", t.addr())
	if err != nil {
		return nil, fmt.Errorf("failed to connect to %s: %w", t, err)
	}
	conn.SetDeadline(time.Now().Add(timeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, t.addr(), cfg)
	if err != nil {
		conn.Close()
		if hostErr != nil {
			return nil, hostErr
		}
		return nil, fmt.Errorf("failed to log in to %s: %w", t, err)
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ErrNoEgress refuses network = "allowlist" on the ssh backend: the
// jail's relay hands each connection's socket to warden over a unix
// socket (SCM_RIGHTS), which an ssh connection cannot carry, and the proxy
// must run where the policy and the secrets are. It is never replaced by
// the host's network or by none.
var ErrNoEgress = &jail.HintError{
	Err:     fmt.Errorf(`network = "allowlist" is not available with backend "ssh": the egress proxy hands connections over a local unix socket, which the ssh connection cannot carry: %w`, jail.ErrBackendUnavailable),
	HintMsg: `use network = "none" or "host" with backend "ssh", or backend "local" or "docker" for an allowlist`,
}

// Start connects to the remote host and starts `warden worker --jail`
// there, which builds the bubblewrap jail on that host.
func Start(ctx context.Context, op *jail.Launch) (*jail.Started, error) {
	l := *op
	s := l.Settings
	ws, err := filepath.Abs(l.Workspace)
	if err != nil {
		return nil, fmt.Errorf("failed to open workspace %s: %w", l.Workspace, err)
	}
	if l.Sandbox == nil {
		return nil, fmt.Errorf("backend ssh needs a [sandbox] section: %w", jail.ErrBackendUnavailable)
	}
	if s.Egress || l.Egress != nil {
		return nil, ErrNoEgress
	}
	t, err := resolveSSH(l.Sandbox, ws, l.HostEnv)
	if err != nil {
		return nil, err
	}
	specJSON, err := json.Marshal(jailSpec(&l))
	if err != nil {
		return nil, err
	}
	cmdline := fmt.Sprintf("exec %s worker --jail --workspace %s --sandbox %s",
		shellQuote(t.Warden), shellQuote(t.RemotePath), shellQuote(string(specJSON)))

	timeout := l.StartTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, err := t.dial(dctx, timeout)
	if err != nil {
		return nil, err
	}
	p := &sshProc{target: t.String(), client: client, stderr: jail.NewTail(8<<10, l.Log()), stop: make(chan struct{})}
	sess, err := client.NewSession()
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("failed to open an ssh session on %s: %w", t, err)
	}
	p.sess = sess
	sess.Stderr = p.stderr
	stdin, err := sess.StdinPipe()
	if err != nil {
		client.Close()
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		client.Close()
		return nil, err
	}
	if err := sess.Start(cmdline); err != nil {
		client.Close()
		return nil, fmt.Errorf("failed to start warden on %s: %w", t, err)
	}
	go p.keepalive()
	info := jail.Info{
		Workspace: ws, Backend: s.Backend, Lockdown: s.Lockdown, Forced: s.Forced, Network: s.Network && !s.Lockdown,
		Seccomp: "remote",
	}
	finish := func(info *jail.Info, err error) error {
		if err != nil {
			if p.exitCode() == 127 {
				return &jail.HintError{
					Err:     fmt.Errorf("backend ssh: %s was not found on %s: %w", t.Warden, t, err),
					HintMsg: "install warden on the remote host, or set remote_warden in [sandbox] to its absolute path there",
				}
			}
			return fmt.Errorf("backend ssh: failed to start the jailed worker on %s: %w", t, err)
		}
		info.Detail = fmt.Sprintf("remote %s, worker under bubblewrap there (seccomp %s, landlock %s)", t, info.Seccomp, info.Landlock)
		if t.RemotePath != ws {
			info.Detail += ", workspace at " + t.RemotePath
		}
		return nil
	}
	// The remote side starts its jail only with the seccomp filter in force.
	return &jail.Started{Proc: p, Stdin: stdin, Stdout: stdout, Info: info, WantSeccomp: true, Finish: finish}, nil
}

// jailSpec is what the remote warden is told: the settings as this host
// resolved them (a local jail there), the masks, and the environment this
// host's allowlist let through.
func jailSpec(l *jail.Launch) *proto.JailSpec {
	s := l.Settings
	return &proto.JailSpec{
		Sandbox: proto.JailSandbox{
			Enabled: true, Backend: jail.BackendLocal, RWPaths: s.RWPaths, ROPaths: s.ROPaths, Mask: s.Mask,
			NoGPU: s.NoGPU, Lockdown: s.Lockdown, Network: s.Network, Landlock: s.Landlock,
		},
		Mask: l.Mask, Protected: l.Protected, EnvAllowlist: l.EnvAllowlist, Env: l.Env(),
	}
}

// sshProc is the worker at the end of an SSH session.
type sshProc struct {
	target   string // user@host:port
	client   *ssh.Client
	sess     *ssh.Session
	stderr   *jail.Tail
	stop     chan struct{}
	stopOnce sync.Once
	code     atomic.Int64
	deaf     atomic.Bool // the keepalives went unanswered
}

func (p *sshProc) Kill() {
	// Closing the connection ends the session: sshd hangs up on the remote
	// warden, which kills its jail (and bwrap dies with its parent).
	p.client.Close()
}

func (p *sshProc) Wait() error {
	err := p.sess.Wait()
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		p.code.Store(int64(ee.ExitStatus()))
	}
	p.stopOnce.Do(func() { close(p.stop) })
	p.client.Close()
	switch {
	case err == nil:
		return nil
	case ee != nil:
		return fmt.Errorf("the remote warden on %s exited: %w", p.target, err)
	case p.deaf.Load():
		return fmt.Errorf("the ssh connection to %s stopped answering keepalives and was closed: %w", p.target, err)
	default:
		return fmt.Errorf("the ssh connection to %s was lost: %w", p.target, err)
	}
}

func (p *sshProc) exitCode() int { return int(p.code.Load()) }

func (p *sshProc) StderrTail() string { return p.stderr.String() }

func (p *sshProc) Cleanup() error {
	p.stopOnce.Do(func() { close(p.stop) })
	err := p.client.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// keepalive sends keepalive@openssh.com requests; a connection that does
// not answer for sshKeepaliveMissed intervals is closed, which fails the
// requests in flight (the host sees the worker gone).
func (p *sshProc) keepalive() {
	interval := time.Duration(sshKeepaliveInterval.Load())
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := p.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err != nil {
				p.client.Close()
				return
			}
		case <-time.After(interval * time.Duration(sshKeepaliveMissed)):
			p.stderr.Write([]byte("warden: the ssh connection stopped answering keepalives; closing it\n"))
			p.deaf.Store(true)
			p.client.Close()
			return
		case <-p.stop:
			return
		}
	}
}

// Probe is what `warden doctor` can say about the ssh backend without a
// host.
func Probe(context.Context) string {
	return "ok: golang.org/x/crypto/ssh client built in; configure remote_host, remote_user, identity_file (or an ssh agent) and known_hosts in [sandbox]; the remote host needs warden and bubblewrap, and the workspace at remote_path"
}
