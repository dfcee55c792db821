package egress

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/egress/relay"
	"github.com/wardenhq/warden/internal/testenv"
)

// A connection a program opens through the relay is attributed to that
// program's command line.
func TestProcAttributor(t *testing.T) {
	t.Parallel()
	curl := testenv.Need(t, "curl")[0]
	up := startOrigin(t, "tcp", "127.0.0.1:0")
	f := baseFixture()
	f.opts = func(o *Options) {
		attr := NewAttributor(func() []int { return Descendants(os.Getpid()) }) // the test shares the relay's namespace
		t.Cleanup(attr.Close)
		o.Attribute = func(ci ConnInfo) Attribution { return Attribution{Command: attr.Lookup(ci)} }
	}
	p := startProxy(t, f)
	r := &relay.Relay{Socket: p.socket}
	defer r.Close()
	addr, err := r.Listen("127.0.0.1:0")
	must(t, err == nil, "%v", err)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// The connection lasts a while (the lookup runs beside it; a
	// connection that ends within a millisecond may not be attributed).
	url := "http://allowed.test:" + strconv.Itoa(int(up.port())) + "/slow"
	out, err := exec.CommandContext(ctx, curl, "-sS", "--noproxy", "", "-x", "http://"+addr.String(), url).CombinedOutput()
	must(t, err == nil, "curl: %v %s", err, out)
	ev := p.ev.next(t)
	must(t, strings.HasPrefix(ev.Command, curl) && strings.Contains(ev.Command, url), "event command %q", ev.Command)
}

func TestProcAttributorUnknown(t *testing.T) {
	t.Parallel()
	attr := NewAttributor(func() []int { return Descendants(os.Getpid()) })
	defer attr.Close()
	if got := attr.Lookup(ConnInfo{Relayed: true, ClientPort: 1, ListenerPort: 2}); got != "" {
		t.Errorf("attributed a connection that does not exist to %q", got)
	}
	if got := attr.Lookup(ConnInfo{}); got != "" {
		t.Errorf("attributed an unrelayed connection to %q", got)
	}
}

// sock_diag finds a connection's client socket by its exact addresses: the
// same inode its descriptor links to.
func TestSockDiag(t *testing.T) {
	t.Parallel()
	d, err := openSockDiag(os.Getpid())
	if err != nil {
		testenv.Skip(t, "cannot enter a network namespace here (%v)", err)
	}
	defer d.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err == nil, "%v", err)
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	must(t, err == nil, "%v", err)
	defer c.Close()
	s, _ := l.Accept()
	defer s.Close()
	f, _ := c.(*net.TCPConn).File()
	defer f.Close()
	link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	n, err := d.inode(c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort())
	must(t, err == nil && link == "socket:["+strconv.FormatUint(uint64(n), 10)+"]", "sock_diag says %d (%v); the descriptor is %s", n, err, link)
	none, err := d.inode(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"))
	must(t, none == 0, "a socket that does not exist: %d %v", none, err)
}
