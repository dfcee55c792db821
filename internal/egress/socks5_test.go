package egress

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	socks "golang.org/x/net/proxy"
)

func TestSOCKS5(t *testing.T) {
	t.Parallel()
	v4 := startOrigin(t, "tcp", "127.0.0.2:0")
	p := startProxy(t, baseFixture())
	port := strconv.Itoa(int(v4.port()))

	// golang.org/x/net/proxy is a real SOCKS5 client: a name goes as a
	// domain (ATYP 3), an address as ATYP 1 or 4.
	d, err := socks.SOCKS5("tcp", p.addr, nil, socks.Direct)
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(target, host string) (string, error) {
		c, err := d.Dial("tcp", target)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
		b, err := io.ReadAll(c)
		return string(b), err
	}

	t.Run("domain allowed", func(t *testing.T) {
		// allowed.test resolves to 127.0.0.1 in the fixture; the origin is on
		// 127.0.0.2, so this one goes through a table of its own.
		p2 := startProxy(t, fixture{allow: []string{"allowed.test"}, names: StaticResolver{"allowed.test": {v4.addr.Addr()}}})
		d2, _ := socks.SOCKS5("tcp", p2.addr, nil, socks.Direct)
		c, err := d2.Dial("tcp", "allowed.test:"+port)
		must(t, err == nil, "dial: %v", err)
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: allowed.test:%s\r\nConnection: close\r\n\r\n", port)
		b, _ := io.ReadAll(c)
		c.Close()
		must(t, contains(string(b), "host=allowed.test:"+port), "answer %q", b)
		ev := p2.ev.next(t)
		must(t, ev.Proto == "socks5" && ev.Host == "allowed.test" && ev.Decision == "allow", "event %+v", ev)
	})
	t.Run("IPv4 allowed by address", func(t *testing.T) {
		b, err := fetch("127.0.0.2:"+port, "127.0.0.2:"+port)
		must(t, err == nil && contains(b, "host=127.0.0.2"), "%q %v", b, err)
		ev := p.ev.next(t)
		must(t, ev.Host == "127.0.0.2" && ev.Decision == "allow" && ev.Rule == `allow "127.0.0.2"`, "event %+v", ev)
	})
	t.Run("IPv6 allowed by address", func(t *testing.T) {
		v6 := startOrigin(t, "tcp6", "[::1]:0")
		port6 := strconv.Itoa(int(v6.port()))
		b, err := fetch("[::1]:"+port6, "[::1]:"+port6)
		must(t, err == nil && contains(b, "host=[::1]"), "%q %v", b, err)
		ev := p.ev.next(t)
		must(t, ev.Host == "::1" && ev.Decision == "allow", "event %+v", ev)
	})
	for _, tc := range []struct{ name, target, want string }{
		{"IPv4 loopback no entry names", "127.0.0.1:" + port, "loopback"},
		{"metadata", "169.254.169.254:80", "metadata"},
		{"denied domain", "denied.test:" + port, "denied"},
		{"unknown domain", "unknown.test:" + port, "not in"},
		{"domain resolving to private", "priv.wild.test:80", "private"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Dial("tcp", tc.target)
			must(t, err != nil && contains(err.Error(), "not allowed by ruleset"), "dial %s: %v", tc.target, err)
			ev := p.ev.next(t)
			must(t, ev.Decision == "deny" && contains(ev.Reason, tc.want), "event %+v", ev)
		})
	}

	// Raw requests a library client would not send.
	for _, tc := range []struct {
		name   string
		greet  []byte
		req    []byte
		reply  byte
		reason string
	}{
		{"NUL in the domain", []byte{5, 1, 0}, socksDomain(1, "allowed.test\x00.evil.test", 443), socksNotAllowed, "NUL"},
		{"%00 in the domain", []byte{5, 1, 0}, socksDomain(1, "allowed.test%00.evil.test", 443), socksNotAllowed, "'%'"},
		{"domain spelling an address", []byte{5, 1, 0}, socksDomain(1, "2130706433", 80), socksNotAllowed, "numeric"},
		{"dotted-quad domain is an address", []byte{5, 1, 0}, socksDomain(1, "127.0.0.1", 80), socksNotAllowed, "loopback"},
		{"BIND", []byte{5, 1, 0}, socksDomain(2, "allowed.test", 80), socksCmdNotSupported, "command 2"},
		{"UDP ASSOCIATE", []byte{5, 1, 0}, socksDomain(3, "allowed.test", 53), socksCmdNotSupported, "command 3"},
		{"unknown address type", []byte{5, 1, 0}, []byte{5, 1, 0, 9, 0, 80}, socksATYPNotSupported, "address type"},
		{"port 0", []byte{5, 1, 0}, socksDomain(1, "allowed.test", 0), socksNotAllowed, "port 0"},
		{"IPv4-mapped loopback in ATYP 4", []byte{5, 1, 0}, append(append([]byte{5, 1, 0, 4}, net.ParseIP("::ffff:127.0.0.1").To16()...), 0, 80), socksNotAllowed, "loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", p.addr)
			must(t, err == nil, "%v", err)
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write(tc.greet)
			m := make([]byte, 2)
			_, err = io.ReadFull(c, m)
			must(t, err == nil && bytes.Equal(m, []byte{5, 0}), "method %v %v", m, err)
			c.Write(tc.req)
			r := make([]byte, 10)
			_, err = io.ReadFull(c, r)
			must(t, err == nil && r[1] == tc.reply, "reply %v %v; want code %d", r, err, tc.reply)
			ev := p.ev.next(t)
			must(t, ev.Proto == "socks5" && ev.Decision == "deny" && contains(ev.Reason, tc.reason), "event %+v", ev)
		})
	}
	t.Run("no acceptable method", func(t *testing.T) {
		c, _ := net.Dial("tcp", p.addr)
		defer c.Close()
		c.Write([]byte{5, 1, 2}) // username/password only
		m, _ := io.ReadAll(c)
		must(t, bytes.Equal(m, []byte{5, 0xff}), "answer %v", m)
	})
	t.Run("SOCKS4 is refused visibly", func(t *testing.T) {
		c, _ := net.Dial("tcp", p.addr)
		defer c.Close()
		c.Write([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0})
		m, _ := io.ReadAll(c)
		must(t, len(m) == 8 && m[1] == 0x5b, "answer %v", m)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Proto == "socks4", "event %+v", ev)
	})
}

func socksDomain(cmd byte, name string, port uint16) []byte {
	b := []byte{5, cmd, 0, 3, byte(len(name))}
	b = append(b, name...)
	return binary.BigEndian.AppendUint16(b, port)
}

func FuzzSOCKS5Request(f *testing.F) {
	f.Add([]byte{5, 1, 0}, socksDomain(1, "allowed.test", 443))
	f.Add([]byte{5, 2, 0, 2}, socksDomain(1, "allowed.test\x00.evil", 443))
	f.Add([]byte{5, 1, 0}, []byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add([]byte{5, 1, 0}, append(append([]byte{5, 1, 0, 4}, make([]byte, 16)...), 1, 187))
	f.Add([]byte{5, 0}, []byte{5, 1, 0, 3, 0, 0, 80})
	f.Fuzz(func(t *testing.T, greet, req []byte) {
		ok, err := readSOCKS5Greeting(bufio.NewReader(bytes.NewReader(greet)))
		if err != nil || !ok {
			return
		}
		q, err := readSOCKS5Request(bufio.NewReader(bytes.NewReader(req)))
		if err != nil {
			if _, isSocks := err.(*socksError); !isSocks && err != io.EOF && err != io.ErrUnexpectedEOF {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if q.port == 0 {
			t.Fatal("port 0 accepted")
		}
		tg, err := q.target()
		if err != nil {
			return
		}
		checkCanonicalTarget(t, tg.String())
		if q.atyp == socksATYPDomain && bytes.ContainsAny([]byte(q.domain), "\x00%@ ") {
			t.Fatalf("domain %q accepted", q.domain)
		}
	})
}

var _ = http.StatusOK
