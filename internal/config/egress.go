package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/egress/policy"
)

// NetworkMode is [sandbox] network: what a jail may reach.
type NetworkMode string

// Network modes. The booleans of earlier configs stay accepted: true is
// "host", false "none".
const (
	NetworkNone      NetworkMode = "none"      // own network namespace, loopback only (the default; always under lockdown)
	NetworkAllowlist NetworkMode = "allowlist" // loopback only, plus warden's egress proxy deciding by [sandbox.egress]
	NetworkHost      NetworkMode = "host"      // the host's network
)

var networkModeType = reflect.TypeFor[NetworkMode]()

// networkFromBool reads an earlier config's network = true | false.
func networkFromBool(b bool) string {
	if b {
		return string(NetworkHost)
	}
	return string(NetworkNone)
}

// networkRank orders the modes from tightest to loosest.
var networkRank = map[NetworkMode]int{NetworkNone: 0, NetworkAllowlist: 1, NetworkHost: 2}

// Egress is [sandbox.egress]: what a jail under network = "allowlist" may
// reach, and which secrets the host side brokers.
type Egress struct {
	// Allow and Deny are host patterns with an optional :port
	// (internal/egress/policy: "github.com:443", "*.pypi.org",
	// "10.0.0.0/8:5432"); deny wins.
	Allow []string `toml:"allow" yaml:"allow" json:"allow"`
	Deny  []string `toml:"deny" yaml:"deny" json:"deny"`
	// Unknown decides a host neither list names: "ask" (default: a person
	// decides, per host) or "deny".
	Unknown string         `toml:"unknown" yaml:"unknown" json:"unknown"`
	Secrets []EgressSecret `toml:"secrets" yaml:"secrets" json:"secrets,omitempty"`
}

// EgressSecret is one [[sandbox.egress.secrets]] entry: the jail holds a
// placeholder for Env; the real value is sent to Hosts only.
type EgressSecret struct {
	Env   string   `toml:"env" yaml:"env" json:"env"`
	Hosts []string `toml:"hosts" yaml:"hosts" json:"hosts"`
}

// Policy parses the allow, deny and unknown settings.
func (e Egress) Policy() (*policy.Policy, error) {
	return policy.New(e.Allow, e.Deny, e.Unknown)
}

// validateEgress checks network and [sandbox.egress]. Like every problem
// in [sandbox], a bad value puts the sandbox in lockdown.
func (l *layer) validateEgress() {
	s := l.cfg.Sandbox
	if l.has("sandbox.network") {
		if _, ok := networkRank[s.NetworkMode]; !ok {
			l.bad("sandbox.network", string(s.NetworkMode), `must be "none", "allowlist" or "host" (true and false mean "host" and "none")`)
		}
	}
	const p = "sandbox.egress"
	for _, list := range []struct {
		key     string
		entries []string
	}{{p + ".allow", s.Egress.Allow}, {p + ".deny", s.Egress.Deny}} {
		for i, e := range list.entries {
			if _, err := policy.ParseRule(e); err != nil {
				l.bad(idx(list.key, i), e, "%s", strings.TrimPrefix(err.Error(), fmt.Sprintf("%q: ", e)))
			}
		}
	}
	l.oneOf(p+".unknown", s.Egress.Unknown, policy.UnknownAsk, policy.UnknownDeny)
	seen := map[string]bool{}
	for i, sec := range s.Egress.Secrets {
		e := idx(p+".secrets", i)
		if !envNamePatt.MatchString(sec.Env) {
			l.bad(e+".env", sec.Env, "must name the environment variable holding the secret")
		} else if seen[sec.Env] {
			l.bad(e+".env", sec.Env, "the same variable is brokered twice")
		}
		seen[sec.Env] = true
		if len(sec.Hosts) == 0 {
			l.bad(e+".hosts", nil, "must list the hosts that receive the secret")
		}
		for j, h := range sec.Hosts {
			ch, err := policy.ParseHost(h)
			switch {
			case err != nil:
				l.bad(idx(e+".hosts", j), h, "must be an exact host name (no wildcard, port or address): %s", hostReason(err))
			case ch.IsIP():
				l.bad(idx(e+".hosts", j), h, "must be a host name, not an address (TLS to it is terminated by name)")
			}
		}
	}
}

func hostReason(err error) string {
	if he, ok := err.(*policy.HostError); ok {
		return he.Reason
	}
	return err.Error()
}

// effectiveNetwork is the mode a sandbox runs with: lockdown forces none.
func effectiveNetwork(s *Sandbox) NetworkMode {
	if s == nil || s.Lockdown || s.NetworkMode == "" {
		return NetworkNone
	}
	return s.NetworkMode
}

// finalNetwork fills the defaults of the merged sandbox and derives
// Network (the host's network), which the backends read.
func (ld *loader) finalNetwork() {
	s := ld.cfg.Sandbox
	if s == nil {
		return
	}
	if s.NetworkMode == "" || s.Lockdown {
		s.NetworkMode = NetworkNone
	}
	if s.Egress.Unknown == "" {
		s.Egress.Unknown = policy.UnknownAsk
	}
	s.Network = s.NetworkMode == NetworkHost
	if s.NetworkMode != NetworkAllowlist && s.Invalid == "" && (len(s.Egress.Allow) > 0 || len(s.Egress.Secrets) > 0) {
		ld.warnings = append(ld.warnings, fmt.Sprintf(
			"warning: [sandbox.egress] is set but network = %q; it applies only with network = \"allowlist\"", s.NetworkMode))
	}
}

// Tighten-only rules for the workspace file (see wsRules).

func networkNotLooser(c *wsCheck, lf leaf) string {
	b := c.base.Sandbox
	if b == nil {
		return "" // no user sandbox: any jail is tighter than none
	}
	v := NetworkMode(lf.n.s)
	if lf.n.kind == kBool {
		v = NetworkMode(networkFromBool(lf.n.b))
	}
	floor := effectiveNetwork(b)
	if networkRank[v] > networkRank[floor] {
		return c.looser(fmt.Sprintf("sandbox.network = %q", floor))
	}
	return ""
}

// egressAllowNarrows lets a workspace narrow the user's allowlist: each of
// its entries must narrow one of the user's (policy.Rule.Narrows: the same
// or a deeper wildcard, a port added, a smaller prefix; an exact name under
// a wildcard is refused, since it would also admit the name's private
// addresses). Where the user's jail is not under an allowlist there is
// nothing to widen: network itself is held by its own rule.
func egressAllowNarrows(c *wsCheck, lf leaf) string {
	b := c.base.Sandbox
	if b == nil || effectiveNetwork(b) != NetworkAllowlist {
		return ""
	}
	var user []policy.Rule
	for _, e := range b.Egress.Allow {
		if r, err := policy.ParseRule(e); err == nil {
			user = append(user, r)
		}
	}
	var extra []string
	for _, it := range lf.n.items {
		w, err := policy.ParseRule(it.s)
		if err != nil {
			continue // reported by validation
		}
		if !slices.ContainsFunc(user, func(u policy.Rule) bool { return u.Narrows(w) }) {
			extra = append(extra, show(it.s))
		}
	}
	if len(extra) > 0 {
		return fmt.Sprintf("allows %s, which no entry of the user's allow list covers; %s", strings.Join(extra, ", "), onlyUser)
	}
	return ""
}

func egressUnknownNotLooser(c *wsCheck, lf leaf) string {
	b := c.base.Sandbox
	if b == nil || effectiveNetwork(b) != NetworkAllowlist || lf.n.s != policy.UnknownAsk {
		return ""
	}
	if b.Egress.Unknown == policy.UnknownDeny {
		return c.looser(`sandbox.egress.unknown = "deny"`)
	}
	return ""
}
