package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The bypass table: each row tries to get past the proxy at the package
// level, with real sockets on loopback, and says what must happen and what
// the audit must record. The same attacks run against a real jail in the
// sandbox's tests.

var lo = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

func baseFixture() fixture {
	return fixture{
		allow: []string{"allowed.test", "other.test", "*.wild.test", "127.0.0.2", "[::1]"},
		deny:  []string{"denied.test", "*.denied.wild.test"},
		names: StaticResolver{
			"allowed.test":          lo,
			"other.test":            lo,
			"denied.test":           lo,
			"unknown.test":          lo,
			"pub.wild.test":         {netip.MustParseAddr("93.184.216.34")},
			"lo.wild.test":          lo,
			"priv.wild.test":        {netip.MustParseAddr("10.1.2.3")},
			"meta.wild.test":        {netip.MustParseAddr("169.254.169.254")},
			"meta6.wild.test":       {netip.MustParseAddr("fd00:ec2::254")},
			"mapped.wild.test":      {netip.MustParseAddr("::ffff:127.0.0.1")},
			"x.denied.wild.test":    lo,
			"xn--llowed-3fg.test":   lo, // "аllowed.test" with a Cyrillic а
			"allowed.test.evil.com": lo,
		},
		unknown: "deny",
	}
}

func TestAbsoluteForm(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0")
	p := startProxy(t, baseFixture())
	c := p.client(p.addr)
	port := strconv.Itoa(int(up.port()))

	for _, tc := range []struct {
		name, url string
		code      int
		body      string // substring of the response body
		host      string // the event's host
		decision  string
		rule      string
	}{
		{"allowed name", "http://allowed.test:" + port + "/x", 200, "host=allowed.test:" + port, "allowed.test", "allow", `allow "allowed.test"`},
		{"mixed case is the same name", "http://ALLOWED.Test:" + port + "/", 200, "host=", "allowed.test", "allow", `allow "allowed.test"`},
		{"denied name", "http://denied.test:" + port + "/", 403, `deny "denied.test"`, "denied.test", "deny", `deny "denied.test"`},
		{"unknown name", "http://unknown.test:" + port + "/", 403, `unknown = "deny"`, "unknown.test", "deny", `unknown = "deny"`},
		{"IDNA look-alike is another name", "http://xn--llowed-3fg.test:" + port + "/", 403, "xn--llowed-3fg.test", "xn--llowed-3fg.test", "deny", `unknown = "deny"`},
		{"suffix trick", "http://allowed.test.evil.com:" + port + "/", 403, "not in", "allowed.test.evil.com", "deny", `unknown = "deny"`},
		{"IPv4 loopback literal", "http://127.0.0.1:" + port + "/", 403, "loopback", "127.0.0.1", "deny", "special address"},
		{"wildcard name resolving to loopback", "http://lo.wild.test:" + port + "/", 403, "resolves only to refused addresses", "lo.wild.test", "deny", `allow "*.wild.test"`},
		{"wildcard name resolving to a mapped loopback", "http://mapped.wild.test:" + port + "/", 403, "loopback", "mapped.wild.test", "deny", `allow "*.wild.test"`},
		{"wildcard name resolving to private", "http://priv.wild.test:" + port + "/", 403, "private", "priv.wild.test", "deny", `allow "*.wild.test"`},
		{"wildcard name resolving to metadata", "http://meta.wild.test/latest/meta-data/", 403, "metadata", "meta.wild.test", "deny", `allow "*.wild.test"`},
		{"wildcard name resolving to IPv6 metadata", "http://meta6.wild.test/", 403, "metadata", "meta6.wild.test", "deny", `allow "*.wild.test"`},
		{"deny inside an allowed wildcard", "http://x.denied.wild.test:" + port + "/", 403, "denied", "x.denied.wild.test", "deny", `deny "*.denied.wild.test"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, c, tc.url)
			if code != tc.code || !contains(body, tc.body) {
				t.Errorf("GET %s = %d %q; want %d with %q", tc.url, code, body, tc.code, tc.body)
			}
			ev := p.ev.next(t)
			if ev.Host != tc.host || ev.Decision != tc.decision || ev.Rule != tc.rule || ev.Proto != "http" {
				t.Errorf("event %+v; want host %s, %s by %s", ev, tc.host, tc.decision, tc.rule)
			}
			if tc.code == 200 && (ev.BytesDown == 0 || ev.Addr != "127.0.0.1:"+port) {
				t.Errorf("allowed event without bytes or address: %+v", ev)
			}
		})
	}
}

// Requests the proxy must refuse before any policy applies: each is
// answered 400 with the reason, and audited.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	p := startProxy(t, baseFixture())
	for _, tc := range []struct{ name, req, want string }{
		{"Host header differs from the URL", "GET http://allowed.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", "is not the request's host"},
		{"Host header with another port", "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n", "is not the request's host"},
		{"no Host header", "GET http://allowed.test/ HTTP/1.1\r\n\r\n", "no Host header"},
		{"two Host headers", "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nHost: evil.test\r\n\r\n", "more than one Host"},
		{"NUL in the URL host", "GET http://allowed.test\x00.evil.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "NUL"},
		{"%00 in the URL host", "GET http://allowed.test%00.evil.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "'%'"},
		{"userinfo", "GET http://allowed.test@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", "'@'"},
		{"decimal IPv4", "GET http://2130706433/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n", "numeric"},
		{"octal IPv4", "GET http://0177.0.0.1/ HTTP/1.1\r\nHost: 0177.0.0.1\r\n\r\n", "numeric"},
		{"hex IPv4", "GET http://0x7f.0.0.1/ HTTP/1.1\r\nHost: 0x7f.0.0.1\r\n\r\n", "numeric"},
		{"short IPv4", "GET http://127.1/ HTTP/1.1\r\nHost: 127.1\r\n\r\n", "numeric"},
		{"bare LF", "GET http://allowed.test/ HTTP/1.1\nHost: allowed.test\n\n", "bare LF"},
		{"folded header", "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX: a\r\n b\r\n\r\n", "folded"},
		{"TE and CL", "POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "both"},
		{"https URL", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "CONNECT"},
		{"origin-form to the proxy", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "absolute-form"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "version"},
		{"CONNECT with a NUL", "CONNECT allowed.test\x00.evil.test:443 HTTP/1.1\r\n\r\n", "NUL"},
		{"CONNECT with a trailing-dot decimal IP", "CONNECT 2130706433.:443 HTTP/1.1\r\n\r\n", "numeric"},
		{"CONNECT without a port", "CONNECT allowed.test HTTP/1.1\r\n\r\n", "port"},
		{"CONNECT to an unbracketed IPv6", "CONNECT ::1:443 HTTP/1.1\r\n\r\n", "':'"},
		{"CONNECT with a zone", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", "zone"},
		{"CONNECT with a different Host", "CONNECT allowed.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n", "is not the request's host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := p.raw(t, tc.req)
			if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !contains(got, tc.want) {
				t.Errorf("answer %q; want 400 mentioning %q", got, tc.want)
			}
			ev := p.ev.next(t)
			if ev.Decision != "deny" || !contains(ev.Reason, tc.want) {
				t.Errorf("event %+v", ev)
			}
		})
	}
}

func TestConnect(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0", "allowed.test", "other.test")
	p := startProxy(t, baseFixture())
	port := strconv.Itoa(int(up.port()))

	t.Run("https through CONNECT", func(t *testing.T) {
		code, body := get(t, p.client(p.addr), "https://allowed.test:"+port+"/x")
		must(t, code == 200 && contains(body, "host=allowed.test"), "got %d %q", code, body)
		ev := p.ev.next(t)
		must(t, ev.Decision == "allow" && ev.Proto == "connect" && ev.TLS == "sni" && ev.BytesUp > 0 && ev.BytesDown > 0,
			"event %+v", ev)
	})
	t.Run("trailing dot and case", func(t *testing.T) {
		c, why := p.connect(t, "Allowed.TEST.:"+port)
		must(t, c != nil, "refused: %s", why)
		tc := tls.Client(c, &tls.Config{ServerName: "allowed.test", RootCAs: p.roots})
		must(t, tc.Handshake() == nil, "handshake failed")
		tc.Close()
		ev := p.ev.next(t)
		must(t, ev.Host == "allowed.test" && ev.Decision == "allow", "event %+v", ev)
	})

	for _, tc := range []struct {
		name, target, want, rule string
	}{
		{"IPv4 loopback literal", "127.0.0.1:" + port, "loopback", "special address"},
		{"IPv4-mapped loopback", "[::ffff:127.0.0.1]:" + port, "loopback", "special address"},
		{"IPv6 loopback literal on a port no entry names", "[::2]:" + port, "", ""},
		{"metadata literal", "169.254.169.254:80", "metadata", "special address"},
		{"IPv6 metadata literal", "[fd00:ec2::254]:80", "metadata", "special address"},
		{"NAT64 loopback", "[64:ff9b::7f00:1]:80", "NAT64", "special address"},
		{"name resolving to private", "priv.wild.test:443", "private", `allow "*.wild.test"`},
		{"denied name", "denied.test:" + port, "denied", `deny "denied.test"`},
		{"unknown name", "unknown.test:" + port, "not in", `unknown = "deny"`},
		{"name not in DNS", "nxdomain.wild.test:443", "could not resolve", `allow "*.wild.test"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, why := p.connect(t, tc.target)
			if c != nil {
				c.Close()
				t.Fatalf("CONNECT %s was opened", tc.target)
			}
			ev := p.ev.next(t)
			if tc.want == "" { // [::2] is a loopback no entry names
				must(t, strings.HasPrefix(why, "403") && ev.Decision == "deny", "%s %+v", why, ev)
				return
			}
			must(t, contains(why, tc.want), "answer %q; want it to mention %q", why, tc.want)
			must(t, ev.Rule == tc.rule && contains(ev.Reason, tc.want), "event %+v", ev)
			if tc.rule != `allow "*.wild.test"` {
				must(t, strings.HasPrefix(why, "403 "), "answer %q; want 403", why)
			}
		})
	}

	t.Run("SNI differs from the CONNECT host", func(t *testing.T) {
		c, why := p.connect(t, "allowed.test:"+port)
		must(t, c != nil, "refused: %s", why)
		defer c.Close()
		tc := tls.Client(c, &tls.Config{ServerName: "other.test", RootCAs: p.roots})
		err := tc.Handshake()
		must(t, err != nil && contains(err.Error(), "access denied"), "handshake: %v", err)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Rule == "TLS server name" && contains(ev.Reason, "names other.test"), "event %+v", ev)
	})
	t.Run("no SNI to a name", func(t *testing.T) {
		c, _ := p.connect(t, "allowed.test:"+port)
		defer c.Close()
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) // no ServerName: no SNI
		must(t, tc.Handshake() != nil, "handshake without SNI succeeded")
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && contains(ev.Reason, "no SNI"), "event %+v", ev)
	})
	t.Run("Encrypted ClientHello", func(t *testing.T) {
		c, _ := p.connect(t, "allowed.test:"+port)
		defer c.Close()
		hello := captureHello(t, "allowed.test")
		// An outer ECH extension: type 0, HKDF-SHA256/AES-128-GCM, config 0x42,
		// a 32-byte enc and a 16-byte payload.
		ech := append([]byte{0, 0, 1, 0, 1, 0x42, 0, 32}, make([]byte, 32)...)
		ech = append(append(ech, 0, 16), make([]byte, 16)...)
		c.Write(addExtension(t, hello, extensionECH, ech))
		b, _ := io.ReadAll(c)
		must(t, len(b) == 7 && b[0] == 0x15 && b[6] == 49, "answer %x; want an access_denied alert", b)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && contains(ev.Reason, "Encrypted ClientHello"), "event %+v", ev)
	})
	t.Run("plain HTTP in a tunnel with another Host", func(t *testing.T) {
		c, _ := p.connect(t, "allowed.test:"+port)
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n")
		b, _ := io.ReadAll(c)
		must(t, strings.HasPrefix(string(b), "HTTP/1.1 403") && contains(string(b), "evil.test"), "answer %q", b)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Rule == "Host header", "event %+v", ev)
	})
	t.Run("second request in a plain tunnel names another host", func(t *testing.T) {
		plain := startOrigin(t, "tcp", "127.0.0.1:0")
		c, _ := p.connect(t, "allowed.test:"+strconv.Itoa(int(plain.port())))
		defer c.Close()
		host := "allowed.test:" + strconv.Itoa(int(plain.port()))
		io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		must(t, err == nil && resp.StatusCode == 200, "first request: %v", err)
		io.Copy(io.Discard, resp.Body)
		io.WriteString(c, "GET /2 HTTP/1.1\r\nHost: evil.test\r\n\r\n")
		b, _ := io.ReadAll(br)
		must(t, strings.HasPrefix(string(b), "HTTP/1.1 403") && !contains(string(b), "host=evil.test"), "answer %q", b)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Rule == "Host header", "event %+v", ev)
	})
	t.Run("relayed CONNECT inside a tunnel", func(t *testing.T) {
		plain := startOrigin(t, "tcp", "127.0.0.1:0")
		c, _ := p.connect(t, "allowed.test:"+strconv.Itoa(int(plain.port())))
		defer c.Close()
		io.WriteString(c, "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n")
		b, _ := io.ReadAll(c)
		must(t, strings.HasPrefix(string(b), "HTTP/1.1 403"), "answer %q", b)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny", "event %+v", ev)
	})
	t.Run("server speaks first, opaque protocol", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err == nil, "%v", err)
		defer l.Close()
		go func() {
			s, err := l.Accept()
			if err != nil {
				return
			}
			defer s.Close()
			io.WriteString(s, "220 banner\r\n")
			b := make([]byte, 5)
			io.ReadFull(s, b)
			s.Write(b)
		}()
		c, _ := p.connect(t, "allowed.test:"+strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
		defer c.Close()
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		must(t, line == "220 banner\r\n", "banner %q", line)
		c.Write([]byte{0, 1, 2, 3, 4})
		echo := make([]byte, 5)
		_, err = io.ReadFull(br, echo)
		must(t, err == nil && echo[4] == 4, "echo %v %v", echo, err)
		c.Close()
		ev := p.ev.next(t)
		must(t, ev.Decision == "allow" && ev.BytesUp == 5 && ev.BytesDown == 17, "event %+v", ev)
	})
}

// A redirect to a denied host is a second request the proxy decides.
func TestRedirectToDenied(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0")
	p := startProxy(t, baseFixture())
	port := strconv.Itoa(int(up.port()))
	code, body := get(t, p.client(p.addr), "http://allowed.test:"+port+"/redirect?to=http://denied.test:"+port+"/")
	must(t, code == 403 && contains(body, "denied.test"), "got %d %q", code, body)
	first, second := p.ev.next(t), p.ev.next(t)
	if first.Host != "allowed.test" { // the first is audited after its response is sent
		first, second = second, first
	}
	must(t, first.Host == "allowed.test" && first.Decision == "allow", "first %+v", first)
	must(t, second.Host == "denied.test" && second.Decision == "deny", "second %+v", second)
}

// captureHello returns the first flight a Go TLS client sends for name.
func captureHello(t *testing.T, name string) []byte {
	t.Helper()
	a, b := net.Pipe()
	go func() {
		tls.Client(a, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
		a.Close()
	}()
	b.SetDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, 5)
	io.ReadFull(b, hdr)
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	io.ReadFull(b, body)
	b.Close()
	return append(hdr, body...)
}

// addExtension appends an extension to a one-record ClientHello.
func addExtension(t *testing.T, rec []byte, typ uint16, data []byte) []byte {
	t.Helper()
	out := append([]byte(nil), rec...)
	hs := out[5:]
	p := 4 + 2 + 32
	p += 1 + int(hs[p])
	p += 2 + (int(hs[p])<<8 | int(hs[p+1]))
	p += 1 + int(hs[p])
	extLen := int(hs[p])<<8 | int(hs[p+1])
	ext := append([]byte{byte(typ >> 8), byte(typ), byte(len(data) >> 8), byte(len(data))}, data...)
	extLen += len(ext)
	out[5+p], out[5+p+1] = byte(extLen>>8), byte(extLen)
	out = append(out, ext...)
	hsLen := len(out) - 5 - 4
	out[6], out[7], out[8] = byte(hsLen>>16), byte(hsLen>>8), byte(hsLen)
	recLen := len(out) - 5
	out[3], out[4] = byte(recLen>>8), byte(recLen)
	if out[5] != 1 {
		t.Fatalf("not a ClientHello: %x", out[:10])
	}
	return out
}

var _ = fmt.Sprint

// Absolute-form requests on one kept-alive connection: each decided on
// its own, HEAD without a body, a chunked upload re-framed, the client's
// headers passed (no User-Agent added).
func TestAbsoluteKeepAlive(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0")
	p := startProxy(t, baseFixture())
	port := strconv.Itoa(int(up.port()))
	c, err := net.Dial("tcp", p.addr)
	must(t, err == nil, "%v", err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	send := func(req string) *http.Response {
		t.Helper()
		io.WriteString(c, req)
		resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(req)[0]})
		must(t, err == nil, "%v", err)
		return resp
	}
	resp := send("HEAD http://allowed.test:" + port + "/ HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n\r\n")
	must(t, resp.StatusCode == 200 && resp.ContentLength > 0, "HEAD: %+v", resp)
	resp = send("POST http://allowed.test:" + port + "/ HTTP/1.1\r\nHost: allowed.test:" + port +
		"\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
	b, _ := io.ReadAll(resp.Body)
	must(t, resp.StatusCode == 200 && contains(string(b), "body=abcde") && contains(string(b), "user-agent=\n"), "POST: %q", b)
	resp = send("GET http://denied.test:" + port + "/ HTTP/1.1\r\nHost: denied.test:" + port + "\r\n\r\n")
	b, _ = io.ReadAll(resp.Body)
	must(t, resp.StatusCode == 403 && resp.Close && contains(string(b), "denied"), "denied: %d %q", resp.StatusCode, b)
	for _, want := range []string{"allow", "allow", "deny"} {
		ev := p.ev.next(t)
		must(t, ev.Decision == want, "event %+v; want %s", ev, want)
	}
}
