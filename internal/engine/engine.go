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
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
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
	// ApprovalWait, when positive, bounds how long a supervised call waits
	// for a person: past it the call returns, telling the model that a
	// person has been asked and that the same call can be made again, and
	// the request stays pending (approval.Request.MaxWait). Zero waits for
	// the decision or the approval timeout.
	ApprovalWait time.Duration
	// Checkpoints records the workspace before each call that may change
	// it (checkpoint.go); nil records nothing.
	Checkpoints Checkpointer
}

// HookRunner runs the post-edit hooks for the files an edit changed and
// returns their output for the model (empty when none ran).
type HookRunner interface {
	AfterEdit(ctx context.Context, files []string) string
}

// Engine runs tool calls through the pipeline.
type Engine struct {
	opts  Options
	agent config.Agent
	// schemas holds each tool's resolved schema, resolved on the tool's
	// first call: a one-shot process resolves only the one it calls.
	schemasMu sync.Mutex
	schemas   map[string]*jsonschema.Resolved
	now       func() time.Time
	workRoot  string
}

// New checks opts and that every tool has a schema.
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
	for _, t := range opts.Registry.List() {
		if t.Schema == nil {
			return nil, fmt.Errorf("engine: tool %s has no schema", t.Name)
		}
	}
	return e, nil
}

// schema returns t's resolved schema, resolving it on first use. A schema
// that does not resolve is a bug in the tool: its calls are refused.
func (e *Engine) schema(t *tools.Tool) (*jsonschema.Resolved, error) {
	e.schemasMu.Lock()
	defer e.schemasMu.Unlock()
	if r, ok := e.schemas[t.Name]; ok {
		return r, nil
	}
	r, err := t.Schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tool %s has a bad schema (this is a bug in warden, not in your call): %w", t.Name, err)
	}
	e.schemas[t.Name] = r
	return r, nil
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
	facts tools.Facts
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
	d := e.decide(ctx, name, args)
	c.rec.Tool = d.Tool
	if d.Decision == Deny {
		return e.refuse(c, d.Rule, d.Message)
	}
	c.facts = d.facts
	c.rec.Rule = d.PolicyRule
	if !d.supervised || e.opts.DryRun { // dry run: nothing will run, so nobody needs to be asked
		c.rec.Decision = audit.DecisionAllow
		return e.execute(ctx, c, d.tool, d.args, d.facts.Locations)
	}
	out, fail, ok := e.approve(ctx, c, &d, e.approvalWait(ctx))
	if !ok {
		return fail
	}
	res := e.execute(ctx, c, d.tool, d.args, d.facts.Locations)
	if err := e.opts.Approver.Executed(context.WithoutCancel(ctx), out.ID, res.Success, audit.Excerpt(res.Output+res.Error, 500)); err != nil {
		e.opts.Log.Warn("recording an approved call's result failed", "request", out.ID, "err", err)
	}
	return res
}

// targets converts where a call's changes land into the approval's terms.
func targets(locs []tools.Location) []approval.Target {
	var out []approval.Target
	for _, l := range locs {
		out = append(out, approval.Target{Path: l.Path, Real: l.Real})
	}
	return out
}

// approve puts a supervised call to the approver (an auto-approve rule, a
// grant, a person) and records how it was decided. ok means run it: the
// approval is bound to exactly d's arguments. Otherwise fail is the result
// for the model.
func (e *Engine) approve(ctx context.Context, c *call, d *Decision, maxWait time.Duration) (out approval.Outcome, fail tools.Result, ok bool) {
	out, err := e.ask(ctx, d, maxWait)
	c.rec.RequestID, c.rec.DecidedBy, c.rec.Reason = out.ID, out.By, out.Reason
	var pe *approval.PendingError
	switch {
	case errors.Is(err, approval.ErrAborted):
		c.rec.Decision = audit.DecisionAborted
		return out, tools.Result{Error: "The user stopped the run at the approval prompt. Do not call more tools; finish with a short summary.", Stop: true}, false
	case errors.As(err, &pe):
		c.rec.Decision, c.rec.RequestID = audit.DecisionPending, pe.ID
		return out, tools.Result{Error: pendingMessage(pe)}, false
	case err != nil:
		c.rec.Decision = audit.DecisionError
		return out, tools.Result{Error: err.Error()}, false
	}
	if !out.Approved {
		c.rec.Decision = audit.DecisionDenied
		msg := fmt.Sprintf("The user denied this %s call", d.Tool)
		switch out.State {
		case store.TimedOut:
			c.rec.Decision = audit.DecisionTimedOut
			msg = fmt.Sprintf("Nobody approved this %s call in time, so it was denied", d.Tool)
		case store.Cancelled:
			c.rec.Decision = audit.DecisionCancelled
			msg = fmt.Sprintf("The approval request for this %s call was cancelled", d.Tool)
		}
		if out.Reason != "" {
			msg += ": " + out.Reason
		}
		return out, tools.Result{Error: msg + "."}, false
	}
	// The decision is bound to the exact call: run only what was approved.
	if out.Args != nil && (!bytes.Equal(out.Args, d.args) ||
		out.ArgsHash != approval.BindingHash(d.Tool, d.args, e.workRoot, e.opts.Env.Session, targets(d.facts.Locations)...)) {
		c.rec.Decision = audit.DecisionError
		return out, tools.Result{Error: fmt.Sprintf("the approval of request %s does not match this %s call; nothing was executed", out.ID, d.Tool)}, false
	}
	c.rec.Decision = audit.DecisionApproved
	switch {
	case out.Auto:
		c.rec.Decision = audit.DecisionAutoApproved
	case out.Grant != "":
		c.rec.Decision = audit.DecisionGranted
	}
	return out, tools.Result{}, true
}

// approvalWait is how long a supervised call made with ctx waits for a
// person: the caller's approval.WithMaxWait, else Options.ApprovalWait.
func (e *Engine) approvalWait(ctx context.Context) time.Duration {
	if d, ok := approval.MaxWaitFrom(ctx); ok {
		return d
	}
	return e.opts.ApprovalWait
}

// pendingMessage tells the model that a person has been asked and what it
// can do: make the same call again.
func pendingMessage(pe *approval.PendingError) string {
	return fmt.Sprintf("A person has been asked to approve this %s call (approval request %s) and has not decided yet, "+
		"so nothing ran. Make exactly the same call again to wait for the decision: if it was approved meanwhile, "+
		"it runs then (once); if it was denied, you get the reason. Tell the user it waits for approval "+
		"(`warden approvals approve %s`, or deny it with `warden approvals deny %s --reason R`); the request expires at %s.",
		pe.Tool, pe.ID, pe.ID, pe.ID, pe.ExpiresAt.Local().Format(time.DateTime))
}

func (e *Engine) ask(ctx context.Context, d *Decision, maxWait time.Duration) (approval.Outcome, error) {
	if e.opts.Approver == nil {
		return approval.Outcome{}, noChannel(d.Tool, d.pd)
	}
	req := e.request(d)
	req.MaxWait = maxWait
	if t := d.tool; t.Preview != nil {
		if p, err := t.Preview(ctx, e.opts.Env, d.args); err != nil {
			return approval.Outcome{}, err // the call would fail anyway: say why now, ask nobody
		} else if p != "" {
			req.Risk = strings.TrimSpace(req.Risk + "\n" + p)
		}
	}
	out, err := e.opts.Approver.Ask(ctx, req)
	var nc *approval.NoChannelError
	if errors.Is(err, approval.ErrNoChannel) && !errors.As(err, &nc) {
		err = noChannel(d.Tool, d.pd) // say the ways out, whatever the approver said
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
	undo, refused := e.checkpoint(ctx, c, t, args)
	if refused != nil {
		return *refused
	}
	out, err := t.Run(ctx, e.opts.Env, args)
	if err != nil {
		return tools.Result{Output: out + undo, Error: err.Error()}
	}
	out += undo
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
