package relay

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Where the relay listens and dials inside a jail. The jail has a network
// namespace of its own, so fixed ports collide with nothing on the host.
const (
	SocketPath = "/run/warden/egress.sock" // the host's socket, bound into the jail
	HTTPPort   = 3128                      // HTTP proxy: CONNECT and absolute-form
	SOCKSPort  = 1080                      // SOCKS5 (the same server: it tells them apart)
	// BundlePath is where the CA bundle (the system's CAs and the
	// workspace CA) is bound when secrets are brokered.
	BundlePath = "/run/warden/egress/ca-bundle.pem"
	// PlaceholderPrefix begins every brokered secret's placeholder: the
	// value a secret's variable holds in the jail, worthless anywhere else.
	PlaceholderPrefix = "warden-placeholder-"
)

// ListenJail starts a relay to SocketPath on the jail's loopback, on
// HTTPPort and SOCKSPort: what `warden worker` runs under network =
// "allowlist".
func ListenJail() (*Relay, error) {
	r := &Relay{Socket: SocketPath}
	for _, port := range []int{HTTPPort, SOCKSPort} {
		if _, err := r.Listen(fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// Magic is the one byte of data each message carries (a descriptor
// cannot travel alone on a stream socket); it names the version.
const Magic = 'W'

// Relay accepts TCP connections and hands each to Socket.
type Relay struct {
	// Socket is the host's unix socket, as seen from the jail.
	Socket string
	// DialTimeout bounds connecting to Socket (default 5 s).
	DialTimeout time.Duration

	mu        sync.Mutex
	listeners []net.Listener
	closed    bool
	wg        sync.WaitGroup
}

// Listen opens a TCP listener on addr (e.g. "127.0.0.1:3128") and serves
// it in the background; it returns the address bound.
func (r *Relay) Listen(addr string) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("relay: listen on %s: %w", addr, err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		l.Close()
		return nil, net.ErrClosed
	}
	r.listeners = append(r.listeners, l)
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		r.serve(l)
	}()
	return l.Addr(), nil
}

func (r *Relay) serve(l net.Listener) {
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: wait and go on, as net/http does;
			// a relay that stopped would leave the jail without a network.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		// Sequential on purpose: handing a descriptor over is a connect
		// and a sendmsg, and the kernel queues the clients meanwhile.
		r.pass(c.(*net.TCPConn))
	}
}

// pass sends the connection's socket to the host and closes the relay's
// copy; the host's copy keeps the connection open. When the host cannot
// be reached, the client gets a reset: it has no proxy to talk to.
func (r *Relay) pass(c *net.TCPConn) {
	defer c.Close()
	timeout := r.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	uc, err := net.DialTimeout("unix", r.Socket, timeout)
	if err != nil {
		c.SetLinger(0)
		return
	}
	defer uc.Close()
	uc.SetDeadline(time.Now().Add(timeout))
	raw, err := c.SyscallConn()
	if err != nil {
		c.SetLinger(0)
		return
	}
	var sendErr error
	err = raw.Control(func(fd uintptr) {
		_, _, sendErr = uc.(*net.UnixConn).WriteMsgUnix([]byte{Magic}, unix.UnixRights(int(fd)), nil)
	})
	if err != nil || sendErr != nil {
		c.SetLinger(0)
	}
}

// Close stops every listener and waits for them.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for _, l := range r.listeners {
		l.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}

// Receive reads one handed-over connection from a unix connection: exactly
// one descriptor, which must be a TCP socket. Anything else is closed and
// refused. It is the host side's half of the protocol, kept here so that
// both halves are read together; it trusts nothing it receives.
func Receive(uc *net.UnixConn) (*net.TCPConn, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4)) // room to see (and close) a few extra
	n, oobn, flags, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("relay: receive: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	switch {
	case flags&unix.MSG_CTRUNC != 0:
		closeAll()
		return nil, errors.New("relay: receive: too many descriptors")
	case n != 1 || buf[0] != Magic:
		closeAll()
		return nil, errors.New("relay: receive: not a relay message")
	case len(fds) != 1:
		closeAll()
		return nil, fmt.Errorf("relay: receive: %d descriptors, want 1", len(fds))
	}
	typ, err := unix.GetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || typ != unix.SOCK_STREAM {
		closeAll()
		return nil, errors.New("relay: receive: not a stream socket")
	}
	domain, err := unix.GetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || domain != unix.AF_INET && domain != unix.AF_INET6 {
		closeAll()
		return nil, errors.New("relay: receive: not a TCP socket")
	}
	f := os.NewFile(uintptr(fds[0]), "relayed-socket")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("relay: receive: %w", err)
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		c.Close()
		return nil, errors.New("relay: receive: not a TCP connection")
	}
	return tc, nil
}
