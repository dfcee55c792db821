package egress

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/egress/policy"
	"github.com/wardenhq/warden/internal/egress/relay"
)

// Options configure a Server. Policy is required; the zero value of every
// other field is a safe default.
type Options struct {
	// Policy decides every destination.
	Policy *policy.Policy
	// Resolver looks names up on the host (nil: net.DefaultResolver).
	Resolver Resolver
	// Asker reaches a person for unknown = "ask" (nil: such hosts are
	// refused, as no person can be reached).
	Asker Asker
	// Auditor receives every connection's event (nil: none kept).
	Auditor Auditor
	// Broker terminates TLS and swaps placeholders for brokered secrets
	// (nil: no secrets; no TLS is ever terminated).
	Broker *Broker
	// Workspace names the workspace in questions and events.
	Workspace string
	// Attribute names the session and command behind a connection, when
	// they can be known (nil: unattributed).
	Attribute func(ConnInfo) Attribution
	// DialTimeout bounds a lookup and a connect (default 10 s).
	DialTimeout time.Duration
	// AskTimeout bounds how long a connection waits for a person
	// (default 10 min; the approval broker's own timeout usually ends the
	// question first).
	AskTimeout time.Duration
	// HandshakeTimeout bounds reading a request head, a SOCKS5 greeting or
	// a TLS ClientHello (default 30 s).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a kept-alive HTTP connection with no new request
	// (default 2 min). Tunnels have no idle limit.
	IdleTimeout time.Duration
	// KeepAlive is the upstream TCP keep-alive period (0: Go's default).
	KeepAlive time.Duration
	// UpstreamRoots verify real servers when TLS is terminated for a
	// brokered secret (nil: the system's roots).
	UpstreamRoots CertPool
	// MaxConns bounds concurrent client connections (default 512).
	MaxConns int
}

// CertPool is a set of trusted roots.
type CertPool = *x509.CertPool

// ConnInfo is what is known about a client connection before it speaks.
type ConnInfo struct {
	// Relayed is set when the jail's relay handed the connection over;
	// Client and Listener are then the jail-side socket's addresses (for
	// attribution: the jail chose the socket, so they are a hint).
	Relayed          bool
	Client, Listener netip.AddrPort
	ClientPort       uint16
	ListenerPort     uint16
}

// Attribution names who opened a connection, as far as it can be known.
type Attribution struct {
	Session string
	Command string
}

// Server is the host side of the egress proxy for one workspace.
type Server struct {
	opts                                          Options
	pol                                           *policy.Policy
	resolver                                      Resolver
	broker                                        *Broker
	dialTimeout, askTimeout, headTimeout, idleFor time.Duration
	asking                                        asking
	stats                                         counters

	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

// New returns a server; it does nothing until Serve, ServeRelay or
// ServeConn is called.
func New(opts *Options) (*Server, error) {
	if opts == nil || opts.Policy == nil {
		return nil, errors.New("egress: a policy is required")
	}
	s := &Server{opts: *opts, pol: opts.Policy, resolver: opts.Resolver, broker: opts.Broker,
		listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	s.dialTimeout = orDefault(opts.DialTimeout, 10*time.Second)
	s.askTimeout = orDefault(opts.AskTimeout, 10*time.Minute)
	s.headTimeout = orDefault(opts.HandshakeTimeout, 30*time.Second)
	s.idleFor = orDefault(opts.IdleTimeout, 2*time.Minute)
	n := opts.MaxConns
	if n <= 0 {
		n = 512
	}
	s.sem = make(chan struct{}, n)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.asking.now = time.Now
	s.asking.base = s.ctx
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Policy returns the policy the server applies.
func (s *Server) Policy() *policy.Policy { return s.pol }

// Serve accepts proxy clients on l (HTTP and SOCKS5 on the same listener:
// the first byte tells them apart) until l fails or the server closes.
func (s *Server) Serve(l net.Listener) error { return s.serve(l, false) }

// ServeRelay is Serve for a unix socket the jail's relay hands its
// connections over (internal/egress/relay): each unix connection carries
// one TCP socket of the jail, which is then served like any client.
func (s *Server) ServeRelay(l net.Listener) error { return s.serve(l, true) }

func (s *Server) serve(l net.Listener, relayed bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return net.ErrClosed
			}
			// Out of descriptors, say: wait and go on, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return net.ErrClosed
			}
			continue
		}
		backoff = 0
		if relayed {
			go s.receive(c)
			continue
		}
		if !s.track(c) {
			c.Close()
			return net.ErrClosed
		}
		go func() {
			defer s.untrack(c)
			s.handle(c, ConnInfo{})
		}()
	}
}

// receive takes the jail's socket from a relay's unix connection and
// serves it; anything but one TCP socket is refused (relay.Receive).
func (s *Server) receive(c net.Conn) {
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return
	}
	uc.SetDeadline(time.Now().Add(s.headTimeout))
	tc, err := relay.Receive(uc)
	if err != nil {
		return
	}
	uc.Close()
	info := ConnInfo{Relayed: true}
	if a, ok := tc.RemoteAddr().(*net.TCPAddr); ok {
		info.Client = a.AddrPort()
		info.ClientPort = uint16(a.Port)
	}
	if a, ok := tc.LocalAddr().(*net.TCPAddr); ok {
		info.Listener = a.AddrPort()
		info.ListenerPort = uint16(a.Port)
	}
	s.ServeConn(tc, info)
}

// ServeConn serves one client connection and returns when it ends; it
// closes c.
func (s *Server) ServeConn(c net.Conn, info ConnInfo) {
	if !s.track(c) {
		c.Close()
		return
	}
	defer s.untrack(c)
	s.handle(c, info)
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close stops the listeners, ends every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// clientConn is one connection from the jail.
type clientConn struct {
	net.Conn
	br       *bufio.Reader
	info     ConnInfo
	lookup   func(ConnInfo) Attribution // nil: unattributed
	attr     Attribution
	attrOnce sync.Once
	attrDone chan struct{} // closed once attr is known
}

// startAttribution starts looking the connection's attribution up (from
// /proc, say: a millisecond or two of system calls), once, beside the
// connection. It is started when the connection is under way — after the
// first response or once a tunnel is open — so that the lookup does not
// compete with the connection's start for a busy host's CPU.
func (cc *clientConn) startAttribution() {
	cc.attrOnce.Do(func() {
		cc.attrDone = make(chan struct{})
		if cc.lookup == nil {
			close(cc.attrDone)
			return
		}
		go func() {
			defer close(cc.attrDone)
			cc.attr = cc.lookup(cc.info)
		}()
	})
}

// attribution waits for the connection's attribution: only a question to
// a person and the audit event need it.
func (cc *clientConn) attribution() Attribution {
	cc.startAttribution()
	<-cc.attrDone
	return cc.attr
}

// maxHead bounds a request head, and is the client reader's buffer size.
const maxHead = 64 << 10

func (s *Server) handle(c net.Conn, info ConnInfo) {
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		return
	}
	s.stats.active.Add(1)
	defer s.stats.active.Add(-1)
	tuneClient(c)
	c.SetReadDeadline(time.Now().Add(s.headTimeout))
	cc := &clientConn{Conn: c, br: bufio.NewReaderSize(c, maxHead), info: info, lookup: s.opts.Attribute}
	defer cc.attribution() // never leave a lookup behind
	first, err := cc.br.Peek(1)
	if err != nil {
		return
	}
	switch first[0] {
	case socks5Version:
		s.serveSOCKS5(cc)
	case 4: // SOCKS4: "request rejected", which every SOCKS4 client shows
		c.Write([]byte{0, 0x5b, 0, 0, 0, 0, 0, 0})
		s.audit(cc, Event{Proto: "socks4", Host: "?", Decision: "deny", Rule: "protocol",
			Reason: "SOCKS4 is not served (it resolves in the jail); use SOCKS5 with remote resolution (socks5h://)"}, time.Now())
	default:
		s.serveHTTP(cc)
	}
}

// audit completes and sends an event, and counts it.
func (s *Server) audit(cc *clientConn, e Event, start time.Time) {
	e.Time = start
	e.Duration = time.Since(start)
	e.Workspace = s.opts.Workspace
	a := cc.attribution()
	e.Session, e.Command = a.Session, a.Command
	if e.Decision == "allow" {
		s.stats.allowed.Add(1)
	} else {
		s.stats.denied.Add(1)
	}
	s.stats.up.Add(e.BytesUp)
	s.stats.down.Add(e.BytesDown)
	if s.opts.Auditor != nil {
		s.opts.Auditor.EgressEvent(e)
	}
}
