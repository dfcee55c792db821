package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Magic opens every connection's preamble; the version is its last byte.
const Magic = "WEG1"

// PreambleLen is the size of the preamble in bytes.
const PreambleLen = 8

// Preamble is what the relay writes first on each unix connection: the
// jailed client's TCP source port and the port it connected to.
type Preamble struct {
	ClientPort   uint16
	ListenerPort uint16
}

// Marshal returns the preamble's wire form.
func (p Preamble) Marshal() []byte {
	b := make([]byte, PreambleLen)
	copy(b, Magic)
	binary.BigEndian.PutUint16(b[4:], p.ClientPort)
	binary.BigEndian.PutUint16(b[6:], p.ListenerPort)
	return b
}

// ReadPreamble reads a preamble; anything else is an error.
func ReadPreamble(r io.Reader) (Preamble, error) {
	var b [PreambleLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Preamble{}, fmt.Errorf("read relay preamble: %w", err)
	}
	if string(b[:4]) != Magic {
		return Preamble{}, errors.New("read relay preamble: bad magic")
	}
	return Preamble{ClientPort: binary.BigEndian.Uint16(b[4:]), ListenerPort: binary.BigEndian.Uint16(b[6:])}, nil
}

// Relay accepts TCP connections and carries each to Socket.
type Relay struct {
	// Socket is the host's unix socket, as seen from the jail.
	Socket string
	// DialTimeout bounds connecting to Socket (default 5 s).
	DialTimeout time.Duration

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

// Listen opens a TCP listener on addr (e.g. "127.0.0.1:0") and serves it
// in the background; it returns the address bound.
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
	lport := uint16(l.Addr().(*net.TCPAddr).Port)
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(c)
			r.carry(c.(*net.TCPConn), Preamble{ClientPort: uint16(c.RemoteAddr().(*net.TCPAddr).Port), ListenerPort: lport})
		}()
	}
}

func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.conns == nil {
		r.conns = map[net.Conn]struct{}{}
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// carry copies both ways until both directions end; a half-close on one
// side is passed to the other, so request-then-EOF protocols work.
func (r *Relay) carry(c *net.TCPConn, p Preamble) {
	defer c.Close()
	timeout := r.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	uc, err := net.DialTimeout("unix", r.Socket, timeout)
	if err != nil {
		// The client sees a reset: it has no proxy to talk to.
		c.SetLinger(0)
		return
	}
	u := uc.(*net.UnixConn)
	defer u.Close()
	if _, err := u.Write(p.Marshal()); err != nil {
		return
	}
	r.track(u)
	defer r.untrack(u)
	done := make(chan struct{})
	go func() {
		io.Copy(u, c)
		u.CloseWrite()
		close(done)
	}()
	io.Copy(c, u)
	c.CloseWrite()
	<-done
}

// Close stops every listener and connection and waits for them.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for _, l := range r.listeners {
		l.Close()
	}
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}
