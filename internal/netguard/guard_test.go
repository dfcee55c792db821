package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	refused := []struct{ ip, want string }{
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"169.254.1.1", "link-local"},
		{"169.254.169.254", "metadata"},
		{"100.100.100.200", "metadata"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "class E"},
		{"198.18.0.1", "benchmarking"},
		{"192.0.0.170", "IETF"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fd00:ec2::254", "metadata"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"::ffff:127.0.0.1", "IPv4-mapped IPv6 address embedding 127.0.0.1, a loopback"},
		{"::ffff:169.254.169.254", "metadata"},
		{"::ffff:10.1.2.3", "private"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::ffff:0:127.0.0.1", "IPv4-translated"},
		{"64:ff9b::7f00:1", "NAT64 IPv6 address embedding 127.0.0.1"},
		{"64:ff9b::a9fe:a9fe", "metadata"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:7f00:1::1", "6to4 IPv6 address embedding 127.0.0.1"},
		{"2002:a9fe:a9fe::", "metadata"},
		{"2001:0:7f00:1::", "Teredo IPv6 address (server) embedding 127.0.0.1"},
		{"2001:0:0808:0808::80ff:fffe", "Teredo IPv6 address (client) embedding 127.0.0.1"},
		{"2001:db8::1", "documentation"},
		{"100::1", "discard-only"},
	}
	for _, c := range refused {
		got := Classify(netip.MustParseAddr(c.ip))
		if !strings.Contains(got, c.want) {
			t.Errorf("Classify(%s) = %q, want it to mention %q", c.ip, got, c.want)
		}
	}
	allowed := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1", "169.253.0.1",
		"2606:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
		"2001:0:808:808::f7f7:f7f7"}
	for _, ip := range allowed {
		if got := Classify(netip.MustParseAddr(ip)); got != "" {
			t.Errorf("Classify(%s) = %q, want a public address", ip, got)
		}
	}
}

func TestCheckAllowlist(t *testing.T) {
	t.Parallel()
	g, err := New([]string{"127.0.0.1", "10.0.0.0/8", "[::1]", "Internal.Example.", "::ffff:192.168.7.0/120"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"127.0.0.1", "::ffff:127.0.0.1", "10.9.8.7", "::1", "192.168.7.9", "8.8.8.8"} {
		if err := g.Check(netip.MustParseAddr(ip)); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", ip, err)
		}
	}
	for _, ip := range []string{"127.0.0.2", "169.254.169.254", "192.168.8.1", "fd00::1"} {
		var re *RefusedError
		if err := g.Check(netip.MustParseAddr(ip)); !errors.As(err, &re) {
			t.Errorf("Check(%s) = %v, want a *RefusedError", ip, err)
		}
	}
	if !g.HostAllowed("internal.example") || !g.HostAllowed("INTERNAL.EXAMPLE.") || g.HostAllowed("example") {
		t.Error("host name allowlist does not match case-insensitively and exactly")
	}
	for _, bad := range []string{"", "10.0.0.0/33", "http://x", "a b", "host:80"} {
		if _, err := New([]string{bad}); err == nil {
			t.Errorf("New(%q) accepted a bad entry", bad)
		}
	}
}

func TestRefusedMessage(t *testing.T) {
	t.Parallel()
	err := (&Guard{}).Check(netip.MustParseAddr("127.0.0.1"))
	want := "127.0.0.1 is a loopback address; add it to security.http.allow_hosts to allow it"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// TestDialRefusedAtConnect dials a real listener on loopback by name and by
// number: the check runs on the resolved address, so a name resolving to
// 127.0.0.1 (here "localhost", as a rebinding name would) is refused too.
func TestDialRefusedAtConnect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	g, _ := New(nil)
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]"} {
		c, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort(strings.Trim(host, "[]"), port))
		var re *RefusedError
		if !errors.As(err, &re) {
			if c != nil {
				c.Close()
			}
			t.Errorf("dial %s: err = %v, want a *RefusedError", host, err)
		}
	}
	if _, err := g.DialContext(context.Background(), "udp", "8.8.8.8:53"); !errors.Is(err, ErrNotTCP) {
		t.Errorf("udp dial: err = %v, want ErrNotTCP", err)
	}
	for _, allow := range []string{"127.0.0.1", "localhost", "127.0.0.0/8"} {
		ga, _ := New([]string{allow})
		c, err := ga.DialContext(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", port))
		if allow == "localhost" {
			c, err = ga.DialContext(context.Background(), "tcp", net.JoinHostPort("localhost", port))
		}
		if err != nil {
			t.Errorf("allow %s: dial refused: %v", allow, err)
			continue
		}
		c.Close()
	}
}

// forbiddenByStdlib is an independent oracle for the fuzz target: anything
// the standard library calls loopback, private, link-local, multicast or
// unspecified, in plain or IPv4-mapped form, must be refused.
func forbiddenByStdlib(ip netip.Addr) bool {
	u := ip.Unmap()
	for _, a := range []netip.Addr{ip, u} {
		if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
			a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
			return true
		}
	}
	if u.Is4() && netip.MustParsePrefix("100.64.0.0/10").Contains(u) {
		return true
	}
	b := ip.As16()
	if ip.Is6() && nat64.Contains(ip) {
		return forbiddenByStdlib(v4(b[12:16]))
	}
	return false
}

func FuzzGuardAddress(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "8.8.8.8", "fe80::1", "169.254.169.254", "2002:7f00:1::"} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	g, _ := New(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		why := Classify(ip)
		err := g.Check(ip)
		if (why == "") != (err == nil) {
			t.Fatalf("Classify(%s) = %q but Check = %v", ip, why, err)
		}
		if forbiddenByStdlib(ip) && why == "" {
			t.Fatalf("%s is forbidden but Classify let it through", ip)
		}
		if ap := netip.AddrPortFrom(ip, 80); g.Control("tcp", ap.String(), nil) == nil && why != "" {
			t.Fatalf("Control let %s through", ap)
		}
	})
}
