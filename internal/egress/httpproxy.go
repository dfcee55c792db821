package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// serveHTTP serves the HTTP proxy protocol on a client connection:
// CONNECT opens a tunnel; absolute-form requests are forwarded one by one,
// each decided on its own, on a kept-alive connection.
func (s *Server) serveHTTP(cc *clientConn) {
	f := &forwarder{s: s, cc: cc, cbr: cc.br, cw: bufio.NewWriter(cc.Conn), proto: "http"}
	defer f.closeUpstream()
	for first := true; ; first = false {
		if !first {
			cc.SetReadDeadline(time.Now().Add(s.idleFor))
			if _, err := cc.br.Peek(1); err != nil {
				return
			}
		}
		cc.SetReadDeadline(time.Now().Add(s.headTimeout))
		start := time.Now()
		rq, req, err := readRequest(cc.br)
		if err != nil {
			s.badRequest(cc, f.cw, err, start)
			return
		}
		cc.SetReadDeadline(time.Time{})
		switch rq.form {
		case formConnect:
			f.closeUpstream()
			s.connect(cc, f.cw, rq, start)
			return
		case formOrigin:
			s.badRequest(cc, f.cw, headErr("this is a proxy: send an absolute-form URL (http://host/path) or CONNECT"), start)
			return
		}
		if !f.absolute(rq, req, start) {
			return
		}
	}
}

// readRequest reads one request head strictly, then with net/http, and
// holds the two readings to each other.
func readRequest(br *bufio.Reader) (*reqHead, *http.Request, error) {
	head, err := peekHead(br)
	if err != nil {
		return nil, nil, err
	}
	rq, err := parseHead(head)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, nil, headErr("%v", err)
	}
	if err := rq.crossCheck(req); err != nil {
		return nil, nil, err
	}
	return rq, req, nil
}

// badRequest answers a head that could not be read (a 400 naming why) and
// audits it; a client that simply went away is not an event.
func (s *Server) badRequest(cc *clientConn, w *bufio.Writer, err error, start time.Time) {
	var he *HeadError
	if !errors.As(err, &he) {
		return
	}
	writeError(w, http.StatusBadRequest, "warden: "+he.Error())
	s.audit(cc, Event{Proto: "http", Host: "?", Decision: "deny", Rule: "request", Reason: he.Error()}, start)
}

// writeError writes a complete error response that closes the connection.
// The body is what a person reads in curl's or pip's output: it names the
// rule that refused.
func writeError(w *bufio.Writer, code int, body string) {
	body += "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Warden-Egress: refused\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
	w.Flush()
}

// refusalText is the body of a 403: the reason and the rule.
func refusalText(r *Refusal) string {
	s := "warden: egress refused: " + r.Why
	if r.Rule != "" && !strings.Contains(r.Why, r.Rule) {
		s += " (rule: " + r.Rule + ")"
	}
	if r.By != "" && r.By != "policy" && r.By != "nobody" {
		s += " (decided by " + r.By + ")"
	}
	return s
}

// answerError writes the HTTP answer for an admission or dial failure and
// fills the event's decision.
func answerError(w *bufio.Writer, err error, ev *Event) {
	if r, ok := isRefusal(err); ok {
		ev.Decision, ev.Rule, ev.Reason = "deny", r.Rule, r.Why
		if r.By != "" && r.By != "policy" {
			ev.DecidedBy = r.By
		}
		writeError(w, http.StatusForbidden, refusalText(r))
		return
	}
	ev.Reason = err.Error()
	code := http.StatusBadGateway
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		code = http.StatusGatewayTimeout
	}
	writeError(w, code, "warden: "+err.Error())
}

// connect opens a tunnel: decide, resolve and dial, answer 200, then
// inspect what the client sends first (tunnel.go).
func (s *Server) connect(cc *clientConn, w *bufio.Writer, rq *reqHead, start time.Time) {
	ev := Event{Proto: "connect", Host: rq.target.Host.String(), Port: int(rq.target.Port)}
	adm, err := s.admit(s.ctx, rq.target, cc.attribution)
	if err != nil {
		answerError(w, err, &ev)
		s.audit(cc, ev, start)
		return
	}
	ev.Decision, ev.Rule, ev.DecidedBy = "allow", adm.dec.Rule, adm.by
	up, ap, err := s.dial(s.ctx, adm)
	if err != nil {
		answerError(w, err, &ev)
		s.audit(cc, ev, start)
		return
	}
	ev.Addr = ap.String()
	if _, err := io.WriteString(w, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil || w.Flush() != nil {
		up.Close()
		s.audit(cc, ev, start)
		return
	}
	cc.startAttribution()
	s.tunnel(cc, up, adm, &ev)
	s.audit(cc, ev, start)
}
