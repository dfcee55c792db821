package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/rules"
	"github.com/wardenhq/warden/internal/shellpolicy"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// Options configure an Engine. The zero value of every optional field is
// the safe default.
type Options struct {
	Registry *tools.Registry
	Env      *tools.Env
	// AgentName selects the agent whose tool set and mode apply ("" = build).
	AgentName string
	// Approver decides supervised calls; nil means nobody can be asked, so
	// supervised calls fail safe.
	Approver approval.Approver
	// Audit receives one record per call; nil records nothing.
	Audit audit.Sink
	// DryRun executes nothing: calls that would run report [DRY-RUN].
	DryRun bool
	// Hooks run after successful edits; nil runs none.
	Hooks HookRunner
	// Log receives human-readable events; nil discards them.
	Log *slog.Logger
}

// HookRunner runs the post-edit hooks for the files an edit changed and
// returns their output for the model (empty when none ran).
type HookRunner interface {
	AfterEdit(ctx context.Context, files []string) string
}

// Engine runs tool calls through the pipeline.
type Engine struct {
	opts     Options
	agent    config.Agent
	schemas  map[string]*jsonschema.Resolved
	now      func() time.Time
	workRoot string
	// rules are the [[rules]] in force here; judgeOpts judge a command of
	// a plain line alone, to see whether the mode allows it without one.
	rules     *rules.Set
	judgeOpts *shellpolicy.Options
}

// New checks opts and prepares the tools' schemas.
func New(opts Options) (*Engine, error) {
	if opts.Registry == nil || opts.Env == nil || opts.Env.Config == nil || opts.Env.FS == nil {
		return nil, errors.New("engine: Registry, Env, Env.Config and Env.FS are required")
	}
	agent, err := policy.LookupAgent(opts.Env.Config, opts.AgentName)
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{opts: opts, agent: agent, schemas: map[string]*jsonschema.Resolved{}, now: time.Now}
	if opts.Env.Root != nil {
		e.workRoot = opts.Env.Root.Dir()
	}
	if e.rules, err = compileRules(opts.Env.Config, e.workRoot); err != nil {
		return nil, err
	}
	if e.judgeOpts, err = tools.JudgeOptions(opts.Env.Config); err != nil {
		e.judgeOpts = nil // run_command refuses every call with this error
	}
	for _, t := range opts.Registry.List() {
		if t.Schema == nil {
			return nil, fmt.Errorf("engine: tool %s has no schema", t.Name)
		}
		r, err := t.Schema.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("engine: tool %s: bad schema: %w", t.Name, err)
		}
		e.schemas[t.Name] = r
	}
	return e, nil
}

// Tools returns the tools the engine's agent may call.
func (e *Engine) Tools() []*tools.Tool {
	var out []*tools.Tool
	for _, t := range e.opts.Registry.List() {
		if policy.AgentHas(e.opts.Env.Config, e.agent, t.Name, t.Group) {
			out = append(out, t)
		}
	}
	return out
}

// call is one call's progress through the pipeline, for the audit record.
type call struct {
	rec   audit.Record
	start time.Time
}

// Call runs one tool call through the whole pipeline. It never panics and
// never fails with a Go error: the Result says what happened.
func (e *Engine) Call(ctx context.Context, name string, args json.RawMessage) (res tools.Result) {
	c := &call{start: e.now()}
	c.rec = audit.Record{
		Event: "tool_call", Session: e.opts.Env.Session, Agent: e.opts.Env.Agent,
		Workspace: e.workRoot, Tool: name, Args: audit.Sanitize(args, audit.DefaultMaxLen),
	}
	defer func() {
		if p := recover(); p != nil {
			e.opts.Log.Error("tool panicked", "tool", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res = tools.Result{Error: fmt.Sprintf("internal error in %s: %v (this is a bug in warden, not in your call)", name, p)}
			if c.rec.Decision == "" {
				c.rec.Decision = audit.DecisionError
			}
		}
		e.finish(ctx, c, res)
	}()
	return e.run(ctx, c, name, args)
}

func (e *Engine) run(ctx context.Context, c *call, name string, args json.RawMessage) tools.Result {
	cfg := e.opts.Env.Config
	canon := policy.Canonical(name)
	t, ok := e.opts.Registry.Get(canon)
	if !ok || !policy.AgentHas(cfg, e.agent, t.Name, t.Group) {
		return e.refuse(c, "not-found", fmt.Sprintf("Tool '%s' not found. Available tools: %s", name, e.names()))
	}
	c.rec.Tool = t.Name

	// Canonical arguments: what is judged, asked about and run are the same bytes.
	canonArgs, err := canonical(args)
	if err != nil {
		return e.refuse(c, "invalid-arguments", "Invalid arguments: "+err.Error())
	}
	var inst any
	_ = json.Unmarshal(canonArgs, &inst)
	if err := e.schemas[t.Name].Validate(inst); err != nil {
		return e.refuse(c, "invalid-arguments", fmt.Sprintf("Invalid arguments for %s: %v", t.Name, err))
	}

	var facts tools.Facts
	if t.Guard != nil {
		facts, err = t.Guard(e.opts.Env, canonArgs)
		if err != nil {
			return e.refuse(c, ruleOf(err), "Security error: "+err.Error())
		}
	}

	d := policy.Decide(cfg, e.agent, policy.Call{Tool: t.Name, Group: t.Group, Sensitive: t.Sensitive, CommandClass: facts.CommandClass})
	d = e.applyRules(t, canonArgs, facts, d)
	c.rec.Rule = d.Rule
	switch d.Action {
	case policy.Deny:
		return e.refuse(c, d.Rule, fmt.Sprintf("Refused by policy: %s (%s). Do not retry this call; tell the user if it is needed.", t.Name, d.Reason))
	case policy.Supervised:
		if e.opts.DryRun {
			break // nothing will run, so nobody needs to be asked
		}
		out, err := e.ask(ctx, t, canonArgs, facts, d)
		c.rec.RequestID, c.rec.DecidedBy, c.rec.Reason = out.ID, out.By, out.Reason
		if errors.Is(err, approval.ErrAborted) {
			c.rec.Decision = audit.DecisionAborted
			return tools.Result{Error: "The user stopped the run at the approval prompt. Do not call more tools; finish with a short summary.", Stop: true}
		}
		if err != nil {
			c.rec.Decision = audit.DecisionError
			return tools.Result{Error: err.Error()}
		}
		if !out.Approved {
			c.rec.Decision = audit.DecisionDenied
			msg := fmt.Sprintf("The user denied this %s call", t.Name)
			switch out.State {
			case store.TimedOut:
				c.rec.Decision = audit.DecisionTimedOut
				msg = fmt.Sprintf("Nobody approved this %s call in time, so it was denied", t.Name)
			case store.Cancelled:
				c.rec.Decision = audit.DecisionCancelled
				msg = fmt.Sprintf("The approval request for this %s call was cancelled", t.Name)
			}
			if out.Reason != "" {
				msg += ": " + out.Reason
			}
			return tools.Result{Error: msg + "."}
		}
		// The decision is bound to the exact call: run only what was approved.
		if out.Args != nil && (!bytes.Equal(out.Args, canonArgs) ||
			out.ArgsHash != approval.BindingHash(t.Name, canonArgs, e.workRoot, e.opts.Env.Session, targets(facts.Locations)...)) {
			c.rec.Decision = audit.DecisionError
			return tools.Result{Error: fmt.Sprintf("the approval of request %s does not match this %s call; nothing was executed", out.ID, t.Name)}
		}
		c.rec.Decision = audit.DecisionApproved
		switch {
		case out.Auto:
			c.rec.Decision = audit.DecisionAutoApproved
		case out.Grant != "":
			c.rec.Decision = audit.DecisionGranted
		}
		res := e.execute(ctx, c, t, canonArgs, facts.Locations)
		if err := e.opts.Approver.Executed(context.WithoutCancel(ctx), out.ID, res.Success, audit.Excerpt(res.Output+res.Error, 500)); err != nil {
			e.opts.Log.Warn("recording an approved call's result failed", "request", out.ID, "err", err)
		}
		return res
	}
	if c.rec.Decision == "" {
		c.rec.Decision = audit.DecisionAllow
	}
	return e.execute(ctx, c, t, canonArgs, facts.Locations)
}

// targets converts where a call's changes land into the approval's terms.
func targets(locs []tools.Location) []approval.Target {
	var out []approval.Target
	for _, l := range locs {
		out = append(out, approval.Target{Path: l.Path, Real: l.Real})
	}
	return out
}

func (e *Engine) ask(ctx context.Context, t *tools.Tool, args json.RawMessage, facts tools.Facts, d policy.Decision) (approval.Outcome, error) {
	if e.opts.Approver == nil {
		return approval.Outcome{}, noChannel(t.Name, d)
	}
	// Where a change lands elsewhere than its path says, the person is
	// told first (chat channels cut a long risk to its start).
	risk := strings.TrimSpace(tools.MovedNote(facts.Locations) + facts.Risk)
	if t.Preview != nil {
		if p, err := t.Preview(ctx, e.opts.Env, args); err != nil {
			return approval.Outcome{}, err // the call would fail anyway: say why now, ask nobody
		} else if p != "" {
			risk = strings.TrimSpace(risk + "\n" + p)
		}
	}
	req := &approval.Request{
		Tool: t.Name, Args: args, Workspace: e.workRoot, Session: e.opts.Env.Session,
		Agent: e.opts.Env.Agent, Rule: d.Rule, Risk: risk, Targets: targets(facts.Locations),
	}
	out, err := e.opts.Approver.Ask(ctx, req)
	var nc *approval.NoChannelError
	if errors.Is(err, approval.ErrNoChannel) && !errors.As(err, &nc) {
		err = noChannel(t.Name, d) // say the ways out, whatever the approver said
	}
	return out, err
}

// noChannel is seed 000's NoTTY rule for an engine with no approver at
// all: fail safe, and say the ways out.
func noChannel(tool string, d policy.Decision) error {
	return &approval.NoChannelError{Tool: tool, Rule: d.Reason}
}

// execute runs the call, its changes pinned to the locations its guard
// found (a path that leads elsewhere by now is refused).
func (e *Engine) execute(ctx context.Context, c *call, t *tools.Tool, args json.RawMessage, locs []tools.Location) tools.Result {
	ctx = tools.WithPins(ctx, locs)
	if e.opts.DryRun {
		c.rec.Decision = audit.DecisionDryRun
		return tools.Result{Success: true, Output: fmt.Sprintf("[DRY-RUN] %s would run with %s", t.Name, audit.Truncate(string(args), audit.DefaultMaxLen))}
	}
	out, err := t.Run(ctx, e.opts.Env, args)
	if err != nil {
		return tools.Result{Output: out, Error: err.Error()}
	}
	if e.opts.Hooks != nil && t.Edits != nil {
		if files := t.Edits(args); len(files) > 0 {
			if h := e.opts.Hooks.AfterEdit(ctx, files); h != "" {
				out += "\n\n" + h
			}
		}
	}
	return tools.Result{Success: true, Output: out}
}

func (e *Engine) refuse(c *call, rule, msg string) tools.Result {
	c.rec.Decision = audit.DecisionDeny
	c.rec.Rule = rule
	return tools.Result{Error: msg}
}

func (e *Engine) finish(ctx context.Context, c *call, res tools.Result) {
	c.rec.Time = c.start.UTC()
	c.rec.Duration = float64(e.now().Sub(c.start).Microseconds()) / 1000
	c.rec.Success = res.Success
	c.rec.Error = audit.Excerpt(res.Error, audit.DefaultMaxLen)
	c.rec.Result = audit.Excerpt(res.Output, audit.DefaultMaxLen)
	if e.opts.Audit != nil {
		if err := e.opts.Audit.Write(context.WithoutCancel(ctx), &c.rec); err != nil {
			e.opts.Log.Error("audit write failed", "err", err)
		}
	}
	e.opts.Log.Log(ctx, slog.LevelInfo, "tool call", "tool", c.rec.Tool, "decision", c.rec.Decision, "rule", c.rec.Rule,
		"success", res.Success, "ms", c.rec.Duration)
}

func (e *Engine) names() string {
	var n []string
	for _, t := range e.Tools() {
		n = append(n, t.Name)
	}
	return strings.Join(n, ", ")
}

// ruleOf names the guard that refused, from the error's type.
func ruleOf(err error) string {
	var r interface{ RuleID() string }
	switch {
	case errors.As(err, &r):
		return r.RuleID()
	case errors.Is(err, workspace.ErrEscapes):
		return "workspace-escape"
	case errors.Is(err, workspace.ErrMasked):
		return "masked-path"
	case errors.Is(err, workspace.ErrProtected):
		return "protected-path"
	case errors.Is(err, workspace.ErrInvalid):
		return "invalid-path"
	case errors.Is(err, tools.ErrDeleteDisabled):
		return "delete-disabled"
	}
	return "guard"
}

// canonical re-encodes the arguments the one way every later stage reads
// them (approval.Canonical: sorted keys, last duplicate wins), and requires
// an object: what is judged, asked about, stored and run are the same bytes.
func canonical(args json.RawMessage) (json.RawMessage, error) {
	c, err := approval.Canonical(args)
	if err != nil {
		return nil, err
	}
	if len(c) == 0 || c[0] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	return c, nil
}
