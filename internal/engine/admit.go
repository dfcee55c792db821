package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/tools"
)

// Pending is Admit's verdict for a supervised call that a person has been
// asked about and has not decided within the wait.
const Pending = "pending"

// Audit events of calls an agent host runs itself.
const (
	EventHostCall   = "host_tool_call"
	EventHostResult = "host_tool_result"
)

// AdmitOptions say how Admit decides for an agent host.
type AdmitOptions struct {
	// Host names the agent host that runs the call ("claude-code"); the
	// audit record carries it as the agent.
	Host string
	// HostTool is the host's own name for the call ("Bash"), and
	// ToolUseID its id for it, both recorded.
	HostTool  string
	ToolUseID string
	// HostAsks puts a supervised call that no rule or grant approves to
	// the host's own prompt instead of warden's approval flow.
	HostAsks bool
	// MaxWait bounds the wait for a person; past it the verdict is
	// Pending and the request stays open for an identical later call.
	// Zero: the engine's ApprovalWait.
	MaxWait time.Duration
}

// Admission is Admit's answer for one call.
type Admission struct {
	// Decision is the decision stage's report, as Explain gives it.
	Decision Decision
	// Verdict is Allow (the host may run it), Deny, Ask (the host's own
	// prompt decides) or Pending.
	Verdict string
	// RequestID is the approval request, when a person was asked.
	RequestID string
	// Message is why, written for the model (a refusal, a pending request)
	// or, for Allow and Ask, for the person reading the host's log.
	Message string
	// Checkpoint is the checkpoint taken before the host runs a call that
	// may change the workspace ("" for none): warden undo takes it back.
	Checkpoint string
}

// Admit takes a call that an agent host will run itself (its own Bash,
// Write, ... tools, seen through the host's hook) through the same pipeline
// as Call — decision stage, then the approver for a supervised call — and
// stops before execution. It writes one audit record (EventHostCall), with
// the request id when a person was asked; an approved request is recorded
// as executed by the host. It never panics out to its caller.
func (e *Engine) Admit(ctx context.Context, name string, args json.RawMessage, o AdmitOptions) (adm Admission) {
	c := &call{start: e.now()}
	c.rec = audit.Record{
		Event: EventHostCall, Session: e.opts.Env.Session, Agent: agentOf(o.Host, e.opts.Env.Agent),
		Workspace: e.workRoot, Tool: name, Args: audit.Sanitize(args, audit.DefaultMaxLen),
		Reason: hostReason(o),
	}
	var res tools.Result
	defer func() {
		if p := recover(); p != nil {
			e.opts.Log.Error("admission panicked", "tool", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			adm.Verdict = Deny
			adm.Message = fmt.Sprintf("internal error while deciding %s: %v (this is a bug in warden, not in your call)", name, p)
			res = tools.Result{Error: adm.Message}
			c.rec.Decision = audit.DecisionError
		}
		e.finish(ctx, c, res)
	}()
	d := e.decide(ctx, name, args)
	adm.Decision = d
	c.rec.Tool = d.Tool
	switch {
	case d.Decision == Deny:
		res = e.refuse(c, d.Rule, d.Message)
		adm.Verdict, adm.Message = Deny, d.Message
	case !d.supervised:
		c.rec.Rule, c.rec.Decision = d.PolicyRule, audit.DecisionAllow
		adm.Verdict, adm.Message = Allow, "allowed: "+d.Reason
		res = tools.Result{Success: true, Output: "allowed; the host runs it"}
	case o.HostAsks && d.Decision == Ask:
		c.rec.Rule, c.rec.Decision = d.PolicyRule, audit.DecisionHostAsk
		adm.Verdict, adm.Message = Ask, "a person must approve this call: "+d.Reason
		res = tools.Result{Output: "put to the host's own prompt"}
	default:
		c.rec.Rule = d.PolicyRule
		wait := o.MaxWait
		if wait <= 0 {
			wait = e.approvalWait(ctx)
		}
		out, fail, ok := e.approve(ctx, c, &d, wait)
		adm.RequestID = c.rec.RequestID
		if !ok {
			adm.Verdict, adm.Message, res = Deny, fail.Error, fail
			if c.rec.Decision == audit.DecisionPending {
				adm.Verdict = Pending
			}
			return adm
		}
		adm.Verdict = Allow
		adm.Message = fmt.Sprintf("approved: request %s, %s by %s", out.ID, c.rec.Decision, out.By)
		res = tools.Result{Success: true, Output: "approved; the host runs it"}
		if !e.checkpointHostCall(ctx, c, &d, &adm, &res) {
			return adm
		}
		// warden hands the call to the host: the request is executed as far
		// as warden can see; the host's result comes as EventHostResult.
		if err := e.opts.Approver.Executed(context.WithoutCancel(ctx), out.ID, true, "handed to "+agentOf(o.Host, "the host")+" to run"); err != nil {
			e.opts.Log.Warn("recording an approved call's hand-over failed", "request", out.ID, "err", err)
		}
		return adm
	}
	if adm.Verdict == Allow || adm.Verdict == Ask {
		e.checkpointHostCall(ctx, c, &d, &adm, &res)
	}
	return adm
}

// checkpointHostCall takes the checkpoint before a host runs a call that
// may change the workspace (its own Write, Edit or shell), as the engine
// does before running one itself, so that warden undo takes back what the
// host's tools did too. A call put to the host's own prompt is checkpointed
// before the question: what the person approves runs after it. When no
// checkpoint can be taken the call is refused, and false is returned.
func (e *Engine) checkpointHostCall(ctx context.Context, c *call, d *Decision, adm *Admission, res *tools.Result) bool {
	if d.tool == nil {
		return true
	}
	c.facts = d.facts
	note, refused := e.checkpoint(ctx, c, d.tool, d.args)
	if refused != nil {
		adm.Verdict, adm.Message, *res = Deny, refused.Error, *refused
		return false
	}
	if note != "" {
		adm.Checkpoint = c.rec.Checkpoint
		adm.Message += fmt.Sprintf(" (checkpoint %s taken first: `warden undo` takes the change back)", c.rec.Checkpoint)
	}
	return true
}

// HostResult records what an agent host reports after running a call it
// was admitted for (a PostToolUse event): the call and a sanitised excerpt
// of its result, under EventHostResult.
func (e *Engine) HostResult(ctx context.Context, name string, args json.RawMessage, o AdmitOptions, success bool, result string) {
	rec := audit.Record{
		Time: e.now().UTC(), Event: EventHostResult, Session: e.opts.Env.Session, Agent: agentOf(o.Host, e.opts.Env.Agent),
		Workspace: e.workRoot, Tool: name, Args: audit.Sanitize(args, audit.DefaultMaxLen),
		Reason: hostReason(o), Success: success, Result: audit.Excerpt(result, audit.DefaultMaxLen),
	}
	if e.opts.Audit != nil {
		if err := e.opts.Audit.Write(context.WithoutCancel(ctx), &rec); err != nil {
			e.opts.Log.Error("audit write failed", "err", err)
		}
	}
}

func agentOf(host, fallback string) string {
	if host != "" {
		return host
	}
	return fallback
}

// hostReason records the host's own name and id for the call.
func hostReason(o AdmitOptions) string {
	switch {
	case o.HostTool != "" && o.ToolUseID != "":
		return fmt.Sprintf("host tool %s (%s)", audit.Truncate(o.HostTool, 100), audit.Truncate(o.ToolUseID, 100))
	case o.HostTool != "":
		return "host tool " + audit.Truncate(o.HostTool, 100)
	}
	return ""
}
