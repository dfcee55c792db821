package policy

import (
	"fmt"
	"net/netip"

	"github.com/wardenhq/warden/internal/netguard"
)

// Verdict is what the policy says about a destination.
type Verdict uint8

const (
	Deny Verdict = iota
	Allow
	Ask // a person decides (unknown = "ask")
)

func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	}
	return "deny"
}

// Unknown values: what happens to a host no rule matches.
const (
	UnknownAsk  = "ask"
	UnknownDeny = "deny"
)

// Decision is the policy's answer for one target, with the rule that gave
// it, written as a person would find it in the configuration.
type Decision struct {
	Verdict Verdict
	// Rule is `allow "github.com:443"`, `deny "*.pastebin.com"`,
	// `unknown = "ask"`, or what refused the target before any rule.
	Rule string
	// Explicit is set when an allow rule names the destination one by one:
	// its special addresses (loopback, private, …) may then be dialled.
	Explicit bool
	// Why explains a refusal for the person or program that sees it.
	Why string
}

// Policy is a parsed [sandbox.egress]: allow, deny and unknown.
type Policy struct {
	allow, deny []Rule
	unknown     string
}

// RuleError is an invalid entry: List is "allow" or "deny", Index its
// position.
type RuleError struct {
	List  string
	Index int
	Err   error
}

func (e *RuleError) Error() string { return fmt.Sprintf("%s[%d]: %v", e.List, e.Index, e.Err) }
func (e *RuleError) Unwrap() error { return e.Err }

// New parses the allow and deny entries; unknown is "ask" or "deny" ("" is
// "deny").
func New(allow, deny []string, unknown string) (*Policy, error) {
	p := &Policy{unknown: unknown}
	switch unknown {
	case "":
		p.unknown = UnknownDeny
	case UnknownAsk, UnknownDeny:
	default:
		return nil, fmt.Errorf("unknown = %q: must be %q or %q", unknown, UnknownAsk, UnknownDeny)
	}
	for i, s := range allow {
		r, err := ParseRule(s)
		if err != nil {
			return nil, &RuleError{"allow", i, err}
		}
		p.allow = append(p.allow, r)
	}
	for i, s := range deny {
		r, err := ParseRule(s)
		if err != nil {
			return nil, &RuleError{"deny", i, err}
		}
		p.deny = append(p.deny, r)
	}
	return p, nil
}

// Unknown is "ask" or "deny".
func (p *Policy) Unknown() string { return p.unknown }

// Decide says what happens to a connection to t, before any name is
// resolved. A name allowed here must still pass CheckAddr for every
// address it resolves to.
func (p *Policy) Decide(t Target) Decision {
	for _, r := range p.deny {
		if r.Match(t) {
			return Decision{Verdict: Deny, Rule: "deny " + r.String(),
				Why: fmt.Sprintf("%s is denied by [sandbox.egress] deny %s", t, r)}
		}
	}
	for _, r := range p.allow {
		if r.Match(t) {
			d := Decision{Verdict: Allow, Rule: "allow " + r.String(), Explicit: r.Explicit()}
			if t.Host.IsIP() {
				if why := p.CheckAddr(d, t.Host.IP, t.Port); why != "" {
					return Decision{Verdict: Deny, Rule: d.Rule, Why: why}
				}
			}
			return d
		}
	}
	if t.Host.IsIP() {
		if why := netguard.Classify(t.Host.IP); why != "" {
			return Decision{Verdict: Deny, Rule: "special address",
				Why: fmt.Sprintf("%s is %s; only an allow entry naming it reaches it", t.Host, why)}
		}
	}
	if p.unknown == UnknownAsk {
		return Decision{Verdict: Ask, Rule: `unknown = "ask"`}
	}
	return Decision{Verdict: Deny, Rule: `unknown = "deny"`,
		Why: fmt.Sprintf("%s is not in [sandbox.egress] allow, and unknown = \"deny\"", t)}
}

// CheckAddr says why the address ip, which a target admitted by d resolved
// to (or is), must not be dialled on port; "" when it may. Addresses in a
// deny entry's range are refused; special addresses (netguard.Classify)
// only pass when d is explicit or an allow entry's range holds them.
func (p *Policy) CheckAddr(d Decision, ip netip.Addr, port uint16) string {
	ip = ip.Unmap()
	for _, r := range p.deny {
		if r.MatchAddr(ip, port) {
			return fmt.Sprintf("%s is denied by [sandbox.egress] deny %s", ip, r)
		}
	}
	why := netguard.Classify(ip)
	if why == "" || d.Explicit {
		return ""
	}
	for _, r := range p.allow {
		if r.MatchAddr(ip, port) {
			return ""
		}
	}
	return fmt.Sprintf("%s is %s; only an allow entry naming the host or the address reaches it", ip, why)
}

// Rules returns the parsed allow and deny entries.
func (p *Policy) Rules() (allow, deny []Rule) { return p.allow, p.deny }
