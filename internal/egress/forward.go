package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/egress/policy"
)

// forwarder carries HTTP/1.x requests it has read and checked, one at a
// time, to an upstream server, and the responses back: for absolute-form
// requests (each may name another host) and inside a TLS connection
// terminated for a brokered secret (one host).
type forwarder struct {
	s     *Server
	cc    *clientConn
	cbr   *bufio.Reader // requests from the client
	cw    *bufio.Writer // responses to the client
	proto string

	up       *upstream
	admitted map[policy.Target]*admission // absolute-form: decided once per connection and host

	terminated bool // the client side is TLS that warden terminated
	sent       []string
	continued  bool // this request's "Expect: 100-continue" was answered here
}

type upstream struct {
	target policy.Target
	addr   netip.AddrPort
	conn   net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
}

func newUpstream(t policy.Target, ap netip.AddrPort, c net.Conn) *upstream {
	return &upstream{target: t, addr: ap, conn: c, br: bufio.NewReaderSize(c, 32<<10), bw: bufio.NewWriterSize(c, 32<<10)}
}

func (f *forwarder) closeUpstream() {
	if f.up != nil {
		f.up.conn.Close()
		f.up = nil
	}
}

// absolute forwards one absolute-form request and reports whether the
// client connection may carry another. Each request is one event.
func (f *forwarder) absolute(rq *reqHead, req *http.Request, start time.Time) bool {
	ev := Event{Proto: "http", Host: rq.target.Host.String(), Port: int(rq.target.Port)}
	defer func() { f.s.audit(f.cc, ev, start) }()
	adm := f.admitted[rq.target]
	if adm == nil {
		a, err := f.s.admit(f.s.ctx, rq.target, f.cc.attribution)
		if err != nil {
			answerError(f.cw, err, &ev)
			return false
		}
		if f.admitted == nil {
			f.admitted = map[policy.Target]*admission{}
		}
		adm, f.admitted[rq.target] = a, a
	}
	ev.Decision, ev.Rule, ev.DecidedBy = "allow", adm.dec.Rule, adm.by
	if err := f.prepare(req, rq.target, &ev); err != nil {
		answerError(f.cw, err, &ev)
		return false
	}
	if f.up == nil || f.up.target != rq.target {
		f.closeUpstream()
		c, ap, err := f.s.dial(f.s.ctx, adm)
		if err != nil {
			answerError(f.cw, err, &ev)
			return false
		}
		f.up = newUpstream(rq.target, ap, c)
	}
	ev.Addr = f.up.addr.String()
	f.cc.startAttribution() // admitted and dialled: look it up beside the request
	return f.roundTrip(req, &ev)
}

// hopHeaders are the hop-by-hop headers (RFC 9110 §7.6.1) a proxy drops,
// with Upgrade: a protocol switch is not followed, so it is not offered.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHop(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// prepare readies a request to go upstream: hop-by-hop headers dropped,
// placeholders of brokered secrets replaced (terminated TLS to one of the
// secret's hosts) or refused, the body scanned for placeholders.
func (f *forwarder) prepare(req *http.Request, t policy.Target, ev *Event) error {
	removeHop(req.Header)
	req.Trailer = nil // not checked for placeholders, so not sent
	if b := f.s.broker; b != nil {
		sent, why := b.rewrite(req, t.Host, f.terminated)
		if why != "" {
			return &Refusal{Target: t.String(), Rule: "[[sandbox.egress.secrets]]", Why: why, By: "policy"}
		}
		for _, e := range sent {
			if !slices.Contains(f.sent, e) {
				f.sent = append(f.sent, e)
			}
		}
		ev.Secrets = slices.Clone(f.sent)
		if req.Body != nil && req.Body != http.NoBody {
			req.Body = b.scanBody(req.Body, t.Host, f.terminated)
		}
	}
	// net/http would add its own User-Agent where the client sent none.
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""}
	}
	f.continued = false
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		req.Header.Del("Expect")
		f.continued = true
	}
	return nil
}

type countReader struct {
	r io.ReadCloser
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countReader) Close() error { return c.r.Close() }

// roundTrip sends a prepared request and relays the response; it reports
// whether the client connection may carry another request.
func (f *forwarder) roundTrip(req *http.Request, ev *Event) bool {
	keep := !req.Close
	req.Close = false
	if f.continued {
		// The client waits for this before it sends the body.
		if _, err := f.cw.WriteString("HTTP/1.1 100 Continue\r\n\r\n"); err != nil || f.cw.Flush() != nil {
			return false
		}
	}
	body := req.Body
	var up *countReader
	if req.Body != nil && req.Body != http.NoBody {
		up = &countReader{r: req.Body}
		req.Body = up
	}
	err := req.Write(bulkWriter{f.up.bw})
	if err == nil {
		err = f.up.bw.Flush()
	}
	if up != nil {
		ev.BytesUp += up.n
	}
	if err != nil {
		f.closeUpstream()
		if pe := seen(body); pe != nil {
			answerError(f.cw, &Refusal{Target: ev.Host, Rule: "[[sandbox.egress.secrets]]", Why: pe.Error(), By: "policy"}, ev)
		} else {
			answerError(f.cw, &DialError{Target: f.upTarget(), Op: "send to", Err: err}, ev)
		}
		return false
	}
	resp, err := http.ReadResponse(f.up.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		if err = resp.Write(bulkWriter{f.cw}); err == nil {
			err = f.cw.Flush()
		}
		if err == nil {
			resp, err = http.ReadResponse(f.up.br, req)
		}
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		err = errors.New("the server switched protocols, which was not asked for")
	}
	if err != nil {
		f.closeUpstream()
		answerError(f.cw, &DialError{Target: f.upTarget(), Op: "read the response of", Err: err}, ev)
		return false
	}
	removeHop(resp.Header)
	down := &countReader{r: resp.Body}
	resp.Body = down
	err = resp.Write(bulkWriter{f.cw})
	if err == nil {
		err = f.cw.Flush()
	}
	resp.Body.Close()
	ev.BytesDown += down.n
	if err != nil || resp.Close {
		f.closeUpstream()
		return false
	}
	return keep
}

// bulkWriter is a buffered writer whose ReadFrom, which net/http uses to
// copy a message body of known length (or one that runs to the end of the
// connection), moves the body through a tunnel's large pooled buffer
// rather than in net's 32 KiB or bufio's 4 KiB pieces: the same bytes, in
// an eighth of the system calls. A chunked body is still re-framed by
// net/http, piece by piece.
type bulkWriter struct{ *bufio.Writer }

func (w bulkWriter) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// The wrappers keep io.CopyBuffer from calling this ReadFrom again.
	return io.CopyBuffer(struct{ io.Writer }{w.Writer}, struct{ io.Reader }{r}, *buf)
}

func (f *forwarder) upTarget() string {
	if f.up == nil {
		return "the server"
	}
	return f.up.target.String()
}

// serveTerminated reads requests inside a TLS connection warden
// terminated for a brokered secret and forwards them to the one host the
// tunnel was opened to. upErr is why the real server could not be reached
// or verified: every request is then answered with it.
func (f *forwarder) serveTerminated(t policy.Target, raw net.Conn, ev *Event, upErr error) {
	for first := true; ; first = false {
		if !first {
			raw.SetReadDeadline(time.Now().Add(f.s.idleFor))
			if _, err := f.cbr.Peek(1); err != nil {
				return
			}
		}
		raw.SetReadDeadline(time.Now().Add(f.s.headTimeout))
		start := time.Now()
		rq, req, err := readRequest(f.cbr)
		raw.SetReadDeadline(time.Time{})
		if err != nil {
			f.s.badRequest(f.cc, f.cw, err, start)
			return
		}
		if err := checkInTunnel(rq, t); err != nil {
			f.refuse(err, t, start)
			return
		}
		if upErr != nil {
			answerError(f.cw, upErr, &Event{})
			ev.Reason = upErr.Error()
			return
		}
		rev := Event{Proto: f.proto, Host: t.Host.String(), Port: int(t.Port)}
		if err := f.prepare(req, t, &rev); err != nil {
			f.refuse(err, t, start)
			return
		}
		ev.Secrets = rev.Secrets
		ok := f.roundTrip(req, &rev)
		if rev.Decision == "deny" { // a request refused inside the tunnel is an event of its own
			f.s.audit(f.cc, rev, start)
		} else if rev.Reason != "" {
			ev.Reason = rev.Reason
		}
		if !ok {
			return
		}
	}
}

// checkInTunnel holds a request read inside a tunnel to the tunnel's host:
// origin-form, and a Host header naming that host (no fronting behind it).
func checkInTunnel(rq *reqHead, t policy.Target) error {
	if rq.form != formOrigin {
		return &Refusal{Target: t.String(), Rule: "tunnel", Why: "a proxy request (CONNECT or absolute-form) inside a tunnel to " + t.String(), By: "policy"}
	}
	if !rq.hasHost {
		if rq.version == "HTTP/1.1" {
			return &Refusal{Target: t.String(), Rule: "Host header", Why: "an HTTP/1.1 request without a Host header", By: "policy"}
		}
		return nil
	}
	if err := checkHost(rq.hostRaw, t); err != nil {
		return &Refusal{Target: t.String(), Rule: "Host header", Why: err.(*HeadError).Reason + " (the tunnel's host)", By: "policy"}
	}
	return nil
}

// refuse answers and audits a request refused inside a tunnel.
func (f *forwarder) refuse(err error, t policy.Target, start time.Time) {
	ev := Event{Proto: f.proto, Host: t.Host.String(), Port: int(t.Port)}
	answerError(f.cw, err, &ev)
	f.s.audit(f.cc, ev, start)
}
