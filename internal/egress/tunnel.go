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
	"os"
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
	d := startDownstream(cc.Conn, up)
	stop := func(err error, answer answerKind) {
		d.stopping.Store(true)
		up.Close()
		ev.BytesDown += d.wait()
		s.tunnelRefused(cc, ev, err, answer)
	}
	first, err := cc.br.Peek(1)
	if err != nil {
		up.Close()
		ev.BytesDown += d.wait()
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
		ev.BytesUp += s.carry(cc, up, d, ev)
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
		ev.BytesUp += s.carry(cc, up, d, ev)
	}
	closeWrite(up)
	ev.BytesDown += d.wait()
	if d.kernel != nil {
		d.kernel.unpair()
	}
}

// carry carries a checked tunnel's bytes until both ends are done: in
// the kernel (sockmap_linux.go) when it can, else copied here. It returns
// the bytes carried from the client (those buffered first included).
func (s *Server) carry(cc *clientConn, up net.Conn, d *downstream, ev *Event) int64 {
	var n int64
	if b := cc.br.Buffered(); b > 0 {
		m, err := io.CopyN(up, cc.br, int64(b))
		n += m
		if err != nil {
			return n
		}
	}
	k, drained := s.offload(cc.Conn, up, d, ev)
	n += drained
	m, err := copyBytesErr(up, cc.Conn) // in the kernel's case, a wait for the client's FIN
	n += m
	if k != nil && k.upKernel {
		n += k.drainUp(err == nil)
	}
	return n
}

// offload hands a tunnel to the kernel: the copy from up is paused (a
// read deadline in the past), both sockets go into the sockmap, and the
// copy loops go on, reading nothing but the ends of the streams. Nil: the
// tunnel stays copied (Options.CopyTunnels, no BPF, or a socket that
// cannot be paired); ev.Carried says which.
//
// It returns the client's bytes it wrote on to up while emptying the
// receive queue.
func (s *Server) offload(client, up net.Conn, d *downstream, ev *Event) (*kernelPair, int64) {
	ev.Carried = "copy"
	if s.opts.CopyTunnels || KernelTunnels() != nil {
		return nil, 0
	}
	if !d.pause() {
		return nil, 0
	}
	k, upN, downN, err := pairKernel(client, up)
	up.SetReadDeadline(time.Time{})
	if err != nil {
		k = nil
	} else {
		ev.Carried = "kernel"
		if !k.upKernel {
			ev.Carried = "kernel down, copy up"
		}
	}
	d.kernel = k
	d.resume <- resumeAs{k, downN}
	return k, upN
}

// resumeAs tells the paused downstream how to go on: in the kernel (k),
// or copying; down is what offload wrote to the client meanwhile.
type resumeAs struct {
	k    *kernelPair
	down int64
}

// downstream copies the server's bytes to the client from the moment the
// tunnel is dialled (server-first protocols work), in a goroutine that
// can be paused while the tunnel moves into the kernel.
type downstream struct {
	client, up net.Conn
	stopping   atomic.Bool // set when a refusal is still to be written: no FIN
	pausing    atomic.Bool
	paused     chan struct{}
	resume     chan resumeAs
	done       chan int64
	kernel     *kernelPair // set by offload before resume, read after done
	n          int64
	finished   bool
}

func startDownstream(client, up net.Conn) *downstream {
	d := &downstream{client: client, up: up, paused: make(chan struct{}), resume: make(chan resumeAs), done: make(chan int64, 1)}
	go d.run()
	return d
}

func (d *downstream) run() {
	var n int64
	for {
		m, err := copyBytesErr(d.client, d.up)
		n += m
		if d.pausing.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
			d.pausing.Store(false)
			d.paused <- struct{}{}
			r := <-d.resume
			n += r.down
			if k := r.k; k != nil {
				m, err := copyBytesErr(d.client, d.up) // the server's FIN
				n += m + k.drainDown(err == nil)
				break
			}
			continue
		}
		break
	}
	if !d.stopping.Load() { // else the refusal is still to be written
		closeWrite(d.client)
	}
	d.done <- n
}

// pause stops the copy with everything it read written on; false if it
// had already ended.
func (d *downstream) pause() bool {
	d.pausing.Store(true)
	d.up.SetReadDeadline(time.Unix(1, 0))
	select {
	case <-d.paused:
		return true
	case n := <-d.done:
		d.n, d.finished = n, true
		d.up.SetReadDeadline(time.Time{})
		return false
	}
}

// wait returns the bytes carried once the copy has ended.
func (d *downstream) wait() int64 {
	if !d.finished {
		d.n, d.finished = <-d.done, true
	}
	return d.n
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
	n, _ := copyBytesErr(dst, src)
	return n
}

// copyBytesErr is copyBytes with the error (nil at EOF).
func copyBytesErr(dst io.Writer, src io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// The wrappers hide ReadFrom and WriteTo, which would splice.
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
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
