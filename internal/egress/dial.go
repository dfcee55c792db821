package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/wardenhq/warden/internal/egress/policy"
)

// Resolver looks host names up on the host; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// StaticResolver is a fixed name table: a host name maps to its addresses,
// and a name not in the table does not exist. Tests use it to give names
// loopback, private or metadata addresses without a DNS server.
type StaticResolver map[string][]netip.Addr

// LookupNetIP returns the table's addresses for host ("ip", "ip4", "ip6").
func (r StaticResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		if network == "ip" || network == "ip4" && a.Unmap().Is4() || network == "ip6" && a.Is6() && !a.Is4In6() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// Refusal is a connection the policy refused (as opposed to one that
// failed): a deny rule, unknown = "deny", a person's no, a special address.
type Refusal struct {
	Target string // canonical host:port, or the refused text
	Rule   string
	Why    string
	By     string // "policy", or who answered
}

func (r *Refusal) Error() string { return r.Why }

// DialError is an admitted connection that could not be made.
type DialError struct {
	Target string
	Op     string // "resolve" or "connect"
	Err    error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("could not %s %s: %v", e.Op, e.Target, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

// admission is a target the policy let through, and how.
type admission struct {
	target policy.Target
	dec    policy.Decision
	by     string // "policy", or who answered
}

// admit decides t: by rule, or by asking a person.
func (s *Server) admit(ctx context.Context, t policy.Target, attribution func() Attribution) (*admission, error) {
	d := s.pol.Decide(t)
	switch d.Verdict {
	case policy.Allow:
		return &admission{target: t, dec: d, by: "policy"}, nil
	case policy.Ask:
		s.stats.asked.Add(1)
		attr := attribution()
		q := Question{Host: t.Host.String(), Port: int(t.Port), Workspace: s.opts.Workspace,
			Session: attr.Session, Command: attr.Command}
		if s.broker != nil {
			q.Secrets = s.broker.secretsFor(t.Host)
		}
		ans, _, err := s.asking.ask(ctx, s.opts.Asker, t.String(), q, s.askTimeout)
		if err != nil {
			return nil, &Refusal{Target: t.String(), Rule: d.Rule, Why: fmt.Sprintf("%s: %v", t, err), By: "nobody"}
		}
		if !ans.Allow {
			why := fmt.Sprintf("%s: a person refused the connection", t)
			if ans.Reason != "" {
				why += ": " + ans.Reason
			}
			return nil, &Refusal{Target: t.String(), Rule: d.Rule, Why: why, By: ans.By}
		}
		// A person's yes admits public addresses only (Explicit stays false).
		d.Verdict = policy.Allow
		return &admission{target: t, dec: d, by: ans.By}, nil
	}
	return nil, &Refusal{Target: t.String(), Rule: d.Rule, Why: d.Why, By: "policy"}
}

// dial resolves an admitted target on the host, refuses the addresses the
// policy refuses, and connects to exactly one of the addresses it checked:
// there is no second lookup between the check and the connect.
func (s *Server) dial(ctx context.Context, a *admission) (net.Conn, netip.AddrPort, error) {
	t := a.target
	var addrs []netip.Addr
	if t.Host.IsIP() {
		addrs = []netip.Addr{t.Host.IP} // Decide has checked the literal
	} else {
		lctx, cancel := context.WithTimeout(ctx, s.dialTimeout)
		ips, err := s.resolver.LookupNetIP(lctx, "ip", t.Host.Name)
		cancel()
		if err != nil {
			return nil, netip.AddrPort{}, &DialError{Target: t.String(), Op: "resolve", Err: err}
		}
		var refused string
		for _, ip := range ips {
			ip = ip.Unmap().WithZone("")
			if why := s.pol.CheckAddr(a.dec, ip, t.Port); why != "" {
				refused = why
				continue
			}
			addrs = append(addrs, ip)
		}
		if len(addrs) == 0 {
			if refused == "" {
				refused = "no address"
			}
			return nil, netip.AddrPort{}, &Refusal{Target: t.String(), Rule: a.dec.Rule, By: a.by,
				Why: fmt.Sprintf("%s resolves only to refused addresses: %s", t, refused)}
		}
	}
	var last error
	for _, ip := range addrs {
		ap := netip.AddrPortFrom(ip, t.Port)
		d := net.Dialer{Timeout: s.dialTimeout, KeepAlive: s.opts.KeepAlive, Control: exactly(ap)}
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return c, ap, nil
		}
		last = err
	}
	return nil, netip.AddrPort{}, &DialError{Target: t.String(), Op: "connect", Err: last}
}

// exactly refuses a connect to anything but want: the address is a
// literal, so nothing should differ, and this holds if that ever changes.
func exactly(want netip.AddrPort) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		got, err := netip.ParseAddrPort(address)
		if err != nil || got.Addr().Unmap() != want.Addr() || got.Port() != want.Port() {
			return fmt.Errorf("refusing to connect to %s: the checked address is %s", address, want)
		}
		return nil
	}
}

func isRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

func netipAddrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	return netip.AddrPort{}
}
