package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// tunnelBrokered terminates TLS to a brokered secret's host: the jail's
// client completes its handshake with warden (a certificate from the
// workspace CA), warden completes its own with the real server (verified
// against the system's roots, as any client would), and the HTTP/1.1
// requests in between are read, checked and rewritten (forward.go).
func (s *Server) tunnelBrokered(cc *clientConn, up net.Conn, adm *admission, ev *Event) {
	t := adm.target
	cc.SetReadDeadline(time.Now().Add(s.headTimeout))
	first, err := cc.br.Peek(1)
	if err != nil {
		return
	}
	if first[0] != tlsRecordHandshake {
		s.tunnelRefused(cc, ev, &Refusal{Target: t.String(), Rule: "[[sandbox.egress.secrets]]", By: "policy",
			Why: t.Host.String() + " receives a brokered secret, so only TLS is carried to it"}, answerHTTP)
		return
	}
	hello, rec, err := readClientHello(cc.br)
	if err == nil {
		err = checkHello(hello, t)
	}
	if err != nil {
		s.tunnelRefused(cc, ev, err, answerTLS)
		return
	}
	ev.TLS = "terminated"
	client := tls.Server(&prefixConn{Conn: cc.Conn, r: io.MultiReader(bytes.NewReader(rec), cc.br)},
		s.broker.ca.serverConfig(t.Host.Name))
	defer client.Close()
	if err := client.Handshake(); err != nil {
		ev.Reason = "the client did not complete TLS with the workspace CA's certificate (is the CA bundle trusted?): " + err.Error()
		return
	}
	cc.SetReadDeadline(time.Time{})

	wire := &countConn{Conn: up}
	server := tls.Client(wire, &tls.Config{ServerName: t.Host.Name, RootCAs: s.opts.UpstreamRoots,
		NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	hctx, cancel := context.WithTimeout(s.ctx, s.dialTimeout)
	var upErr error
	if err := server.HandshakeContext(hctx); err != nil {
		upErr = &DialError{Target: t.String(), Op: "verify the TLS certificate of", Err: err}
	}
	cancel()
	f := &forwarder{s: s, cc: cc, cbr: bufio.NewReaderSize(client, maxHead), cw: bufio.NewWriter(client),
		proto: "connect", terminated: true}
	if upErr == nil {
		ap := netipAddrPort(up.RemoteAddr())
		f.up = newUpstream(t, ap, server)
	}
	defer f.closeUpstream()
	f.serveTerminated(t, cc.Conn, ev, upErr)
	ev.BytesUp, ev.BytesDown = wire.out.Load(), wire.in.Load()
}

// prefixConn reads from r (bytes already taken from the connection, then
// the rest of it) and does everything else on Conn.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// countConn counts the bytes on the wire.
type countConn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(int64(n))
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(int64(n))
	return n, err
}
