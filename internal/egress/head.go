package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/wardenhq/warden/internal/egress/policy"
)

// form is the request-target form of a request head (RFC 9112 §3.2).
type form uint8

const (
	formOrigin   form = iota + 1 // "/path?q" (or "*"): inside a tunnel only
	formAbsolute                 // "http://host:port/path": plain HTTP through the proxy
	formConnect                  // "host:port": a tunnel
)

// reqHead is a request head as warden reads it before net/http does: the
// strict reading the policy is applied to. net/http then parses the same
// bytes, and the two readings must agree (crossCheck).
type reqHead struct {
	method    string
	form      form
	authority string        // connect, absolute: as written
	target    policy.Target // connect, absolute: canonical
	hostRaw   string        // the Host header's value ("" when absent)
	hasHost   bool
	version   string
}

// HeadError is a request head refused before any policy applies; it is
// answered with 400 and the reason.
type HeadError struct{ Reason string }

func (e *HeadError) Error() string { return "bad proxy request: " + e.Reason }

func headErr(format string, a ...any) error { return &HeadError{Reason: fmt.Sprintf(format, a...)} }

var errHeadTooLarge = &HeadError{Reason: fmt.Sprintf("request head larger than %d bytes", maxHead)}

// peekHead returns the next request head, through its blank line, without
// consuming it. Line ends must be CRLF: a bare CR or LF is refused at once,
// since parsers disagree on where such a line ends.
func peekHead(br *bufio.Reader) ([]byte, error) {
	n, scanned := max(br.Buffered(), 1), 0
	for {
		b, err := br.Peek(n)
		for i := scanned; i < len(b); i++ {
			switch b[i] {
			case '\n':
				if i == 0 || b[i-1] != '\r' {
					return nil, headErr("a bare LF ends a line (lines end with CRLF)")
				}
				if i >= 3 && b[i-2] == '\n' && b[i-3] == '\r' {
					return b[:i+1], nil
				}
			case '\r':
				if i+1 < len(b) && b[i+1] != '\n' {
					return nil, headErr("a bare CR inside the head")
				}
			}
		}
		// The last byte may be a CR whose LF has not arrived yet.
		scanned = max(len(b)-1, 0)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, errHeadTooLarge
			}
			return nil, err
		}
		if len(b) >= maxHead {
			return nil, errHeadTooLarge
		}
		n = max(br.Buffered(), len(b)+1)
	}
}

// maxHeaders bounds the header lines of one request.
const maxHeaders = 256

// parseHead reads a request head (as returned by peekHead) strictly.
func parseHead(head []byte) (*reqHead, error) {
	if !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		return nil, headErr("incomplete head")
	}
	lines := strings.Split(string(head[:len(head)-4]), "\r\n")
	if len(lines) > maxHeaders+1 {
		return nil, headErr("more than %d header lines", maxHeaders)
	}
	parts := strings.Split(lines[0], " ")
	if len(parts) != 3 {
		return nil, headErr("the request line must be METHOD SP TARGET SP VERSION, with single spaces")
	}
	rq := &reqHead{method: parts[0], version: parts[2]}
	if !isToken(rq.method) {
		return nil, headErr("the method %q is not a token", rq.method)
	}
	if rq.version != "HTTP/1.1" && rq.version != "HTTP/1.0" {
		return nil, headErr("version %q (HTTP/1.1 or HTTP/1.0)", rq.version)
	}
	if err := rq.parseTarget(parts[1]); err != nil {
		return nil, err
	}
	var te, cl bool
	clValue := ""
	for _, line := range lines[1:] {
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			return nil, headErr("a folded or empty header line")
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			return nil, headErr("header line %q has no valid name", clip(line))
		}
		value = strings.Trim(value, " \t")
		for i := 0; i < len(value); i++ {
			if c := value[i]; c < 0x20 && c != '\t' || c == 0x7f {
				return nil, headErr("header %s holds the control byte 0x%02x", name, c)
			}
		}
		switch strings.ToLower(name) {
		case "host":
			if rq.hasHost {
				return nil, headErr("more than one Host header")
			}
			rq.hasHost, rq.hostRaw = true, value
		case "transfer-encoding":
			te = true
		case "content-length":
			if cl && value != clValue {
				return nil, headErr("Content-Length headers disagree")
			}
			cl, clValue = true, value
		}
	}
	if te && cl {
		return nil, headErr("both Transfer-Encoding and Content-Length")
	}
	if rq.form == formAbsolute && rq.version == "HTTP/1.1" && !rq.hasHost {
		return nil, headErr("no Host header")
	}
	if rq.hasHost && rq.form != formOrigin {
		if err := checkHost(rq.hostRaw, rq.target); err != nil {
			return nil, err
		}
	}
	return rq, nil
}

func (rq *reqHead) parseTarget(t string) error {
	if rq.method == http.MethodConnect {
		tg, err := policy.ParseTarget(t)
		if err != nil {
			return headErr("CONNECT %s", reason(err))
		}
		rq.form, rq.authority, rq.target = formConnect, t, tg
		return nil
	}
	if strings.HasPrefix(t, "/") || t == "*" {
		rq.form = formOrigin
		return nil
	}
	scheme, rest, ok := strings.Cut(t, "://")
	switch {
	case !ok:
		return headErr("request target %q is neither a URL nor a path", clip(t))
	case strings.EqualFold(scheme, "https"):
		return headErr("an https:// URL must go through CONNECT (set HTTPS_PROXY)")
	case !strings.EqualFold(scheme, "http"):
		return headErr("scheme %q is not proxied (http:// and CONNECT only)", clip(scheme))
	}
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
		if rest[i] != '/' && rest[i] != '?' {
			return headErr("a fragment in the request target")
		}
	}
	if strings.ContainsRune(rest, '#') {
		return headErr("a fragment in the request target")
	}
	tg, err := parseAuthority(auth, 80)
	if err != nil {
		return headErr("URL host: %s", reason(err))
	}
	rq.form, rq.authority, rq.target = formAbsolute, auth, tg
	return nil
}

// parseAuthority parses "host" or "host:port" (def when absent).
func parseAuthority(a string, def uint16) (policy.Target, error) {
	i := strings.LastIndexByte(a, ':')
	if i < 0 || strings.HasSuffix(a, "]") {
		h, err := policy.ParseHost(a)
		return policy.Target{Host: h, Port: def}, err
	}
	return policy.ParseTarget(a)
}

// checkHost refuses a Host header naming another host than the target: a
// server behind the allowed one (a CDN, a shared front end) would route the
// request by it. A Host without a port means the target's.
func checkHost(raw string, t policy.Target) error {
	h, err := parseAuthority(raw, t.Port)
	if err != nil {
		return headErr("Host header: %s", reason(err))
	}
	if h != t {
		return headErr("the Host header %q is not the request's host %s", clip(raw), t)
	}
	return nil
}

// crossCheck holds net/http's reading of the same head to warden's.
func (rq *reqHead) crossCheck(req *http.Request) error {
	ok := req.Method == rq.method
	switch rq.form {
	case formConnect:
		ok = ok && req.URL.Host == rq.authority && req.URL.Path == ""
	case formAbsolute:
		ok = ok && strings.EqualFold(req.URL.Scheme, "http") && req.URL.Host == rq.authority && req.URL.User == nil &&
			req.Host == rq.authority
	case formOrigin:
		ok = ok && req.URL.Host == "" && req.URL.Scheme == ""
	}
	if !ok {
		return headErr("the request reads differently to two parsers")
	}
	return nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func reason(err error) string {
	var he *policy.HostError
	if errors.As(err, &he) {
		return fmt.Sprintf("%q: %s", clip(he.Input), he.Reason)
	}
	return err.Error()
}
