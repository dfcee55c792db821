package relay

import (
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The relay carries bytes both ways, passes a half-close on, and begins
// each connection with the preamble.
func TestCarry(t *testing.T) {
	dir, _ := os.MkdirTemp("/tmp", "rly")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan Preamble, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		p, err := ReadPreamble(c)
		if err != nil {
			t.Error(err)
			return
		}
		got <- p
		b, _ := io.ReadAll(c) // until the client's half-close
		c.Write([]byte(strings.ToUpper(string(b))))
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
	io.WriteString(c, "hello")
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	if string(b) != "HELLO" {
		t.Fatalf("got %q", b)
	}
	p := <-got
	if p.ListenerPort != uint16(addr.(*net.TCPAddr).Port) || p.ClientPort != uint16(c.LocalAddr().(*net.TCPAddr).Port) {
		t.Fatalf("preamble %+v", p)
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

func TestPreambleRefusesOtherBytes(t *testing.T) {
	if _, err := ReadPreamble(strings.NewReader("CONNECT ")); err == nil {
		t.Fatal("accepted bytes that are not a preamble")
	}
	p := Preamble{ClientPort: 1234, ListenerPort: 80}
	q, err := ReadPreamble(strings.NewReader(string(p.Marshal())))
	if err != nil || q != p {
		t.Fatalf("round trip: %+v %v", q, err)
	}
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
