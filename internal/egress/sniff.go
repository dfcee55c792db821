package egress

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/egress/policy"
)

type streamKind uint8

const (
	kindUndecided streamKind = iota
	kindOpaque
	kindHTTP
)

// sniff tells, from the client's first line (not consumed), whether a
// tunnel carries HTTP/1.x. A client whose first bytes are printable text is
// given HandshakeTimeout to finish its line; a line that never ends is
// refused rather than let through unread.
func (s *Server) sniff(cc *clientConn) (streamKind, error) {
	cc.SetReadDeadline(time.Now().Add(s.headTimeout))
	defer cc.SetReadDeadline(time.Time{})
	for n := 1; ; {
		b, err := cc.br.Peek(n)
		if k := classify(b); k != kindUndecided {
			return k, nil
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, bufio.ErrBufferFull) {
				return 0, &Refusal{Rule: "protocol", By: "policy",
					Why: "the tunnel's first bytes could begin an HTTP request, but no complete line came"}
			}
			return kindOpaque, nil // the client is gone; the copy will see it
		}
		n = max(cc.br.Buffered(), len(b)+1)
	}
}

// classify looks at the start of a client stream: an HTTP request line
// once a line is complete, opaque at the first byte no request line holds.
func classify(b []byte) streamKind {
	for i, c := range b {
		switch {
		case c == '\n':
			if isRequestLine(bytes.TrimSuffix(b[:i], []byte("\r"))) {
				return kindHTTP
			}
			return kindOpaque
		case c == '\r' || c == '\t':
		case c < 0x20 || c >= 0x7f:
			return kindOpaque
		}
	}
	return kindUndecided
}

// isRequestLine is generous on purpose: anything a lenient server might
// take for a request line is read as HTTP, and parseHead then holds it to
// the strict form (refusing what it cannot read).
func isRequestLine(line []byte) bool {
	f := strings.Fields(string(line))
	if len(f) < 2 || !isToken(f[0]) {
		return false
	}
	last := strings.ToUpper(f[len(f)-1])
	return strings.HasPrefix(last, "HTTP/") || strings.HasPrefix(f[1], "/") || strings.Contains(f[1], "://") || f[1] == "*"
}

// plainRequests reads the HTTP/1.x requests a client sends in a tunnel,
// checks each (origin-form, Host = the tunnel's host, no placeholder, no
// protocol upgrade) and writes it on; the responses flow back by the
// other direction's copy, untouched. It returns the bytes sent and, when
// a request was refused, why.
func (s *Server) plainRequests(cc *clientConn, up net.Conn, t policy.Target) (int64, error) {
	cw := &countWriter{w: up}
	for first := true; ; first = false {
		if !first {
			if _, err := cc.br.Peek(1); err != nil {
				return cw.n, nil
			}
		}
		cc.SetReadDeadline(time.Now().Add(s.headTimeout))
		rq, req, err := readRequest(cc.br)
		cc.SetReadDeadline(time.Time{})
		if err != nil {
			return cw.n, err
		}
		if err := checkInTunnel(rq, t); err != nil {
			return cw.n, err
		}
		if req.Header.Get("Upgrade") != "" {
			return cw.n, &Refusal{Target: t.String(), Rule: "protocol", By: "policy",
				Why: "a protocol upgrade in a plain-text tunnel cannot be followed (use TLS, e.g. wss://)"}
		}
		req.Trailer = nil // not checked for placeholders, so not sent
		if b := s.broker; b != nil {
			if _, why := b.rewrite(req, t.Host, false); why != "" {
				return cw.n, &Refusal{Target: t.String(), Rule: "[[sandbox.egress.secrets]]", Why: why, By: "policy"}
			}
			if req.Body != nil && req.Body != http.NoBody {
				req.Body = b.scanBody(req.Body, t.Host, false)
			}
		}
		if _, ok := req.Header["User-Agent"]; !ok {
			req.Header["User-Agent"] = []string{""}
		}
		// With "Expect: 100-continue" the head must reach the server before
		// the client sends the body, so it is not buffered.
		if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			err = req.Write(byteWriter{cw})
		} else {
			bw := bufio.NewWriterSize(cw, 16<<10)
			if err = req.Write(bw); err == nil {
				err = bw.Flush()
			}
		}
		if err != nil {
			if pe := seen(req.Body); pe != nil {
				return cw.n, &Refusal{Target: t.String(), Rule: "[[sandbox.egress.secrets]]", Why: pe.Error(), By: "policy"}
			}
			return cw.n, err
		}
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// byteWriter keeps net/http from buffering a request: it writes through.
type byteWriter struct{ w io.Writer }

func (b byteWriter) Write(p []byte) (int, error) { return b.w.Write(p) }
func (b byteWriter) WriteByte(c byte) error {
	_, err := b.w.Write([]byte{c})
	return err
}
