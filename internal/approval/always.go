package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/rules"
	"github.com/wardenhq/warden/internal/store"
)

// RuleWriter keeps the lasting rules an "always" creates: the user's own
// config file (rulefile.User), never the workspace's. AddRules returns
// where they were written.
type RuleWriter interface {
	AddRules(rs []config.Rule) (string, error)
}

// ErrNoRuleWriter means this process cannot write lasting rules.
var ErrNoRuleWriter = errors.New("this process cannot write lasting rules (no user config)")

// ErrAlwaysRule wraps why "always" cannot be given as asked: no narrow
// rule covers the call, or the edited rules do not fit it. The request
// is left pending.
var ErrAlwaysRule = errors.New("no lasting rule")

// ruleIDs makes rule ids; a package var so tests can fix them.
var ruleIDs = func() string {
	return "always-" + NewID()[:12]
}

// ProposeAlways returns the rules "always" writes for a call: the narrowest
// allow rules that cover it (rules.Narrowest: an exact command, a literal
// path, a host, the tool), scoped to its workspace. paths are the
// workspace-relative paths it changes (apply_patch's files), when known.
func ProposeAlways(tool string, args json.RawMessage, workspace string, paths []string) ([]config.Rule, error) {
	if workspace == "" || !filepath.IsAbs(workspace) {
		return nil, errors.New("a lasting rule needs the request's workspace")
	}
	specs, err := rules.Narrowest(tool, args, paths)
	if err != nil {
		return nil, err
	}
	out := make([]config.Rule, len(specs))
	for i, s := range specs {
		out[i] = config.Rule{Command: s.Command, Exact: s.Exact, Tool: s.Tool, Path: s.Path, Host: s.Host,
			Decision: "allow", Workspace: workspace}
		if s.Command != nil {
			out[i].Tool = ""
		}
	}
	return out, nil
}

// DescribeRules renders rules for a person deciding, one per line.
func DescribeRules(rs []config.Rule) string {
	var b strings.Builder
	for _, r := range rs {
		spec, err := r.Spec()
		if err != nil {
			continue
		}
		c, err := rules.Compile(spec)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s, in %s\n", c, r.Workspace)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// checkAlways checks rules a person edited before "always" writes them:
// allow rules for the request's workspace that, together, allow the call.
func checkAlways(a *store.Approval, rs []config.Rule, paths []string) error {
	if len(rs) == 0 {
		return errors.New("no rule to write")
	}
	var specs []rules.Spec
	for i := range rs {
		r := &rs[i]
		if r.Decision != "allow" {
			return fmt.Errorf("rule %d: \"always\" writes allow rules", i+1)
		}
		if r.Workspace != a.Workspace {
			return fmt.Errorf("rule %d: \"always\" rules hold in the request's workspace %s only", i+1, a.Workspace)
		}
		spec, err := r.Spec()
		if err != nil {
			return fmt.Errorf("rule %d: %w", i+1, err)
		}
		if _, err := rules.Compile(spec); err != nil {
			return fmt.Errorf("rule %d: %w", i+1, err)
		}
		specs = append(specs, spec)
	}
	set, err := rules.NewSet(specs)
	if err != nil {
		return err
	}
	c := rules.Call{Tool: a.Tool, Paths: paths}
	var args struct {
		Command string `json:"command"`
		Path    string `json:"path"`
		URL     string `json:"url"`
	}
	_ = json.Unmarshal(a.Args, &args)
	c.Command = args.Command
	if args.Path != "" {
		c.Paths = []string{args.Path}
	}
	if u, err := urlHost(args.URL); err == nil {
		c.Host = u
	}
	if a.Tool == rules.NetworkTool {
		if t, err := rules.NetworkTarget(a.Args); err == nil {
			c.Host = t
		}
	}
	if res := set.Decide(c); res.Decision != rules.Allow {
		return fmt.Errorf("the rules do not allow the call they are written for (%s)", res.Why)
	}
	return nil
}

// ApproveAlways approves PENDING request id, as Decide does, and then
// writes rules into the user config so that the same call (and what the
// rules say, nothing more) is allowed from now on in the request's
// workspace. rs nil writes ProposeAlways's rules; edited rules must be
// allow rules for the request's workspace that allow the call. Each rule
// written is audited as rule_created with the request id. A request
// already decided is refused like a late decision, and nothing is written.
func (b *Broker) ApproveAlways(ctx context.Context, id, supervisor, reason string, rs []config.Rule) (*store.Approval, []config.Rule, error) {
	if err := b.checkSupervisor(supervisor); err != nil {
		return nil, nil, err
	}
	if b.o.Rules == nil {
		return nil, nil, ErrNoRuleWriter
	}
	cur, err := b.o.Store.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	paths := b.pathsOf(id)
	if rs == nil {
		if rs, err = ProposeAlways(cur.Tool, cur.Args, cur.Workspace, paths); err != nil {
			return nil, nil, fmt.Errorf("%w for request %s: %v; approve it once or for the session", ErrAlwaysRule, id, err)
		}
	}
	if err := checkAlways(cur, rs, paths); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrAlwaysRule, err)
	}
	if reason == "" {
		reason = "always"
	}
	a, err := b.Decide(ctx, id, supervisor, true, reason)
	if err != nil {
		return nil, nil, err
	}
	written, err := b.writeAlways(ctx, a, rs, supervisor)
	return a, written, err
}

// writeAlways writes rs for approved request a and audits each.
func (b *Broker) writeAlways(ctx context.Context, a *store.Approval, rs []config.Rule, by string) ([]config.Rule, error) {
	if b.o.Rules == nil {
		return nil, fmt.Errorf("request %s was approved once: %w", a.ID, ErrNoRuleWriter)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for i := range rs {
		rs[i].ID, rs[i].RequestID, rs[i].Created = ruleIDs(), a.ID, now
	}
	where, err := b.o.Rules.AddRules(rs)
	if err != nil {
		return nil, fmt.Errorf("request %s was approved once, but the lasting rule was not written: %w", a.ID, err)
	}
	for _, r := range rs {
		rec := b.record(a, "rule_created", "")
		rec.Rule, rec.DecidedBy, rec.Success = r.ID, by, true
		rec.Reason = DescribeRules([]config.Rule{r}) + " (written to " + where + ")"
		if _, err := b.o.Store.AppendAudit(ctx, rec); err != nil {
			b.log.Warn("failed to audit a rule", "rule", r.ID, "err", err)
		}
		b.mirror(ctx, a.ID, rec)
		b.log.Info("lasting rule written", "rule", r.ID, "request", a.ID, "file", where)
	}
	return rs, nil
}

// pathsOf are the workspace-relative paths request id changes, when this
// broker asked it (apply_patch's files).
func (b *Broker) pathsOf(id string) []string {
	var out []string
	for _, t := range b.targetsOf(id) {
		out = append(out, t.Path)
	}
	return out
}

func urlHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return u.Hostname(), nil
}

// decideAtTerminal stores the terminal's answer: once, with a grant for
// the session (ans.Grant), or always (ans.Always: the proposed rules are
// written after the approval is stored).
func (b *Broker) decideAtTerminal(ctx context.Context, a *store.Approval, t store.Transition, ans Answer) error {
	rec := b.decisionRecord(a, t)
	if t.To == store.Approved && ans.Grant > 0 && ans.WorkspaceGrant && a.ScopeHash != "" {
		d, err := b.GrantDuration(ans.Grant)
		if err != nil {
			return err
		}
		_, g, err := b.o.Store.DecideWithScopedGrant(ctx, a.ID, t, NewID(), d, a.ScopeHash, rec)
		if err != nil {
			return err
		}
		b.log.Info("approved at the terminal with a workspace+agent grant", "id", a.ID, "grant", g.ID, "until", g.ExpiresAt.Format(time.RFC3339))
		return nil
	}
	if t.To == store.Approved && ans.Grant > 0 && a.Session != "" {
		d, err := b.GrantDuration(ans.Grant)
		if err != nil {
			return err
		}
		if _, g, err := b.o.Store.DecideWithGrant(ctx, a.ID, t, NewID(), d, rec); err != nil {
			return err
		} else {
			b.log.Info("approved at the terminal with a grant", "id", a.ID, "grant", g.ID, "until", g.ExpiresAt.Format(time.RFC3339))
		}
		return nil
	}
	if _, err := b.o.Store.Decide(ctx, a.ID, t, rec); err != nil {
		return err
	}
	if t.To == store.Approved && ans.Always {
		rs, err := ProposeAlways(a.Tool, a.Args, a.Workspace, b.pathsOf(a.ID))
		if err == nil {
			_, err = b.writeAlways(ctx, a, rs, TerminalSupervisor)
		}
		if err != nil {
			b.log.Warn("approved once; no lasting rule", "id", a.ID, "err", err)
		}
	}
	return nil
}
