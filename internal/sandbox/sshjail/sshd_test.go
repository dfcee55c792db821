package sshjail_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/testenv"
)

// testSSHD is an OpenSSH server of the test's own, on 127.0.0.1, with a
// throwaway host key and a throwaway client key authorized for root, and a
// warden binary built for the remote side.
type testSSHD struct {
	dir        string
	port       int
	hostKey    ssh.PublicKey
	clientKey  string // private key file (mode 0600)
	knownHosts string // vouches for the host key at [127.0.0.1]:port
	warden     string // the remote warden binary
	log        *logBuf
}

// needSSHD skips a test that needs a real sshd (or fails it under
// WARDEN_REQUIRE_SANDBOX=1): the tests log in as root, and the remote side
// builds a bubblewrap jail.
func needSSHD(t testing.TB) {
	t.Helper()
	testenv.Need(t, "root", "bwrap", "sshd", "ssh", "ssh-keygen", "ssh-agent", "ssh-add")
}

func remoteWarden(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "warden")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/wardenhq/warden/cmd/warden").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/warden: %v\n%s", err, out)
	}
	return bin
}

// startSSHD starts an sshd for the test; it is stopped when the test ends.
func startSSHD(t testing.TB) *testSSHD {
	t.Helper()
	needSSHD(t)
	dir := t.TempDir()
	d := &testSSHD{dir: dir, log: &logBuf{}}
	keygen := func(name string) {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "warden-test", "-f", filepath.Join(dir, name)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	keygen("host_ed25519")
	// A second host key, of the type x/crypto prefers, which known_hosts
	// does not list: the client must negotiate the key on file.
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ecdsa", "-b", "256", "-N", "", "-f", filepath.Join(dir, "host_ecdsa")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	keygen("client_ed25519")
	d.clientKey = filepath.Join(dir, "client_ed25519")
	pub, err := os.ReadFile(d.clientKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "authorized_keys"), string(pub), 0o600)
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_ed25519.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if d.hostKey, _, _, _, err = ssh.ParseAuthorizedKey(hostPub); err != nil {
		t.Fatal(err)
	}
	d.warden = remoteWarden(t, dir)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}

	var cmd *exec.Cmd
	for attempt := 0; ; attempt++ {
		d.port = freePort(t)
		conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host_ecdsa
HostKey %s/host_ed25519
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
AllowUsers root
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PrintMotd no
MaxStartups 100:30:200
MaxSessions 100
LogLevel INFO
# bash skips the login user's ~/.bashrc (which may be slow, as with pyenv)
# for commands run over ssh when SHLVL says it is not the first shell.
SetEnv SHLVL=1
%s`, d.port, dir, dir, dir, dir, penaltiesOff())
		writeFile(t, filepath.Join(dir, "sshd_config"), conf, 0o600)
		d.log = &logBuf{}
		cmd = exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
		cmd.Stdout, cmd.Stderr = d.log, d.log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			t.Fatalf("sshd: %v", err)
		}
		if waitPort(d.port, 10*time.Second, cmd) {
			break
		}
		cmd.Process.Kill()
		cmd.Wait()
		if attempt == 2 {
			t.Fatalf("sshd did not listen on 127.0.0.1:%d:\n%s", d.port, d.log.String())
		}
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("sshd log:\n%s", d.log.String())
		}
	})
	d.knownHosts = filepath.Join(dir, "known_hosts")
	d.trustPorts(t, d.knownHosts, d.port)
	return d
}

// trustPorts writes a known_hosts file vouching for the host key at the
// given ports of 127.0.0.1.
func (d *testSSHD) trustPorts(t testing.TB, file string, ports ...int) {
	t.Helper()
	var b bytes.Buffer
	for _, p := range ports {
		b.WriteString(knownhostsLine(p, d.hostKey))
	}
	writeFile(t, file, b.String(), 0o600)
}

func knownhostsLine(port int, key ssh.PublicKey) string {
	return fmt.Sprintf("[127.0.0.1]:%d %s", port, ssh.MarshalAuthorizedKey(key))
}

// hostFingerprints maps each host key type of the server to its fingerprint.
func (d *testSSHD) hostFingerprints(t testing.TB) map[string]string {
	t.Helper()
	fps := map[string]string{}
	for _, f := range []string{"host_ed25519.pub", "host_ecdsa.pub"} {
		b, err := os.ReadFile(filepath.Join(d.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			t.Fatal(err)
		}
		fps[k.Type()] = ssh.FingerprintSHA256(k)
	}
	return fps
}

// sandbox is a [sandbox] section for the ssh backend against this sshd.
func (d *testSSHD) sandbox() *config.Sandbox {
	return &config.Sandbox{
		Enabled: true, Backend: jail.BackendSSH, RemoteHost: "127.0.0.1", RemotePort: d.port, RemoteUser: "root",
		IdentityFile: d.clientKey, KnownHosts: d.knownHosts, RemoteWarden: d.warden,
	}
}

// penaltiesOff turns off OpenSSH ≥ 9.8's per-source penalties, which would
// lock loopback out after the refused connections the tests make.
func penaltiesOff() string {
	out, _ := exec.Command("/usr/sbin/sshd", "-V").CombinedOutput()
	m := regexp.MustCompile(`OpenSSH_(\d+)\.(\d+)`).FindSubmatch(out)
	if m == nil {
		return ""
	}
	major, _ := strconv.Atoi(string(m[1]))
	minor, _ := strconv.Atoi(string(m[2]))
	if major > 9 || major == 9 && minor >= 8 {
		return "PerSourcePenalties no\n"
	}
	return ""
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitPort(port int, timeout time.Duration, cmd *exec.Cmd) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return true
		}
		if cmd.ProcessState != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func writeFile(t testing.TB, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// logBuf collects sshd's output.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tcpProxy forwards 127.0.0.1:port to a target; the tests cut or freeze
// the connections through it to simulate a dropped or dead network.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	frozen chan struct{} // closed while the proxy forwards
}

func newTCPProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, frozen: make(chan struct{})}
	close(p.frozen)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *tcpProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		gate := p.frozen
		p.mu.Unlock()
		<-gate
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// cut closes every connection (both sides see the drop at once).
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// freeze stops forwarding without closing anything: a dead network.
func (p *tcpProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = make(chan struct{})
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	select {
	case <-p.frozen:
	default:
		close(p.frozen)
	}
	p.mu.Unlock()
	p.cut()
}
