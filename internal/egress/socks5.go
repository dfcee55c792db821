package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/egress/policy"
)

// SOCKS5 (RFC 1928), no authentication, CONNECT only.
const (
	socks5Version = 5

	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff

	socksCmdConnect = 1

	socksATYPv4     = 1
	socksATYPDomain = 3
	socksATYPv6     = 4

	socksSucceeded          = 0x00
	socksGeneralFailure     = 0x01
	socksNotAllowed         = 0x02 // connection not allowed by ruleset
	socksNetUnreachable     = 0x03
	socksHostUnreachable    = 0x04
	socksConnRefused        = 0x05
	socksTTLExpired         = 0x06
	socksCmdNotSupported    = 0x07
	socksATYPNotSupported   = 0x08
	socksMaxGreetingMethods = 255
)

// socksRequest is a parsed SOCKS5 request.
type socksRequest struct {
	atyp   byte
	domain string     // ATYP 3, as received
	ip     netip.Addr // ATYP 1, 4
	port   uint16
}

// socksError is a request refused while parsing, with the reply code to send.
type socksError struct {
	code byte
	why  string
}

func (e *socksError) Error() string { return e.why }

// readSOCKS5Greeting reads the method negotiation and returns whether "no
// authentication" was offered.
func readSOCKS5Greeting(r *bufio.Reader) (bool, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, err
	}
	if h[0] != socks5Version {
		return false, &socksError{socksGeneralFailure, fmt.Sprintf("SOCKS version %d", h[0])}
	}
	if h[1] == 0 {
		return false, &socksError{socksGeneralFailure, "a SOCKS5 greeting with no methods"}
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == socksNoAuth {
			return true, nil
		}
	}
	return false, nil
}

// readSOCKS5Request reads a request. The destination is returned as
// received; socksTarget makes it canonical.
func readSOCKS5Request(r *bufio.Reader) (*socksRequest, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	if h[0] != socks5Version {
		return nil, &socksError{socksGeneralFailure, fmt.Sprintf("SOCKS version %d in the request", h[0])}
	}
	if h[2] != 0 {
		return nil, &socksError{socksGeneralFailure, "a non-zero reserved byte"}
	}
	req := &socksRequest{atyp: h[3]}
	switch h[3] {
	case socksATYPv4:
		var a [4]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return nil, err
		}
		req.ip = netip.AddrFrom4(a)
	case socksATYPv6:
		var a [16]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return nil, err
		}
		req.ip = netip.AddrFrom16(a)
	case socksATYPDomain:
		n, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, &socksError{socksNotAllowed, "an empty domain name"}
		}
		d := make([]byte, n)
		if _, err := io.ReadFull(r, d); err != nil {
			return nil, err
		}
		req.domain = string(d)
	default:
		return nil, &socksError{socksATYPNotSupported, fmt.Sprintf("address type %d", h[3])}
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return nil, err
	}
	req.port = binary.BigEndian.Uint16(p[:])
	if h[1] != socksCmdConnect {
		return nil, &socksError{socksCmdNotSupported, fmt.Sprintf("SOCKS command %d (only CONNECT is served)", h[1])}
	}
	if req.port == 0 {
		return nil, &socksError{socksNotAllowed, "port 0"}
	}
	return req, nil
}

// target is the request's destination in canonical form. A domain goes
// through the same canonicaliser as every other host, so a NUL or '%' in
// it is refused, and a domain that spells an address is the address.
func (q *socksRequest) target() (policy.Target, error) {
	if q.atyp != socksATYPDomain {
		return policy.Target{Host: policy.Host{IP: q.ip.Unmap()}, Port: q.port}, nil
	}
	h, err := policy.ParseHost(q.domain)
	if err != nil {
		return policy.Target{}, &socksError{socksNotAllowed, reason(err)}
	}
	return policy.Target{Host: h, Port: q.port}, nil
}

func (q *socksRequest) shown() string {
	if q.atyp == socksATYPDomain {
		return fmt.Sprintf("%q", clip(q.domain))
	}
	return q.ip.String()
}

// socksReply writes a reply. The bound address is always 0.0.0.0:0: the
// host's own addresses are none of the jail's business.
func socksReply(w io.Writer, code byte) error {
	_, err := w.Write([]byte{socks5Version, code, 0, socksATYPv4, 0, 0, 0, 0, 0, 0})
	return err
}

func (s *Server) serveSOCKS5(cc *clientConn) {
	start := time.Now()
	ev := Event{Proto: "socks5", Host: "?"}
	fail := func(code byte, why string) {
		socksReply(cc, code)
		ev.Decision, ev.Reason = "deny", why
		if ev.Rule == "" {
			ev.Rule = "request"
		}
		s.audit(cc, ev, start)
	}
	ok, err := readSOCKS5Greeting(cc.br)
	if err != nil {
		var se *socksError
		if errors.As(err, &se) {
			cc.Write([]byte{socks5Version, socksNoAcceptable})
		}
		return
	}
	if !ok {
		cc.Write([]byte{socks5Version, socksNoAcceptable})
		return
	}
	if _, err := cc.Write([]byte{socks5Version, socksNoAuth}); err != nil {
		return
	}
	req, err := readSOCKS5Request(cc.br)
	if err != nil {
		var se *socksError
		if errors.As(err, &se) {
			fail(se.code, se.why)
		}
		return
	}
	cc.SetReadDeadline(time.Time{})
	ev.Host = req.shown()
	ev.Port = int(req.port)
	t, err := req.target()
	if err != nil {
		fail(err.(*socksError).code, err.Error())
		return
	}
	ev.Host = t.Host.String()
	adm, err := s.admit(s.ctx, t, cc.attribution)
	if err != nil {
		r, _ := isRefusal(err)
		ev.Rule, ev.DecidedBy = r.Rule, r.By
		fail(socksNotAllowed, r.Why)
		return
	}
	ev.Decision, ev.Rule, ev.DecidedBy = "allow", adm.dec.Rule, adm.by
	up, ap, err := s.dial(s.ctx, adm)
	if err != nil {
		if r, ok := isRefusal(err); ok {
			ev.Rule = r.Rule
			fail(socksNotAllowed, r.Why)
			return
		}
		socksReply(cc, dialCode(err))
		ev.Reason = err.Error()
		s.audit(cc, ev, start)
		return
	}
	ev.Addr = ap.String()
	if err := socksReply(cc, socksSucceeded); err != nil {
		up.Close()
		s.audit(cc, ev, start)
		return
	}
	cc.startAttribution()
	s.tunnel(cc, up, adm, &ev)
	s.audit(cc, ev, start)
}

// dialCode maps a failed resolution or connect to its SOCKS5 reply.
func dialCode(err error) byte {
	var de *DialError
	if errors.As(err, &de) && de.Op == "resolve" {
		return socksHostUnreachable
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH):
		return socksHostUnreachable
	case errors.As(err, &ne) && ne.Timeout():
		return socksTTLExpired
	}
	return socksGeneralFailure
}
