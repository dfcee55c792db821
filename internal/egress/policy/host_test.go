package policy

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func TestParseHostAccepts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want, why string }{
		{"example.com", "example.com", "plain"},
		{"Example.COM", "example.com", "ASCII case folds"},
		{"example.com.", "example.com", "one trailing dot is the same name"},
		{"localhost", "localhost", "single label"},
		{"a-b.c-d.example", "a-b.c-d.example", "hyphens inside labels"},
		{"bücher.example", "xn--bcher-kva.example", "IDNA to A-labels"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", "an A-label stays"},
		{"ex\u0430mple.com", "xn--exmple-4nf.com", "a Cyrillic look-alike is a different name, shown as its A-label"},
		{"127.0.0.1", "127.0.0.1", "dotted quad"},
		{"[::1]", "::1", "bracketed IPv6"},
		{"[::ffff:127.0.0.1]", "127.0.0.1", "IPv4-mapped is the IPv4 address"},
		{"[2001:DB8::1]", "2001:db8::1", "IPv6 canonical form"},
		{"8.8.8.8", "8.8.8.8", "public address"},
		{"1.example", "1.example", "numeric first label"},
		{strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com", "63-byte label"},
	} {
		h, err := ParseHost(c.in)
		if err != nil {
			t.Errorf("%s: ParseHost(%q) = %v", c.why, c.in, err)
			continue
		}
		if h.String() != c.want {
			t.Errorf("%s: ParseHost(%q) = %q, want %q", c.why, c.in, h, c.want)
		}
	}
}

func TestParseHostRefuses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a.", 127) + "com" // 257 bytes
	for _, c := range []struct{ in, want, why string }{
		{"", "empty", "nothing"},
		{"evil.com\x00.allowed.com", "NUL", "a NUL that a C resolver would end the name at"},
		{"allowed.com\x00", "NUL", "trailing NUL"},
		{"evil.com%00.allowed.com", "'%'", "percent-encoded NUL"},
		{"allowed%2ecom", "'%'", "percent-encoded dot"},
		{"user@allowed.com", "'@'", "user information"},
		{"allowed.com evil.com", "whitespace", "space"},
		{"allowed.com\tx", "whitespace", "tab"},
		{"allowed.com\r\nHost: evil", "whitespace", "CR LF injection"},
		{"a\x01b.com", "control byte 0x01", "control byte"},
		{"a\x7fb.com", "control byte 0x7f", "DEL"},
		{"allowed.com:443", "':'", "port inside the host"},
		{"::1", "':'", "IPv6 without brackets"},
		{"[::1", "[addr]", "unclosed bracket"},
		{"[127.0.0.1]", "not an IPv6", "IPv4 in brackets"},
		{"[fe80::1%eth0]", "zone", "IPv6 zone"},
		{"under_score.com", "'_'", "underscore"},
		{"a/b.com", `'/'`, "slash"},
		{`a\b.com`, `'\\'`, "backslash"},
		{"example.com..", "empty label", "two trailing dots"},
		{"a..b", "empty label", "empty label"},
		{".example.com", "empty label", "leading dot"},
		{"2130706433", "numeric", "decimal IPv4"},
		{"0177.0.0.1", "numeric", "octal IPv4"},
		{"0x7f.0.0.1", "numeric", "hex IPv4"},
		{"0x7f000001", "numeric", "hex IPv4 in one part"},
		{"127.1", "numeric", "short IPv4"},
		{"127.0.0.01", "numeric", "zero-padded IPv4"},
		{"127.0.0.1.", "numeric", "IPv4 with a trailing dot"},
		{"\uff11\uff12\uff17.0.0.1", "refused", "full-width digits that would map to 127"},
		{"\uff11\uff12\uff17.example", "IDNA", "full-width digits"},
		{"\u212aeep.example", "IDNA", "KELVIN SIGN, which Unicode lower-cases to k"},
		{"ｅｘａｍｐｌｅ.com", "IDNA", "full-width letters are refused, not mapped"},
		{"BÜCHER.example", "IDNA", "upper-case non-ASCII would need mapping"},
		{"ex\u00adample.com", "IDNA", "soft hyphen (ignored by mapping)"},
		{"ex\u200bample.com", "IDNA", "zero-width space"},
		{"example\u3002com", "IDNA", "ideographic full stop"},
		{"xn--zz.com", "IDNA", "invalid punycode"},
		{"-example.com", "IDNA", "leading hyphen"},
		{strings.Repeat("a", 64) + ".com", "IDNA", "64-byte label"},
		{long, "IDNA", "over 253 bytes"},
		{"\xff.com", "UTF-8", "invalid UTF-8"},
	} {
		h, err := ParseHost(c.in)
		if err == nil {
			t.Errorf("%s: ParseHost(%q) = %q, want refused", c.why, c.in, h)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ParseHost(%q) = %v, want it to mention %s", c.why, c.in, err, c.want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"example.com:443", "example.com:443"},
		{"EXAMPLE.com.:80", "example.com:80"},
		{"[::1]:8080", "[::1]:8080"},
		{"[::ffff:10.0.0.1]:22", "10.0.0.1:22"},
		{"10.0.0.1:65535", "10.0.0.1:65535"},
	} {
		got, err := ParseTarget(c.in)
		if err != nil || got.String() != c.want {
			t.Errorf("ParseTarget(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:+1",
		"example.com:08", "example.com:1e3", "::1:80", "[::1]", "[::1]80", "example.com:443:443", "a b:80", ":80"} {
		if got, err := ParseTarget(in); err == nil {
			t.Errorf("ParseTarget(%q) = %v, want an error", in, got)
		}
	}
}

// whatwgIPv4 is the WHATWG URL standard's IPv4 parser (which browsers,
// curl and inet_aton agree with on these forms): the oracle a name must
// never be an address to.
func whatwgIPv4(s string) (netip.Addr, bool) {
	s = strings.TrimSuffix(s, ".")
	parts := strings.Split(s, ".")
	if len(parts) > 4 || s == "" {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(strings.ToLower(p), "0x"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" {
			nums[i] = 0
			continue
		}
		n, err := strconv.ParseUint(p, base, 64)
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// checkCanonical holds for every host ParseHost accepts.
func checkCanonical(t *testing.T, in string, h Host) {
	t.Helper()
	if h.IsIP() == (h.Name != "") {
		t.Fatalf("ParseHost(%q) = %#v: exactly one of Name and IP must be set", in, h)
	}
	again := h.String()
	if h.IP.Is6() {
		again = "[" + again + "]"
	}
	h2, err := ParseHost(again)
	if err != nil || h2 != h {
		t.Fatalf("ParseHost(%q) = %q, which is not canonical: ParseHost again = %q, %v", in, h, h2, err)
	}
	if ip, ok := whatwgIPv4(in); ok && h != (Host{IP: ip}) {
		t.Fatalf("ParseHost(%q) = %q, but a URL parser reads the address %s", in, h, ip)
	}
	if h.IsIP() {
		if h.IP.Is4In6() || h.IP.Zone() != "" {
			t.Fatalf("ParseHost(%q) = %#v: mapped or zoned address", in, h)
		}
		return
	}
	n := h.Name
	if len(n) > MaxNameLen || net.ParseIP(n) != nil {
		t.Fatalf("ParseHost(%q) = %q: too long or an address", in, n)
	}
	if _, ok := whatwgIPv4(n); ok {
		t.Fatalf("ParseHost(%q) = %q: a URL parser reads it as an address", in, n)
	}
	for _, l := range strings.Split(n, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			t.Fatalf("ParseHost(%q) = %q: bad label %q", in, n, l)
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				t.Fatalf("ParseHost(%q) = %q: byte %q", in, n, c)
			}
		}
	}
	if strings.ContainsAny(in, "\x00%@ \t\r\n_/\\:") && !strings.HasPrefix(in, "[") {
		t.Fatalf("ParseHost(%q) accepted a refused byte", in)
	}
}

func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "bücher.example", "xn--bcher-kva.example", "127.0.0.1",
		"[::1]", "[::ffff:127.0.0.1]", "2130706433", "0x7f.1", "evil.com\x00.ok.com", "a%00b", "ｅｘａｍｐｌｅ.com",
		"ex\u0430mple.com", "1.2.3.4.5", "0x", "0.0.0.0.", "[fe80::1%25eth0]", "xn--", "a.xn--zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHost(s)
		if err != nil {
			return
		}
		checkCanonical(t, s, h)
	})
}
