package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/tools"
)

// The verdicts of the decision stage.
const (
	// Allow: the call runs with nobody asked (policy, an auto-approve
	// rule or an active grant).
	Allow = "allow"
	// Ask: the call is put to a person before it runs.
	Ask = "ask"
	// Deny: the call is refused; nobody is asked.
	Deny = "deny"
)

// The stages of the decision stage, in order; Decision.Stage names the one
// that decided.
const (
	StageLookup      = "lookup"       // the tool is unknown or outside the agent's set
	StageArguments   = "arguments"    // the arguments are not a valid object for the schema
	StageGuard       = "guard"        // a hard guard refused (confinement, masks, blocklist, ...)
	StagePolicy      = "policy"       // tool/group/default policy or the confirmation mode
	StageAutoApprove = "auto-approve" // an auto-approve rule approves a supervised call
	StageGrant       = "grant"        // an active grant approves a supervised call
)

// Decision is what the engine decides about one call before it runs it or
// asks a person. Call, Explain and the hooks of agent hosts all take it from
// one function (decide), so explain says exactly what a call would meet.
type Decision struct {
	Tool string `json:"tool"`
	// Decision is Allow, Ask or Deny.
	Decision string `json:"decision"`
	// Stage is where the decision was made (Stage* constants).
	Stage string `json:"stage"`
	// Rule names what decided: a guard's rule id, a policy key, the
	// confirmation mode, an auto-approve rule (with file:line), a grant.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason"`
	// Mode is the effective confirmation mode (the agent's may be stricter).
	Mode string `json:"mode"`
	// Class is run_command's command class, when the guard judged one.
	Class string `json:"class,omitempty"`
	Risk  string `json:"risk,omitempty"`
	// Policy and PolicyRule are the policy resolution's own verdict
	// (allow, supervised, deny) and rule, when the call got that far; an
	// auto-approve rule or a grant then decides a supervised call.
	Policy     string `json:"policy,omitempty"`
	PolicyRule string `json:"policy_rule,omitempty"`
	// AutoApprove names the auto-approve rule that approves the call
	// (file:line), when one does.
	AutoApprove string `json:"auto_approve,omitempty"`
	// Grant is the active grant that approves the call, when one does.
	Grant *GrantRef `json:"grant,omitempty"`
	// Message is what a refused call tells the model (Call's error).
	Message string `json:"-"`

	tool       *tools.Tool
	args       json.RawMessage // canonical
	facts      tools.Facts
	pd         policy.Decision
	supervised bool // Call goes through the approver (a person, a rule or a grant)
}

// GrantRef is the grant a decision relies on.
type GrantRef struct {
	ID        string    `json:"id"`
	CreatedBy string    `json:"created_by"`
	ExpiresAt time.Time `json:"expires_at"`
	Uses      int       `json:"uses"`
}

// Decide runs the decision stage for a call and reports what Call would do
// before running it or asking a person. It runs nothing, asks nobody and
// records nothing.
func (e *Engine) Decide(ctx context.Context, name string, args json.RawMessage) Decision {
	return e.decide(ctx, name, args)
}

// decide is the decision stage: lookup → schema → hard guards → policy →
// auto-approve rules → active grants.
func (e *Engine) decide(ctx context.Context, name string, args json.RawMessage) Decision {
	cfg := e.opts.Env.Config
	d := Decision{Tool: name, Mode: policy.EffectiveMode(cfg, e.agent)}
	deny := func(stage, rule, reason, msg string) Decision {
		d.Decision, d.Stage, d.Rule, d.Reason, d.Message = Deny, stage, rule, reason, msg
		return d
	}
	t, ok := e.opts.Registry.Get(policy.Canonical(name))
	if !ok || !policy.AgentHas(cfg, e.agent, t.Name, t.Group) {
		return deny(StageLookup, "not-found", fmt.Sprintf("tool '%s' not found for this agent", name),
			fmt.Sprintf("Tool '%s' not found. Available tools: %s", name, e.names()))
	}
	d.Tool, d.tool = t.Name, t

	// Canonical arguments: what is judged, asked about and run are the same bytes.
	canonArgs, err := canonical(args)
	if err != nil {
		return deny(StageArguments, "invalid-arguments", err.Error(), "Invalid arguments: "+err.Error())
	}
	d.args = canonArgs
	var inst any
	_ = json.Unmarshal(canonArgs, &inst)
	schema, err := e.schema(t)
	if err != nil {
		return deny(StageArguments, "bad-schema", err.Error(), err.Error())
	}
	if err := schema.Validate(inst); err != nil {
		return deny(StageArguments, "invalid-arguments", err.Error(), fmt.Sprintf("Invalid arguments for %s: %v", t.Name, err))
	}

	if t.Guard != nil {
		d.facts, err = t.Guard(e.opts.Env, canonArgs)
		// Where a change lands elsewhere than its path says, the person is
		// told first (chat channels cut a long risk to its start).
		d.Class, d.Risk = d.facts.CommandClass, strings.TrimSpace(tools.MovedNote(d.facts.Locations)+d.facts.Risk)
		if err != nil {
			return deny(StageGuard, ruleOf(err), err.Error(), "Security error: "+err.Error())
		}
	}

	pd := policy.Decide(cfg, e.agent, policy.Call{Tool: t.Name, Group: t.Group, Sensitive: t.Sensitive, CommandClass: d.Class})
	d.pd, d.Policy, d.PolicyRule = pd, pd.Action.String(), pd.Rule
	d.Stage, d.Rule, d.Reason = StagePolicy, pd.Rule, pd.Reason
	switch pd.Action {
	case policy.Deny:
		d.Decision = Deny
		d.Message = fmt.Sprintf("Refused by policy: %s (%s). Do not retry this call; tell the user if it is needed.", t.Name, pd.Reason)
		return d
	case policy.Allow:
		d.Decision = Allow
		return d
	}
	d.Decision, d.supervised = Ask, true
	fs, ok := e.opts.Approver.(approval.Foreseer)
	if !ok {
		return d
	}
	f, err := fs.Foresee(ctx, e.request(&d))
	switch {
	case err != nil:
		d.Reason += fmt.Sprintf(" (auto-approve rules and grants could not be read: %v)", err)
	case f.Rule != "":
		d.Decision, d.Stage, d.Rule, d.AutoApprove = Allow, StageAutoApprove, f.Rule, f.Rule
		d.Reason = fmt.Sprintf("supervised (%s), approved by the auto-approve rule %s", pd.Reason, f.Rule)
	case f.Grant != nil:
		g := f.Grant
		d.Decision, d.Stage, d.Rule = Allow, StageGrant, "grant "+g.ID
		d.Grant = &GrantRef{ID: g.ID, CreatedBy: g.CreatedBy, ExpiresAt: g.ExpiresAt, Uses: g.Uses}
		d.Reason = fmt.Sprintf("supervised (%s), approved by grant %s from %s until %s", pd.Reason, g.ID, g.CreatedBy,
			g.ExpiresAt.Local().Format(time.DateTime))
	}
	return d
}

// request is the approval request for a supervised decision (without the
// risk's preview, which Call adds when it really asks).
func (e *Engine) request(d *Decision) *approval.Request {
	return &approval.Request{
		Tool: d.Tool, Args: d.args, Workspace: e.workRoot, Session: e.opts.Env.Session,
		Agent: e.opts.Env.Agent, Rule: d.pd.Rule, Risk: d.Risk, Targets: targets(d.facts.Locations),
	}
}
