package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Kind is what a rule's host pattern is.
type Kind uint8

const (
	Exact    Kind = iota + 1 // one name
	Wildcard                 // every name strictly below Name
	Prefix                   // an address or a CIDR prefix
)

// Rule is one allow or deny entry.
type Rule struct {
	Text   string // as written in the configuration
	Kind   Kind
	Name   string       // Exact, Wildcard: canonical name (for a wildcard, without "*.")
	Prefix netip.Prefix // Prefix: masked; a single address is a /32 or /128
	Port   uint16       // 0: every port
}

// String is the entry as written, quoted.
func (r Rule) String() string { return fmt.Sprintf("%q", r.Text) }

// ParseRule parses one allow or deny entry: a host pattern ("github.com",
// "*.pypi.org", "10.0.0.5", "10.0.0.0/8", "[::1]", "[fd00::/8]", or a bare
// IPv6 address or prefix without a port) with an optional ":port".
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	fail := func(format string, a ...any) (Rule, error) {
		return Rule{}, fmt.Errorf("%q: %s", s, fmt.Sprintf(format, a...))
	}
	host, port := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return fail("missing ']'")
		}
		host, port = s[1:end], s[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return fail("unexpected %q after ']'", port)
		}
		port = strings.TrimPrefix(port, ":")
		if port == "" && strings.HasSuffix(s, ":") {
			return fail("empty port")
		}
		if !strings.Contains(host, ":") {
			return fail("brackets are for IPv6 addresses")
		}
	case strings.Count(s, ":") >= 2: // a bare IPv6 address or prefix
	default:
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			host, port = s[:i], s[i+1:]
			if port == "" {
				return fail("empty port")
			}
		}
	}
	if port != "" {
		p, err := ParsePort(port)
		if err != nil {
			return fail("%v", err)
		}
		r.Port = p
	}
	switch {
	case host == "*":
		return fail(`"*" alone would allow every host; use network = "host" for that`)
	case strings.ContainsRune(host, '/'):
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return fail("not a CIDR prefix: %v", err)
		}
		if p.Addr().Zone() != "" {
			return fail("an IPv6 zone is not accepted")
		}
		r.Kind, r.Prefix = Prefix, unmapPrefix(p.Masked())
	case strings.Contains(host, ":"):
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.Zone() != "" {
			return fail("not an IPv6 address")
		}
		ip = ip.Unmap()
		r.Kind, r.Prefix = Prefix, netip.PrefixFrom(ip, ip.BitLen())
	case strings.HasPrefix(host, "*."):
		h, err := ParseHost(host[2:])
		if err != nil {
			return fail("%s", reason(err))
		}
		if h.IsIP() {
			return fail("a wildcard applies to names, not addresses")
		}
		r.Kind, r.Name = Wildcard, h.Name
	case strings.ContainsRune(host, '*'):
		return fail(`a wildcard is only accepted as a leading "*." label`)
	default:
		h, err := ParseHost(host)
		if err != nil {
			return fail("%s", reason(err))
		}
		if h.IsIP() {
			r.Kind, r.Prefix = Prefix, netip.PrefixFrom(h.IP, h.IP.BitLen())
		} else {
			r.Kind, r.Name = Exact, h.Name
		}
	}
	return r, nil
}

func reason(err error) string {
	var he *HostError
	if errors.As(err, &he) {
		return he.Reason
	}
	return err.Error()
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

func (r Rule) portOK(port uint16) bool { return r.Port == 0 || r.Port == port }

// Match reports whether the rule covers the target. Name patterns match
// names only; address patterns match address literals only.
func (r Rule) Match(t Target) bool {
	if !r.portOK(t.Port) {
		return false
	}
	switch r.Kind {
	case Exact:
		return !t.Host.IsIP() && t.Host.Name == r.Name
	case Wildcard:
		return !t.Host.IsIP() && strings.HasSuffix(t.Host.Name, "."+r.Name)
	case Prefix:
		return t.Host.IsIP() && r.Prefix.Contains(t.Host.IP)
	}
	return false
}

// MatchAddr reports whether an address rule covers a resolved address.
func (r Rule) MatchAddr(ip netip.Addr, port uint16) bool {
	return r.Kind == Prefix && r.portOK(port) && r.Prefix.Contains(ip.Unmap())
}

// Explicit reports whether the rule names its destinations one by one (an
// exact name or an address range), which lets them be special addresses.
func (r Rule) Explicit() bool { return r.Kind == Exact || r.Kind == Prefix }

// Narrows reports whether w admits nothing that r does not, and nothing
// more explicitly: every target w matches, r matches, and w reaches no
// special address r would not. So an exact name under r's wildcard is not
// a narrowing (the exact entry would admit the name's private addresses).
func (r Rule) Narrows(w Rule) bool {
	if r.Port != 0 && r.Port != w.Port {
		return false
	}
	switch r.Kind {
	case Exact:
		return w.Kind == Exact && w.Name == r.Name
	case Wildcard:
		return w.Kind == Wildcard && (w.Name == r.Name || strings.HasSuffix(w.Name, "."+r.Name))
	case Prefix:
		return w.Kind == Prefix && w.Prefix.Addr().BitLen() == r.Prefix.Addr().BitLen() &&
			w.Prefix.Bits() >= r.Prefix.Bits() && r.Prefix.Contains(w.Prefix.Addr())
	}
	return false
}
