package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host is a canonical destination host: exactly one of Name and IP is set.
type Host struct {
	// Name is an ASCII host name: lower case, no trailing dot, Unicode
	// labels as IDNA A-labels ("xn--…").
	Name string
	// IP is an address literal; an IPv4-mapped IPv6 address is stored as
	// the IPv4 address it maps.
	IP netip.Addr
}

// IsIP reports whether h is an address literal.
func (h Host) IsIP() bool { return h.IP.IsValid() }

// String is the name, or the address without brackets.
func (h Host) String() string {
	if h.IsIP() {
		return h.IP.String()
	}
	return h.Name
}

// Target is a destination: a canonical host and a TCP port (1–65535).
type Target struct {
	Host Host
	Port uint16
}

// String is "host:port", with IPv6 addresses in brackets.
func (t Target) String() string {
	h := t.Host.String()
	if t.Host.IP.Is6() {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(int(t.Port))
}

// HostError says why a host was refused. Input is the text as received
// (quoted when shown).
type HostError struct {
	Input  string
	Reason string
}

func (e *HostError) Error() string {
	in := e.Input
	if len(in) > 100 {
		in = in[:100] + "…"
	}
	return fmt.Sprintf("host %q refused: %s", in, e.Reason)
}

// MaxNameLen is the longest host name accepted (RFC 1035, without the
// trailing dot).
const MaxNameLen = 253

// profile is IDNA 2008's registration profile: it refuses every label that
// would need mapping instead of mapping it, so that two spellings never
// become one name behind the caller's back.
var profile = idna.Registration

// ParseHost returns the canonical form of a host as written in a CONNECT
// line, a URL, a Host header, a SOCKS5 domain or a TLS server name: a name,
// a dotted-quad IPv4 address or a bracketed IPv6 address. Every other
// spelling is refused with a *HostError (see the package documentation).
func ParseHost(s string) (Host, error) {
	bad := func(format string, a ...any) (Host, error) {
		return Host{}, &HostError{Input: s, Reason: fmt.Sprintf(format, a...)}
	}
	if s == "" {
		return bad("empty host")
	}
	if len(s) > 2*MaxNameLen {
		return bad("longer than %d bytes", MaxNameLen)
	}
	if s[0] == '[' {
		return parseBracketed(s)
	}
	if why := badByte(s); why != "" {
		return bad("%s", why)
	}
	if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() {
		return Host{IP: ip}, nil
	}
	// Only ASCII letters are folded here: Unicode case folding is a mapping
	// (U+212A KELVIN SIGN lowers to an ASCII 'k'), which IDNA's
	// registration profile refuses instead.
	name := strings.TrimSuffix(asciiLower(s), ".")
	if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return bad("empty label")
	}
	if looksNumeric(lastLabel(name)) {
		return bad("not a dotted-quad IPv4 address, and a name ending in a numeric label is an address to some parsers (decimal, octal, hex and short forms are refused)")
	}
	ascii, err := profile.ToASCII(name)
	if err != nil {
		return bad("not a valid IDNA host name: %v", err)
	}
	// The profile refuses what it would map, but check what it returns:
	// this is the name every later step uses.
	if len(ascii) > MaxNameLen {
		return bad("longer than %d bytes", MaxNameLen)
	}
	for _, label := range strings.Split(ascii, ".") {
		if label == "" || len(label) > 63 {
			return bad("a label is empty or longer than 63 bytes")
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return bad("IDNA conversion left %q", c)
			}
		}
	}
	if looksNumeric(lastLabel(ascii)) {
		return bad("an address spelled as a name")
	}
	return Host{Name: ascii}, nil
}

func parseBracketed(s string) (Host, error) {
	bad := func(format string, a ...any) (Host, error) {
		return Host{}, &HostError{Input: s, Reason: fmt.Sprintf(format, a...)}
	}
	if len(s) < 3 || s[len(s)-1] != ']' {
		return bad("an IPv6 address must be written [addr]")
	}
	inner := s[1 : len(s)-1]
	if strings.ContainsRune(inner, '%') {
		return bad("an IPv6 zone is not accepted")
	}
	ip, err := netip.ParseAddr(inner)
	if err != nil || !ip.Is6() {
		return bad("not an IPv6 address")
	}
	return Host{IP: ip.Unmap()}, nil
}

// badByte names the first byte of s that no canonical host contains,
// leaving letters, digits, '-', '.' and non-ASCII UTF-8 (for IDNA).
func badByte(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c >= 0x80:
			continue
		case c == 0:
			return "contains a NUL byte"
		case c == '%':
			return "contains '%' (percent-encoding or an IPv6 zone)"
		case c == '@':
			return "contains '@' (user information)"
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			return "contains whitespace"
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("contains the control byte 0x%02x", c)
		case c == ':':
			return "contains ':' (an IPv6 address must be written [addr]; a port is not part of the host)"
		case c == '_':
			return "contains '_' (not a host name character)"
		default:
			return fmt.Sprintf("contains %q", c)
		}
	}
	// Non-ASCII whitespace and controls reach IDNA, which refuses them; so
	// does every other code point outside IDNA 2008's PVALID set.
	return ""
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func lastLabel(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// looksNumeric reports whether a label is what the WHATWG URL standard and
// inet_aton read as a number: decimal digits, or "0x" followed by hex
// digits (or nothing).
func looksNumeric(label string) bool {
	if label == "" {
		return false
	}
	if strings.HasPrefix(label, "0x") {
		for _, c := range label[2:] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range label {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ParseTarget parses "host:port" as written in a CONNECT line or an
// absolute-form URL's authority. The port must be decimal, 1–65535, without
// a sign or leading zeros.
func ParseTarget(authority string) (Target, error) {
	i := strings.LastIndexByte(authority, ':')
	if i < 0 || (strings.HasPrefix(authority, "[") && !strings.HasSuffix(authority[:i], "]")) {
		return Target{}, &HostError{Input: authority, Reason: "missing :port"}
	}
	port, err := ParsePort(authority[i+1:])
	if err != nil {
		return Target{}, &HostError{Input: authority, Reason: err.Error()}
	}
	h, err := ParseHost(authority[:i])
	if err != nil {
		return Target{}, err
	}
	return Target{Host: h, Port: port}, nil
}

// ParsePort parses a decimal port, 1–65535, in its one canonical spelling.
func ParsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || (s[0] == '0') {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}
