package policy

import (
	"fmt"
	"net/netip"

	"github.com/wardenhq/warden/internal/netguard"
)

// Explain says, for a person, what the policy does with a destination and
// why: the canonical form it is judged in, the rule that decides, and what
// happens to the addresses a name resolves to. addrs, when given, are
// checked as a resolver's answers would be.
func (p *Policy) Explain(t Target, addrs ...netip.Addr) []string {
	out := []string{"destination: " + t.String()}
	d := p.Decide(t)
	switch d.Verdict {
	case Allow:
		out = append(out, "decision: allow, by "+d.Rule)
	case Ask:
		out = append(out, fmt.Sprintf("decision: ask a person (no allow or deny entry names %s, and unknown = \"ask\"); with nobody to ask, refused", t))
	default:
		out = append(out, "decision: deny, by "+d.Rule, "why: "+d.Why)
		return out
	}
	switch {
	case t.Host.IsIP():
		out = append(out, "address: an IP literal, matched as an address (never by a name entry)")
	case d.Explicit:
		out = append(out, "addresses: the entry names this host exactly, so whatever it resolves to may be dialled (loopback and private included); deny ranges still apply")
	default:
		out = append(out, "addresses: resolved on the host; loopback, private, link-local, CGNAT, metadata and other special answers are refused (name them in allow to reach them)")
	}
	for _, a := range addrs {
		a = a.Unmap().WithZone("") // as the proxy dials it
		if why := p.CheckAddr(d, a, t.Port); why != "" {
			out = append(out, fmt.Sprintf("  %s: refused: %s", a, why))
		} else if c := netguard.Classify(a); c != "" {
			out = append(out, fmt.Sprintf("  %s: dialled (%s, named explicitly)", a, c))
		} else {
			out = append(out, fmt.Sprintf("  %s: dialled", a))
		}
	}
	return out
}
