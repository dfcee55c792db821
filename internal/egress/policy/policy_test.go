package policy

import (
	"net/netip"
	"strings"
	"testing"
)

func mustTarget(t *testing.T, s string) Target {
	t.Helper()
	tg, err := ParseTarget(s)
	if err != nil {
		t.Fatalf("ParseTarget(%q): %v", s, err)
	}
	return tg
}

func TestParseRule(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		kind Kind
		name string
		pfx  string
		port uint16
	}{
		{"github.com", Exact, "github.com", "", 0},
		{"GitHub.com.:443", Exact, "github.com", "", 443},
		{"*.pypi.org", Wildcard, "pypi.org", "", 0},
		{"*.pypi.org:443", Wildcard, "pypi.org", "", 443},
		{"localhost:5432", Exact, "localhost", "", 5432},
		{"10.0.0.5", Prefix, "", "10.0.0.5/32", 0},
		{"10.0.0.5:22", Prefix, "", "10.0.0.5/32", 22},
		{"10.1.2.3/8", Prefix, "", "10.0.0.0/8", 0},
		{"10.0.0.0/8:5432", Prefix, "", "10.0.0.0/8", 5432},
		{"::1", Prefix, "", "::1/128", 0},
		{"[::1]:8080", Prefix, "", "::1/128", 8080},
		{"[::ffff:127.0.0.1]", Prefix, "", "127.0.0.1/32", 0},
		{"fd00::/8", Prefix, "", "fd00::/8", 0},
		{"[fd00::/8]:443", Prefix, "", "fd00::/8", 443},
		{"bücher.example", Exact, "xn--bcher-kva.example", "", 0},
	} {
		r, err := ParseRule(c.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", c.in, err)
			continue
		}
		if r.Kind != c.kind || r.Name != c.name || r.Port != c.port || (c.pfx != "" && r.Prefix.String() != c.pfx) {
			t.Errorf("ParseRule(%q) = %+v", c.in, r)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{"*", "network = \"host\""},
		{"*:443", "network = \"host\""},
		{"a.*.com", "leading"},
		{"*example.com", "leading"},
		{"*.10.0.0.1", "addresses"},
		{"github.com:", "empty port"},
		{"github.com:0", "port"},
		{"github.com:99999", "port"},
		{"github.com:https", "port"},
		{"[::1", "']'"},
		{"[::1]x", "after"},
		{"[10.0.0.1]", "IPv6"},
		{"10.0.0.0/33", "CIDR"},
		{"fe80::1%eth0", "IPv6"},
		{"evil.com\x00.ok", "NUL"},
		{"http://github.com", "port"},
		{"2130706433", "numeric"},
		{"user@host", "'@'"},
	} {
		if r, err := ParseRule(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRule(%q) = %+v, %v; want an error mentioning %s", c.in, r, err, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	p, err := New(
		[]string{"registry.npmjs.org", "*.pypi.org", "github.com:443", "localhost:5432", "10.0.0.0/8:5432",
			"[::1]:8080", "*.corp.example", "93.184.216.34"},
		[]string{"*.pastebin.com", "evil.pypi.org", "10.9.0.0/16"},
		UnknownAsk)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target   string
		verdict  Verdict
		rule     string
		explicit bool
		why      string
	}{
		{"registry.npmjs.org:443", Allow, `allow "registry.npmjs.org"`, true, "exact name, any port"},
		{"registry.npmjs.org:80", Allow, `allow "registry.npmjs.org"`, true, "any port"},
		{"files.pypi.org:443", Allow, `allow "*.pypi.org"`, false, "wildcard"},
		{"a.b.pypi.org:443", Allow, `allow "*.pypi.org"`, false, "wildcard at any depth"},
		{"pypi.org:443", Ask, `unknown = "ask"`, false, "a wildcard does not match its own base name"},
		{"evilpypi.org:443", Ask, `unknown = "ask"`, false, "a wildcard matches on label boundaries"},
		{"evil.pypi.org:443", Deny, `deny "evil.pypi.org"`, false, "deny wins over allow"},
		{"github.com:443", Allow, `allow "github.com:443"`, true, "port matches"},
		{"github.com:22", Ask, `unknown = "ask"`, false, "other port is unknown"},
		{"x.pastebin.com:443", Deny, `deny "*.pastebin.com"`, false, "deny wildcard"},
		{"localhost:5432", Allow, `allow "localhost:5432"`, true, "explicit loopback name"},
		{"localhost:22", Ask, `unknown = "ask"`, false, "other port"},
		{"10.1.2.3:5432", Allow, `allow "10.0.0.0/8:5432"`, true, "private range named"},
		{"10.9.1.1:5432", Deny, `deny "10.9.0.0/16"`, false, "deny range wins"},
		{"10.1.2.3:22", Deny, "special address", false, "private address no entry names, never asked"},
		{"127.0.0.1:5432", Deny, "special address", false, "localhost the name does not admit 127.0.0.1 the address"},
		{"[::1]:8080", Allow, `allow "[::1]:8080"`, true, "IPv6 loopback named"},
		{"[::ffff:127.0.0.1]:5432", Deny, "special address", false, "IPv4-mapped loopback"},
		{"169.254.169.254:80", Deny, "special address", false, "metadata"},
		{"[fd00:ec2::254]:80", Deny, "special address", false, "IPv6 metadata"},
		{"93.184.216.34:443", Allow, `allow "93.184.216.34"`, true, "public address named"},
		{"8.8.8.8:443", Ask, `unknown = "ask"`, false, "public address unknown: asked"},
		{"db.corp.example:5432", Allow, `allow "*.corp.example"`, false, "wildcard: public answers only"},
	} {
		d := p.Decide(mustTarget(t, c.target))
		if d.Verdict != c.verdict || d.Rule != c.rule || d.Explicit != c.explicit {
			t.Errorf("%s: Decide(%s) = %+v, want %v by %s (explicit %v)", c.why, c.target, d, c.verdict, c.rule, c.explicit)
		}
		if d.Verdict == Deny && d.Why == "" {
			t.Errorf("%s: Decide(%s) refused without saying why", c.why, c.target)
		}
	}

	deny, _ := New(nil, nil, UnknownDeny)
	if d := deny.Decide(mustTarget(t, "example.com:443")); d.Verdict != Deny || d.Rule != `unknown = "deny"` {
		t.Errorf("unknown = deny: %+v", d)
	}
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	p, err := New([]string{"localhost", "*.corp.example", "10.5.0.0/16", "public.example"}, []string{"203.0.113.0/24", "8.8.4.4"}, UnknownDeny)
	if err != nil {
		t.Fatal(err)
	}
	explicit := p.Decide(mustTarget(t, "localhost:80"))
	wild := p.Decide(mustTarget(t, "db.corp.example:80"))
	pub := p.Decide(mustTarget(t, "public.example:80"))
	for _, c := range []struct {
		d    Decision
		ip   string
		want string // "" allowed
	}{
		{explicit, "127.0.0.1", ""},
		{explicit, "::1", ""},
		{wild, "127.0.0.1", "loopback"},
		{wild, "10.1.1.1", "private"},
		{wild, "10.5.1.1", ""}, // an allow range names it
		{wild, "::ffff:10.1.1.1", "private"},
		{wild, "169.254.169.254", "metadata"},
		{wild, "fd00:ec2::254", "metadata"},
		{wild, "100.64.1.1", "carrier-grade NAT"},
		{wild, "0.0.0.0", "unspecified"},
		{wild, "224.0.0.1", "multicast"},
		{wild, "64:ff9b::7f00:1", "NAT64"},
		{wild, "93.184.216.34", ""},
		{pub, "8.8.4.4", "denied"},
		{explicit, "203.0.113.9", "denied"}, // deny ranges bind even explicit names
	} {
		got := p.CheckAddr(c.d, netip.MustParseAddr(c.ip), 80)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("CheckAddr(%s, %s) = %q, want %q", c.d.Rule, c.ip, got, c.want)
		}
	}
}

func TestNarrows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		user, ws string
		ok       bool
	}{
		{"github.com", "github.com", true},
		{"github.com", "github.com:443", true},
		{"github.com:443", "github.com", false},
		{"github.com:443", "github.com:22", false},
		{"*.pypi.org", "*.files.pypi.org", true},
		{"*.pypi.org", "*.pypi.org:443", true},
		{"*.pypi.org", "files.pypi.org", false}, // an exact entry would admit private answers
		{"*.pypi.org", "pypi.org", false},
		{"*.pypi.org", "*.org", false},
		{"10.0.0.0/8", "10.1.0.0/16", true},
		{"10.0.0.0/8", "10.1.2.3", true},
		{"10.0.0.0/16", "10.0.0.0/8", false},
		{"10.0.0.0/8", "::ffff:10.0.0.0/104", true},
		{"::/0", "10.0.0.1", false},
		{"github.com", "*.github.com", false},
		{"10.0.0.1", "github.com", false},
	} {
		u, err1 := ParseRule(c.user)
		w, err2 := ParseRule(c.ws)
		if err1 != nil || err2 != nil {
			t.Fatalf("%v %v", err1, err2)
		}
		if got := u.Narrows(w); got != c.ok {
			t.Errorf("%q.Narrows(%q) = %v, want %v", c.user, c.ws, got, c.ok)
		}
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"github.com:443", "*.pypi.org", "10.0.0.0/8:5432", "[fd00::/8]:443", "::1", "[::1]:80", "*", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if !r.Narrows(r) {
			t.Fatalf("rule %q does not narrow itself", s)
		}
		switch r.Kind {
		case Exact, Wildcard:
			h, err := ParseHost(r.Name)
			if err != nil || h.Name != r.Name {
				t.Fatalf("rule %q: name %q is not canonical", s, r.Name)
			}
		case Prefix:
			if !r.Prefix.IsValid() || r.Prefix != r.Prefix.Masked() || r.Prefix.Addr().Is4In6() {
				t.Fatalf("rule %q: prefix %v", s, r.Prefix)
			}
		default:
			t.Fatalf("rule %q: no kind", s)
		}
	})
}

func TestExplain(t *testing.T) {
	t.Parallel()
	p, _ := New([]string{"localhost:5432", "*.pypi.org"}, []string{"evil.pypi.org"}, UnknownAsk)
	for _, c := range []struct {
		target string
		addrs  []string
		want   []string
	}{
		{"localhost:5432", []string{"127.0.0.1"}, []string{`allow, by allow "localhost:5432"`, "exactly", "127.0.0.1: dialled (a loopback address, named explicitly)"}},
		{"files.pypi.org:443", []string{"10.0.0.1", "151.101.0.223"}, []string{`allow "*.pypi.org"`, "special answers are refused", "10.0.0.1: refused", "151.101.0.223: dialled"}},
		{"evil.pypi.org:443", nil, []string{`deny, by deny "evil.pypi.org"`, "why:"}},
		{"GitHub.com.:443", nil, []string{"destination: github.com:443", "ask a person"}},
		{"127.0.0.1:22", nil, []string{"deny", "loopback"}},
	} {
		got := strings.Join(p.Explain(mustTarget(t, c.target), parseAddrs(c.addrs)...), "\n")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("Explain(%s) =\n%s\nwant it to mention %q", c.target, got, w)
			}
		}
	}
}

func parseAddrs(s []string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}
