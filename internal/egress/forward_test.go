package egress

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawOrigin is an HTTP server on loopback that answers each request with
// bytes a test chose for its path (served as written, framing and all),
// and records the requests it received, in order.
type rawOrigin struct {
	l    net.Listener
	port string

	mu   sync.Mutex
	seen []string // "METHOD path host"
}

func startRawOrigin(t *testing.T, answers map[string][]byte) *rawOrigin {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err == nil, "%v", err)
	o := &rawOrigin{l: l, port: strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					o.mu.Lock()
					o.seen = append(o.seen, req.Method+" "+req.URL.Path+" "+req.Host)
					o.mu.Unlock()
					a, ok := answers[req.URL.Path]
					if !ok {
						a = []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
					}
					if _, err := c.Write(a); err != nil {
						return
					}
					if bytes.Contains(a, []byte("Connection: close")) {
						return
					}
				}
			}()
		}
	}()
	return o
}

func (o *rawOrigin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// Bodies through the absolute-form forwarder arrive byte for byte, however
// they are framed: a large Content-Length body (carried in large pieces),
// a body that runs to the end of the connection, and a chunked one
// (re-framed); and a large upload with a Content-Length.
func TestForwardBodies(t *testing.T) {
	t.Parallel()
	big := make([]byte, 5<<20+123)
	rand.Read(big)
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
	o := startRawOrigin(t, map[string][]byte{
		"/length": append([]byte("HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(big))+"\r\n\r\n"), big...),
		"/eof":    append([]byte("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"), big...),
		"/chunks": []byte(chunked),
	})
	p := startProxy(t, baseFixture())
	c := p.client(p.addr)
	for _, tc := range []struct {
		path string
		want []byte
	}{{"/length", big}, {"/eof", big}, {"/chunks", []byte("hello world")}} {
		resp, err := c.Get("http://allowed.test:" + o.port + tc.path)
		must(t, err == nil, "GET %s: %v", tc.path, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(b, tc.want) {
			t.Errorf("GET %s: %d bytes (%v); want %d bytes, the same", tc.path, len(b), err, len(tc.want))
		}
		if ev := p.ev.next(t); ev.Decision != "allow" || ev.BytesDown < int64(len(tc.want)) {
			t.Errorf("GET %s: event %+v", tc.path, ev)
		}
	}

	up := startOrigin(t, "tcp", "127.0.0.1:0")
	upload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	resp, err := c.Post("http://allowed.test:"+strconv.Itoa(int(up.port()))+"/", "application/octet-stream", bytes.NewReader(upload))
	must(t, err == nil, "POST: %v", err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, bytes.Contains(b, append([]byte("body="), upload...)), "POST: the origin saw %d bytes", len(b))
	if ev := p.ev.next(t); ev.BytesUp < int64(len(upload)) {
		t.Errorf("POST: event %+v", ev)
	}
}

// A response cut short of its Content-Length is not passed off as whole:
// the client's connection ends and its read fails.
func TestForwardTruncatedBody(t *testing.T) {
	t.Parallel()
	o := startRawOrigin(t, map[string][]byte{
		"/short": []byte("HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\nonly this"),
	})
	p := startProxy(t, baseFixture())
	resp, err := p.client(p.addr).Get("http://allowed.test:" + o.port + "/short")
	if err == nil {
		var b []byte
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		must(t, len(b) < 1000000, "read %d bytes", len(b))
	}
	must(t, err != nil, "the truncated response read as whole")
	p.ev.next(t)
}

// Smuggling and pipelining through the absolute-form forwarder: every
// request is read and decided on its own, whatever shares its write, its
// connection or its body; and an origin cannot answer for another host by
// writing past the end of its body.
func TestForwardSmuggling(t *testing.T) {
	t.Parallel()
	o := startRawOrigin(t, map[string][]byte{
		"/a": []byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA"),
		// Past its 1-byte body, a second response for whatever comes next.
		"/trailing": []byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nTHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"),
	})
	p := startProxy(t, baseFixture())
	h := func(host, path string, extra ...string) string {
		return "GET http://" + host + ":" + o.port + path + " HTTP/1.1\r\nHost: " + host + ":" + o.port + "\r\n" +
			strings.Join(extra, "") + "\r\n"
	}
	// exchange writes reqs in one write and reads the answers to the
	// requests named in methods.
	exchange := func(t *testing.T, payload string, methods ...string) []string {
		t.Helper()
		c, err := net.Dial("tcp", p.addr)
		must(t, err == nil, "%v", err)
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, payload)
		br := bufio.NewReader(c)
		var out []string
		for _, m := range methods {
			resp, err := http.ReadResponse(br, &http.Request{Method: m})
			if err != nil {
				out = append(out, "error: "+err.Error())
				break
			}
			b, _ := io.ReadAll(resp.Body)
			out = append(out, fmt.Sprintf("%d %s", resp.StatusCode, b))
		}
		// Nothing else follows the last answer but the end of the connection.
		rest, _ := io.ReadAll(br)
		if len(rest) > 0 {
			out = append(out, "then: "+string(rest))
		}
		return out
	}
	count := func(t *testing.T, n int) []Event {
		t.Helper()
		var evs []Event
		for range n {
			evs = append(evs, p.ev.next(t))
		}
		return evs
	}

	t.Run("two requests in one write, the second to a denied host", func(t *testing.T) {
		got := exchange(t, h("allowed.test", "/a")+h("denied.test", "/a"), "GET", "GET")
		must(t, len(got) == 2 && got[0] == "200 A" && strings.HasPrefix(got[1], "403 ") && contains(got[1], `deny "denied.test"`), "answers %q", got)
		evs := count(t, 2)
		must(t, evs[0].Decision == "allow" && evs[1].Decision == "deny" && evs[1].Host == "denied.test", "events %+v", evs)
	})
	t.Run("a request hidden in a body is a body", func(t *testing.T) {
		hidden := h("denied.test", "/a")
		post := "POST http://allowed.test:" + o.port + "/a HTTP/1.1\r\nHost: allowed.test:" + o.port +
			"\r\nContent-Length: " + strconv.Itoa(len(hidden)) + "\r\n\r\n" + hidden
		before := len(o.requests())
		got := exchange(t, post+h("denied.test", "/a"), "POST", "GET")
		must(t, len(got) == 2 && got[0] == "200 A" && strings.HasPrefix(got[1], "403 "), "answers %q", got)
		reqs := o.requests()[before:]
		must(t, len(reqs) == 1 && reqs[0] == "POST /a allowed.test:"+o.port, "the origin saw %q", reqs)
		count(t, 2)
	})
	t.Run("Content-Length against Transfer-Encoding", func(t *testing.T) {
		for _, req := range []string{
			"POST http://allowed.test:" + o.port + "/a HTTP/1.1\r\nHost: allowed.test:" + o.port +
				"\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + h("denied.test", "/a"),
			"POST http://allowed.test:" + o.port + "/a HTTP/1.1\r\nHost: allowed.test:" + o.port +
				"\r\nTransfer-Encoding: chunked\r\nContent-Length: 60\r\n\r\n0\r\n\r\n" + h("denied.test", "/a"),
			"POST http://allowed.test:" + o.port + "/a HTTP/1.1\r\nHost: allowed.test:" + o.port +
				"\r\nContent-Length: 4\r\nContent-Length: 60\r\n\r\n" + h("denied.test", "/a"),
			"POST http://allowed.test:" + o.port + "/a HTTP/1.1\r\nHost: allowed.test:" + o.port +
				"\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n" + h("denied.test", "/a"),
		} {
			got := exchange(t, req, "POST")
			must(t, len(got) == 1 && (strings.HasPrefix(got[0], "400 ") || strings.HasPrefix(got[0], "403 ")), "%q: answers %q", req, got)
			ev := p.ev.next(t)
			must(t, ev.Decision == "deny" && ev.Host != "denied.test", "%q: event %+v", req, ev)
		}
	})
	t.Run("bytes past a response's body do not answer the next request", func(t *testing.T) {
		got := exchange(t, h("allowed.test", "/trailing")+h("other.test", "/a", "Connection: close\r\n"), "GET", "GET")
		must(t, len(got) == 2 && got[0] == "200 T" && got[1] == "200 A", "answers %q", got)
		count(t, 2)
	})
}

// A loopback client's socket gets the capped send buffer; a socket that is
// not TCP is left alone.
func TestTuneClient(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err == nil, "%v", err)
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	must(t, err == nil, "%v", err)
	defer c.Close()
	s, err := l.Accept()
	must(t, err == nil, "%v", err)
	defer s.Close()
	tuneClient(s)
	raw, _ := s.(*net.TCPConn).SyscallConn()
	var got int
	raw.Control(func(fd uintptr) { got, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF) })
	if got != 2*clientSendBuffer { // the kernel doubles what it is given
		t.Errorf("SO_SNDBUF = %d; want %d", got, 2*clientSendBuffer)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	tuneClient(a)
}
