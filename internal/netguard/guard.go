package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// RefusedError is returned (wrapped by the net package's errors) when a
// connection to a forbidden address was refused.
type RefusedError struct {
	Addr   netip.Addr // the address the socket was about to connect to
	Reason string     // "a loopback address", ...
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is %s; add it to security.http.allow_hosts to allow it", e.Addr, e.Reason)
}

// ErrNotTCP is returned for a dial on a network other than TCP.
var ErrNotTCP = errors.New("only TCP connections are allowed")

type rangeRule struct {
	prefix netip.Prefix
	what   string
}

const (
	private = "a private address"
	docs    = "a documentation (reserved) address"
)

func rules(list ...string) []rangeRule {
	out := make([]rangeRule, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, rangeRule{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// The first rule that contains an address names it, so the specific ones
// (metadata, broadcast) come before the ranges that hold them.
var v4Rules = rules(
	"169.254.169.254/32", "a cloud metadata address",
	"100.100.100.200/32", "a cloud metadata address",
	"255.255.255.255/32", "the broadcast address",
	"0.0.0.0/8", "an unspecified (\"this network\") address",
	"10.0.0.0/8", private,
	"100.64.0.0/10", "a carrier-grade NAT (shared) address",
	"127.0.0.0/8", "a loopback address",
	"169.254.0.0/16", "a link-local address",
	"172.16.0.0/12", private,
	"192.0.0.0/24", "an IETF protocol assignment (reserved) address",
	"192.0.2.0/24", docs,
	"192.88.99.0/24", "a 6to4 relay anycast (reserved) address",
	"192.168.0.0/16", private,
	"198.18.0.0/15", "a benchmarking (reserved) address",
	"198.51.100.0/24", docs,
	"203.0.113.0/24", docs,
	"224.0.0.0/4", "a multicast address",
	"240.0.0.0/4", "a reserved (class E) address",
)

var v6Rules = rules(
	"::/128", "an unspecified address",
	"::1/128", "a loopback address",
	"fd00:ec2::254/128", "a cloud metadata address",
	"fe80::/10", "a link-local address",
	"fec0::/10", "a site-local (private) address",
	"fc00::/7", "a unique local (private) address",
	"ff00::/8", "a multicast address",
	"100::/64", "a discard-only (reserved) address",
	"2001:db8::/32", docs,
	"2001:10::/28", "an ORCHID (reserved) address",
	"2001:20::/28", "an ORCHID (reserved) address",
	"64:ff9b:1::/48", "a local-use NAT64 (private) address",
)

// Forms of IPv6 address that carry an IPv4 address the packets end up at.
var (
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (SIIT)
	compatible = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated)
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
)

// Classify reports why ip must not be reached from a model's request: the
// returned reason ("a loopback address", ...) is empty when ip is an
// ordinary public unicast address.
func Classify(ip netip.Addr) string {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return "not a valid IP address"
	}
	if ip.Is4() {
		return classify4(ip)
	}
	if ip.Is4In6() {
		return embedded(ip.Unmap(), "an IPv4-mapped IPv6 address")
	}
	for _, r := range v6Rules {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	b := ip.As16()
	switch {
	case translated.Contains(ip):
		return embedded(v4(b[12:16]), "an IPv4-translated IPv6 address")
	case compatible.Contains(ip):
		return embedded(v4(b[12:16]), "an IPv4-compatible IPv6 address")
	case nat64.Contains(ip):
		return embedded(v4(b[12:16]), "a NAT64 IPv6 address")
	case sixToFour.Contains(ip):
		return embedded(v4(b[2:6]), "a 6to4 IPv6 address")
	case teredo.Contains(ip):
		if why := embedded(v4(b[4:8]), "a Teredo IPv6 address (server)"); why != "" {
			return why
		}
		var c [4]byte
		for i := range c {
			c[i] = b[12+i] ^ 0xff
		}
		return embedded(netip.AddrFrom4(c), "a Teredo IPv6 address (client)")
	}
	return ""
}

func classify4(ip netip.Addr) string {
	for _, r := range v4Rules {
		if r.prefix.Contains(ip) {
			return r.what
		}
	}
	return ""
}

func v4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b)) }

func embedded(ip4 netip.Addr, form string) string {
	if why := classify4(ip4); why != "" {
		return fmt.Sprintf("%s embedding %s, %s", form, ip4, why)
	}
	return ""
}

// Guard decides which addresses may be dialled. The zero Guard allows no
// special-purpose address; New adds an allowlist.
type Guard struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
}

// New returns a Guard that lets through the host names, IP addresses and
// CIDR prefixes in allow (security.http.allow_hosts). An entry that is none
// of those is an error naming it.
func New(allow []string) (*Guard, error) {
	g := &Guard{hosts: make(map[string]bool)}
	for _, raw := range allow {
		e := strings.TrimSpace(raw)
		if e == "" {
			return nil, fmt.Errorf("security.http.allow_hosts: empty entry")
		}
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("security.http.allow_hosts: %q is not a valid CIDR prefix: %w", raw, err)
			}
			g.prefixes = append(g.prefixes, unmapPrefix(p.Masked()))
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
			ip = ip.WithZone("").Unmap()
			g.prefixes = append(g.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		h := normHost(e)
		if !validHostName(h) {
			return nil, fmt.Errorf("security.http.allow_hosts: %q is not a host name, an IP address or a CIDR prefix", raw)
		}
		g.hosts[h] = true
	}
	return g, nil
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// HostAllowed reports whether the host name host is on the allowlist.
func (g *Guard) HostAllowed(host string) bool { return g.hosts[normHost(host)] }

// Check returns nil when ip may be dialled, else a *RefusedError.
func (g *Guard) Check(ip netip.Addr) error {
	ip = ip.WithZone("")
	why := Classify(ip)
	if why == "" {
		return nil
	}
	u := ip.Unmap()
	for _, p := range g.prefixes {
		if p.Contains(u) || p.Contains(ip) {
			return nil
		}
	}
	return &RefusedError{Addr: ip, Reason: why}
}

// Control is a net.Dialer Control function: it runs after name resolution,
// just before connect(2), with the address the socket will connect to.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%s: %w", network, ErrNotTCP)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to dial %q: cannot parse the address: %w", address, err)
	}
	return g.Check(ap.Addr())
}

// Dialer returns a dialer whose connections are checked by g.
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: -1, Control: g.Control}
}

// DialContext dials addr ("host:port") over TCP. Every address the name
// resolves to is checked at connect time, unless host is an allowed name.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("%s: %w", network, ErrNotTCP)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := g.Dialer(0)
	if g.HostAllowed(host) {
		d.Control = nil
	}
	return d.DialContext(ctx, network, addr)
}
