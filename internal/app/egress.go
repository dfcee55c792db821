package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress"
	egresspolicy "github.com/wardenhq/warden/internal/egress/policy"
	"github.com/wardenhq/warden/internal/rules"
	"github.com/wardenhq/warden/internal/sandbox"
)

// EgressTool is the name a per-host network approval carries in the store,
// on the page and in the channels: a connection a jailed command opens (the
// network group), not a tool a model calls.
const EgressTool = rules.NetworkTool

// EgressAsker puts the egress proxy's questions (unknown = "ask") to a
// person through the approval broker: each is a request bound to the host
// and port only, so a grant for a host ("approve for N minutes") admits
// its next connections without asking again, whatever command opens them;
// the command is shown in the request's summary.
//
// Before a person is asked, the [[rules]] for EgressTool in force in the
// connection's workspace decide (host = "name:port", as "always" writes
// them): allow admits the connection as a person's approval would (public
// addresses only), deny refuses it, ask or no rule asks.
type EgressAsker struct {
	Approver approval.Approver
	Agent    string
	// Rules returns the rules in force in a workspace, read again when they
	// change; nil, or a nil set: no rules.
	Rules func(workspace string) (*rules.Set, error)
}

// Ask implements egress.Asker.
func (a *EgressAsker) Ask(ctx context.Context, q egress.Question) (egress.Answer, error) {
	args, err := json.Marshal(struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}{q.Host, q.Port})
	if err != nil {
		return egress.Answer{}, err
	}
	hostPort := net.JoinHostPort(q.Host, strconv.Itoa(q.Port))
	if ans, ok := a.byRule(q, args); ok {
		return ans, nil
	}
	risk := "a jailed command opens a connection to " + hostPort
	if q.Command != "" {
		risk += "\ncommand: " + q.Command
	}
	if len(q.Secrets) > 0 {
		risk += "\nthis host receives the brokered secrets " + strings.Join(q.Secrets, ", ")
	}
	out, err := a.Approver.Ask(ctx, &approval.Request{Tool: EgressTool, Args: args, Workspace: q.Workspace,
		Session: q.Session, Agent: a.Agent, Rule: `[sandbox.egress] unknown = "ask"`, Risk: risk})
	if err != nil {
		return egress.Answer{}, fmt.Errorf("asking about %s: %w", hostPort, err)
	}
	if out.Approved && out.ID != "" {
		// The connection is what runs: it is admitted now.
		_ = a.Approver.Executed(ctx, out.ID, true, "connection to "+hostPort+" admitted")
	}
	return egress.Answer{Allow: out.Approved, By: out.By, Reason: out.Reason}, nil
}

// byRule is the answer of the workspace's rules for EgressTool, when one
// decides: allow or deny.
func (a *EgressAsker) byRule(q egress.Question, args json.RawMessage) (egress.Answer, bool) {
	if a.Rules == nil || q.Workspace == "" {
		return egress.Answer{}, false
	}
	set, err := a.Rules(q.Workspace)
	if err != nil || set == nil || set.Len() == 0 {
		// Rules that do not load decide nothing: a person is asked.
		return egress.Answer{}, false
	}
	target, err := rules.NetworkTarget(args)
	if err != nil {
		return egress.Answer{}, false
	}
	res := set.Decide(rules.Call{Tool: EgressTool, Host: target})
	switch res.Decision {
	case rules.Allow:
		return egress.Answer{Allow: true, By: "rules:" + res.Rule.Name()}, true
	case rules.Deny:
		return egress.Answer{By: "rules:" + res.Rule.Name(), Reason: "refused by " + res.Why}, true
	}
	return egress.Answer{}, false
}

// NetExplanation is what `warden explain --net` says about a destination.
type NetExplanation struct {
	// Network is the jail's mode: "none", "allowlist", "host", or "" when
	// the workspace has no [sandbox] (commands run on the host's network).
	Network  string   `json:"network"`
	Target   string   `json:"target"`   // canonical host:port
	Decision string   `json:"decision"` // allow | ask | deny: what the egress policy says
	Rule     string   `json:"rule"`
	Why      string   `json:"why,omitempty"`
	Lines    []string `json:"explanation"`
	// Addresses are the resolver's answers, each with its verdict
	// (resolved only when the policy admits the name, as the proxy does).
	Addresses []string `json:"addresses,omitempty"`
	// Secrets are the brokered secrets this host receives.
	Secrets []string `json:"secrets,omitempty"`
}

// ExplainNet says what the egress policy of cfg does with "HOST[:PORT]"
// (port 443 when absent) in workspace dir and why: [sandbox.egress] first,
// then, for a host it leaves to a person, the workspace's connection rules.
// It resolves the name with r only when the policy admits it (r nil: no
// lookup).
func ExplainNet(ctx context.Context, cfg *config.Config, dir, hostPort string, r egress.Resolver) (*NetExplanation, error) {
	t, err := parseNetTarget(hostPort)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	x := &NetExplanation{Target: t.String()}
	sb := cfg.Sandbox
	var eg config.Egress
	switch {
	case sb == nil:
		x.Lines = append(x.Lines, "sandbox: the workspace has no [sandbox]: commands run on the host, with its network; the policy below applies only under network = \"allowlist\"")
	default:
		x.Network = string(sb.NetworkMode)
		eg = sb.Egress
		switch sb.NetworkMode {
		case config.NetworkNone:
			x.Lines = append(x.Lines, `sandbox: network = "none": the jail reaches nothing; the policy below applies only under network = "allowlist"`)
		case config.NetworkHost:
			x.Lines = append(x.Lines, `sandbox: network = "host": the jail shares the host's network, unchecked; the policy below applies only under network = "allowlist"`)
		default:
			x.Lines = append(x.Lines, `sandbox: network = "allowlist": every connection goes through warden's egress proxy`)
		}
	}
	pol, err := eg.Policy()
	if err != nil {
		return nil, err
	}
	d := pol.Decide(t)
	x.Decision, x.Rule, x.Why = d.Verdict.String(), d.Rule, d.Why
	var byRule string
	if d.Verdict == egresspolicy.Ask {
		set, err := config.RuleSet(cfg, dir)
		if err != nil {
			return nil, err
		}
		res := set.Decide(rules.Call{Tool: EgressTool, Host: t.String()})
		if res.Decision == rules.Allow || res.Decision == rules.Deny {
			x.Decision, x.Rule, x.Why = res.Decision.String(), "rules:"+res.Rule.Name(), res.Why
			byRule = fmt.Sprintf("rules: %s (%s) decides instead of a person", res.Rule, res.Rule.Name())
			if res.Decision == rules.Allow {
				byRule += "; as a person's approval, it admits public addresses only"
			}
		}
	}
	var addrs []netip.Addr
	if d.Verdict != egresspolicy.Deny && r != nil && !t.Host.IsIP() {
		ips, err := r.LookupNetIP(ctx, "ip", t.Host.Name)
		if err != nil {
			x.Addresses = append(x.Addresses, "lookup failed: "+err.Error())
		}
		addrs = ips
	}
	x.Lines = append(x.Lines, pol.Explain(t, addrs...)...)
	if byRule != "" {
		x.Lines = append(x.Lines, byRule)
	}
	for _, ip := range addrs {
		x.Addresses = append(x.Addresses, ip.Unmap().String())
	}
	for _, s := range eg.Secrets {
		for _, h := range s.Hosts {
			if ch, err := egresspolicy.ParseHost(h); err == nil && ch == t.Host {
				x.Secrets = append(x.Secrets, s.Env)
			}
		}
	}
	if len(x.Secrets) > 0 {
		x.Lines = append(x.Lines, "secrets: "+strings.Join(x.Secrets, ", ")+" sent to this host: TLS is terminated with the workspace CA, the placeholder replaced in request headers")
	}
	return x, nil
}

func parseNetTarget(s string) (egresspolicy.Target, error) {
	t, err := egresspolicy.ParseTarget(s)
	if err == nil {
		return t, nil
	}
	// No port: the host alone (a name, an IPv4 address or [IPv6]).
	h, herr := egresspolicy.ParseHost(s)
	if herr == nil {
		return egresspolicy.Target{Host: h, Port: 443}, nil
	}
	if strings.Contains(err.Error(), "missing :port") {
		return egresspolicy.Target{}, herr
	}
	return egresspolicy.Target{}, err
}

// jailEgress is the host side of network = "allowlist" for the jails of
// an App: unknown hosts go to the App's approver, connections to its audit
// trail. The asker is set once the approver exists (before any jail starts).
type jailEgress struct {
	opts  *sandbox.EgressOptions
	audit *EgressAudit
}

func newJailEgress(sink audit.Sink, log *slog.Logger) *jailEgress {
	ea := NewEgressAudit(sink, log)
	return &jailEgress{opts: &sandbox.EgressOptions{Auditor: ea}, audit: ea}
}

// ExecEgress is the host side of network = "allowlist" for a jail `warden
// exec` starts itself (no warden serve holds the workspace): questions
// through the terminal approver on the default store, connections to its
// audit trail. close releases both, after the jail is gone. For a
// workspace under another mode it returns nil and a no-op.
func ExecEgress(ctx context.Context, f Flags, log *slog.Logger) (*sandbox.EgressOptions, func(), error) {
	cfg, err := LoadConfig(f, log)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Sandbox == nil || cfg.Sandbox.NetworkMode != config.NetworkAllowlist {
		return nil, func() {}, nil
	}
	st, err := OpenStore("", cfg.Store)
	if err != nil {
		return nil, nil, err
	}
	approver, closeApprover, err := TerminalApprover(ctx, cfg, st, nil, log)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	je := newJailEgress(st, log)
	je.opts.Asker = &EgressAsker{Approver: approver, Rules: func(ws string) (*rules.Set, error) {
		// Read again at each question: an "always" answered at the first
		// one holds for the next.
		cfg, err := LoadConfig(f, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, err
		}
		return config.RuleSet(cfg, ws)
	}}
	return je.opts, func() {
		je.audit.Close()
		closeApprover()
		st.Close()
	}, nil
}
