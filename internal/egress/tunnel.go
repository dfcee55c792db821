package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/internal/egress/policy"
)

// tunnel carries an admitted, dialled connection (CONNECT or SOCKS5). What
// the client sends first decides how it is watched:
//
//   - a TLS ClientHello: its server name must be the tunnel's host (no
//     SNI fronting; no Encrypted ClientHello, which hides it); for a
//     brokered secret's host, TLS is terminated (terminate);
//   - an HTTP/1.x request: every request on the connection is read,
//     its Host must be the tunnel's host, no placeholder may pass, and
//     it is written on re-framed; responses flow back untouched;
//   - anything else (ssh, a database protocol): carried opaque.
//
// Server-first protocols work: the server's bytes flow to the client from
// the start, except to a brokered host, which must speak TLS.
func (s *Server) tunnel(cc *clientConn, up net.Conn, adm *admission, ev *Event) {
	defer up.Close()
	t := adm.target
	if s.broker != nil && s.broker.terminates(t.Host) {
		s.tunnelBrokered(cc, up, adm, ev)
		return
	}
	down := make(chan int64, 1)
	var stopping atomic.Bool
	go func() {
		n := copyBytes(cc.Conn, up)
		if !stopping.Load() { // else the refusal is still to be written
			closeWrite(cc.Conn)
		}
		down <- n
	}()
	stop := func(err error, answer answerKind) {
		stopping.Store(true)
		up.Close()
		ev.BytesDown += <-down
		s.tunnelRefused(cc, ev, err, answer)
	}
	first, err := cc.br.Peek(1)
	if err != nil {
		up.Close()
		ev.BytesDown += <-down
		return
	}
	switch {
	case first[0] == tlsRecordHandshake:
		cc.SetReadDeadline(time.Now().Add(s.headTimeout))
		hello, rec, err := readClientHello(cc.br)
		cc.SetReadDeadline(time.Time{})
		if err == nil {
			err = checkHello(hello, t)
		}
		if err != nil {
			stop(err, answerTLS)
			return
		}
		ev.TLS = "sni"
		n, err := up.Write(rec)
		ev.BytesUp += int64(n)
		if err != nil {
			break
		}
		ev.BytesUp += pipe(up, cc.br, cc.Conn)
	default:
		kind, err := s.sniff(cc)
		if err != nil {
			stop(err, answerNone)
			return
		}
		if kind == kindHTTP {
			n, err := s.plainRequests(cc, up, t)
			ev.BytesUp += n
			if err != nil {
				stop(err, answerHTTP)
				return
			}
			break
		}
		ev.BytesUp += pipe(up, cc.br, cc.Conn)
	}
	closeWrite(up)
	ev.BytesDown += <-down
}

type answerKind uint8

const (
	answerNone answerKind = iota
	answerTLS             // a fatal access_denied alert
	answerHTTP            // a 403 naming the rule
)

// tunnelRefused ends a tunnel the policy refused mid-way, answering the
// client as it can still see it. A client that went away (a read error
// that is no refusal) is recorded as such.
func (s *Server) tunnelRefused(cc *clientConn, ev *Event, err error, answer answerKind) {
	r, ok := isRefusal(err)
	if !ok {
		var he *HeadError
		if !errors.As(err, &he) {
			ev.Reason = "ended: " + err.Error()
			return
		}
		r = &Refusal{Rule: "request", Why: he.Reason, By: "policy"}
	}
	switch answer {
	case answerHTTP:
		writeError(bufio.NewWriter(cc.Conn), http.StatusForbidden, refusalText(r))
	case answerTLS:
		cc.Write(tlsAlertAccessDenied)
	}
	ev.Decision, ev.Rule, ev.Reason = "deny", r.Rule, r.Why
}

// pipe copies the client's bytes (those buffered first, then the rest
// straight from the socket) to up.
func pipe(up io.Writer, br *bufio.Reader, raw net.Conn) int64 {
	var n int64
	if b := br.Buffered(); b > 0 {
		m, err := io.CopyN(up, br, int64(b))
		n += m
		if err != nil {
			return n
		}
	}
	return n + copyBytes(up, raw)
}

// copyBuffers are the tunnels' copy buffers. A plain read/write copy with
// a large buffer costs less CPU here than splice(2) through a pipe, which
// net's io.Copy would choose for two TCP sockets (a 1 MiB pipe): splice
// moves no bytes in the proxy, but the client then reads pages that went
// cold in the origin's socket and the pipe, and the whole path spent more:
// 100 MB on loopback, origin → proxy → client with the client socket's
// send buffer capped (sockbuf.go), took 60-70 ms of CPU copied and 92-97
// ms spliced, with 1 MiB or 64 KiB pipes (kernel 6.18, load
// 10-14; SPLICE_F_MOVE changed nothing). A copy buffer of 128 KiB or 1 MiB
// made no difference that showed through the noise.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// copyBytes copies src to dst until EOF or an error, and returns the count.
func copyBytes(dst io.Writer, src io.Reader) int64 {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// The wrappers hide ReadFrom and WriteTo, which would splice.
	n, _ := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
	return n
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

const tlsRecordHandshake = 0x16

// A fatal access_denied alert (TLS 1.2 record framing, which TLS 1.3
// clients also read before the handshake completes).
var tlsAlertAccessDenied = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49}

const extensionECH = 0xfe0d

// checkHello holds a ClientHello to the tunnel's host.
func checkHello(h *helloInfo, t policy.Target) error {
	refuse := func(format string, a ...any) error {
		return &Refusal{Target: t.String(), Rule: "TLS server name", Why: fmt.Sprintf(format, a...), By: "policy"}
	}
	if slices.Contains(h.extensions, extensionECH) {
		return refuse("the ClientHello carries Encrypted ClientHello, which hides the server name from the check (tunnel to %s)", t)
	}
	if h.serverName == "" {
		if t.Host.IsIP() {
			return nil
		}
		return refuse("the ClientHello names no server (no SNI) in a tunnel to the name %s; the server it reaches could not be checked", t.Host)
	}
	sni, err := policy.ParseHost(h.serverName)
	if err != nil {
		return refuse("the ClientHello's server name is refused: %v", err)
	}
	if sni != t.Host {
		return refuse("the ClientHello names %s, but the tunnel is to %s", sni, t.Host)
	}
	return nil
}

// helloInfo is what is kept of a ClientHello.
type helloInfo struct {
	serverName string
	extensions []uint16
	protos     []string
}

var errHelloRead = errors.New("ClientHello read")

// readClientHello reads one TLS ClientHello from r with crypto/tls's own
// parser, and returns every byte it consumed, to be sent on (or replayed
// into a terminating handshake). A hello crypto/tls refuses is refused.
func readClientHello(r io.Reader) (*helloInfo, []byte, error) {
	hc := &recordingConn{r: r}
	var info *helloInfo
	cfg := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		info = &helloInfo{serverName: h.ServerName, extensions: slices.Clone(h.Extensions), protos: slices.Clone(h.SupportedProtos)}
		return nil, errHelloRead
	}}
	err := tls.Server(hc, cfg).HandshakeContext(context.Background())
	if info == nil {
		return nil, hc.rec.Bytes(), &Refusal{Rule: "TLS", Why: fmt.Sprintf("not a TLS ClientHello warden can read: %v", err), By: "policy"}
	}
	return info, hc.rec.Bytes(), nil
}

// recordingConn is the net.Conn crypto/tls reads a ClientHello from: reads
// come from r and are recorded; writes (the alert) go nowhere.
type recordingConn struct {
	r   io.Reader
	rec bytes.Buffer
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.rec.Write(p[:n])
	return n, err
}
func (c *recordingConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *recordingConn) Close() error                     { return nil }
func (c *recordingConn) LocalAddr() net.Addr              { return &net.UnixAddr{Net: "unix"} }
func (c *recordingConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Net: "unix"} }
func (c *recordingConn) SetDeadline(time.Time) error      { return nil }
func (c *recordingConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordingConn) SetWriteDeadline(time.Time) error { return nil }
