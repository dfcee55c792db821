package relay

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func socketPath(t *testing.T) string {
	dir, err := os.MkdirTemp("/tmp", "rly")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s")
}

// The relay hands the client's socket itself over: the host reads and
// writes it, half-close and all, and the relay keeps nothing.
func TestPass(t *testing.T) {
	sock := socketPath(t)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan *net.TCPConn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc, err := Receive(c.(*net.UnixConn))
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- tc
	}()
	r := &Relay{Socket: sock}
	defer r.Close()
	addr, err := r.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	host := <-got
	if host == nil {
		t.Fatal("nothing received")
	}
	defer host.Close()
	if host.RemoteAddr().String() != c.LocalAddr().String() || host.LocalAddr().String() != addr.String() {
		t.Fatalf("the host holds %s→%s; the client is %s→%s", host.RemoteAddr(), host.LocalAddr(), c.LocalAddr(), addr)
	}
	io.WriteString(c, "hello")
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(host)
	host.Write([]byte(strings.ToUpper(string(b))))
	host.Close()
	b, _ = io.ReadAll(c)
	if string(b) != "HELLO" {
		t.Fatalf("got %q", b)
	}
}

// With no host side, a client gets a reset, not an open connection.
func TestNoSocket(t *testing.T) {
	r := &Relay{Socket: "/nonexistent/egress.sock"}
	defer r.Close()
	addr, err := r.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr.String())
	if err == nil { // the reset may come before or after the dial returns
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if err == nil || !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read: %v; want a reset", err)
	}
}

// openFDs lists the process's open descriptors. Tests compare sets, not
// counts: a finalizer may close an unrelated descriptor meanwhile, which
// must not hide (or be mistaken for) one that was kept.
func openFDs(t *testing.T) map[string]bool {
	dir, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	fds := make(map[string]bool, len(names))
	for _, name := range names {
		// The listing's own descriptor is not one the code under test holds.
		if name != strconv.Itoa(int(dir.Fd())) {
			fds[name] = true
		}
	}
	return fds
}

// kept names the descriptors open in after that were not open in before.
func kept(before, after map[string]bool) []string {
	var extra []string
	for fd := range after {
		if !before[fd] {
			extra = append(extra, fd)
		}
	}
	return extra
}

// Receive takes exactly one TCP socket; anything else a jailed program
// sends is refused and every descriptor it carried is closed.
func TestReceiveRefuses(t *testing.T) {
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	defer pw.Close()
	udp, _ := net.ListenPacket("udp", "127.0.0.1:0")
	defer udp.Close()
	uf, _ := udp.(*net.UDPConn).File()
	defer uf.Close()
	ul, _ := net.Listen("unix", socketPath(t))
	defer ul.Close()
	unixFile, _ := ul.(*net.UnixListener).File()
	defer unixFile.Close()
	tl, _ := net.Listen("tcp", "127.0.0.1:0")
	defer tl.Close()
	tc, _ := net.Dial("tcp", tl.Addr().String())
	defer tc.Close()
	tf, _ := tc.(*net.TCPConn).File()
	defer tf.Close()

	for _, c := range []struct {
		name string
		data []byte
		fds  []int
		want string
	}{
		{"no descriptor", []byte{Magic}, nil, "0 descriptors"},
		{"two descriptors", []byte{Magic}, []int{int(tf.Fd()), int(tf.Fd())}, "2 descriptors"},
		{"a pipe", []byte{Magic}, []int{int(pr.Fd())}, "not a"},
		{"a UDP socket", []byte{Magic}, []int{int(uf.Fd())}, "not a stream socket"},
		{"a unix socket", []byte{Magic}, []int{int(unixFile.Fd())}, "not a TCP socket"},
		{"wrong magic", []byte{'X'}, []int{int(tf.Fd())}, "not a relay message"},
		{"too many to hold", []byte{Magic}, []int{int(tf.Fd()), int(tf.Fd()), int(tf.Fd()), int(tf.Fd()), int(tf.Fd()), int(tf.Fd())}, "too many"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b, err := socketPair()
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			defer b.Close()
			before := openFDs(t)
			var oob []byte
			if len(c.fds) > 0 {
				oob = unix.UnixRights(c.fds...)
			}
			if _, _, err := a.WriteMsgUnix(c.data, oob, nil); err != nil {
				t.Fatal(err)
			}
			got, err := Receive(b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				if got != nil {
					got.Close()
				}
				t.Fatalf("Receive = %v; want %q", err, c.want)
			}
			if extra := kept(before, openFDs(t)); len(extra) > 0 {
				t.Fatalf("descriptors %v open after Receive that were not before: a received one was kept", extra)
			}
		})
	}
}

func socketPair() (*net.UnixConn, *net.UnixConn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	conv := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, _ := net.FileConn(f)
		return c.(*net.UnixConn)
	}
	return conv(fds[0]), conv(fds[1]), nil
}

// What runs in the jail links no policy, credential or proxy code: the
// relay imports nothing of warden's.
func TestImportsNoHostSide(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/wardenhq/warden/") && dep != "github.com/wardenhq/warden/internal/egress/relay" {
			t.Errorf("the jail-side relay depends on %s", dep)
		}
	}
}
