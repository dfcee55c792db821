package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// Defaults of the broker.
const (
	DefaultTimeout = 300 * time.Second
	// DefaultPoll is how often a waiting request re-reads the store besides
	// the store's own wake-ups (Store.Watch: at once for this process's
	// decisions and, on PostgreSQL, other processes'; within 50 ms for
	// other processes on SQLite): a safety net.
	DefaultPoll = 2 * time.Second
	// TerminalSupervisor is decided_by for answers at this process's prompt:
	// the person at the terminal that started warden.
	TerminalSupervisor = "terminal"
)

// ErrAborted means the person at the prompt chose to stop the whole run.
var ErrAborted = errors.New("aborted at the approval prompt")

// ErrReasonRequired means a denial came without a reason.
var ErrReasonRequired = errors.New("a denial needs a reason: the agent is told why")

// ErrNotSupervisor means someone not configured as a supervisor tried to decide.
var ErrNotSupervisor = errors.New("not a configured supervisor")

// Options configure a Broker. Store is required; the zero value of every
// other field is the safe default.
type Options struct {
	Store store.Store
	// Timeout is how long a request waits; default DefaultTimeout.
	Timeout time.Duration
	// OnTimeout is config.PolicyDeny (default) or config.PolicyAllow.
	OnTimeout string
	// Supervisors are the ids allowed to decide through Decide.
	Supervisors []string
	// Auto holds the auto-approve rules; nil for none.
	Auto *AutoApprover
	// Channels are told about each new request (webhook, …).
	Channels []Channel
	// Prompt asks at this process's terminal; nil when there is none.
	Prompt Prompter
	// Remote says a supervisor can decide from elsewhere (another
	// terminal's `warden approvals`, the API of `warden serve`), so a
	// request waits even without a prompt. Without Prompt and Remote,
	// Ask fails safe with ErrNoChannel.
	Remote bool
	// Audit mirrors the audit rows this broker writes (the JSON-lines
	// file); the store's hash chain always gets them.
	Audit audit.Sink
	// Logger gets human notes (request pending, decided); default discards.
	Logger *slog.Logger
	// Poll is how often a waiting request re-reads the store besides the
	// store's wake-ups; default DefaultPoll.
	Poll time.Duration
	// Lease is the period of this process's lease on the requests it
	// waits for (store.KeepLease renews it every third of that): if the
	// process dies or loses the database for longer, its requests are
	// cancelled and never run. Default store.DefaultLeaseTTL.
	Lease time.Duration
	// GrantMax caps the duration of a grant (ApproveWithGrant); default
	// DefaultGrantMax. See GrantMax for the configured value.
	GrantMax time.Duration
}

// Broker is the Approver on a shared Store.
type Broker struct {
	o     Options
	owner store.Owner
	log   *slog.Logger

	// lease is held while requests of this broker wait (acquireLease).
	leaseMu sync.Mutex
	lease   *leaseRef

	mu      sync.Mutex
	waiters map[string]chan struct{}
	groups  map[string]*group   // PENDING requests of this broker, by binding hash
	targets map[string][]Target // the targets of those requests, by id
}

var _ Approver = (*Broker)(nil)

// New returns a broker on o.Store and cancels the requests that processes
// which died left behind (SweepOrphans).
func New(ctx context.Context, o Options) (*Broker, error) {
	if o.Store == nil {
		return nil, errors.New("approval broker needs a store")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	switch o.OnTimeout {
	case "":
		o.OnTimeout = config.PolicyDeny
	case config.PolicyDeny, config.PolicyAllow:
	default:
		return nil, fmt.Errorf("on_timeout %q: want deny or allow", o.OnTimeout)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Lease <= 0 {
		o.Lease = store.DefaultLeaseTTL
	}
	if o.GrantMax <= 0 {
		o.GrantMax = DefaultGrantMax
	}
	b := &Broker{o: o, owner: store.CurrentOwner(), log: o.Logger, waiters: map[string]chan struct{}{},
		groups: map[string]*group{}, targets: map[string][]Target{}}
	if b.log == nil {
		b.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	swept, err := o.Store.SweepOrphans(ctx, store.Alive)
	for _, a := range swept {
		b.log.Warn("cancelled an approval request left by a process that exited", "id", a.ID, "tool", a.Tool, "pid", a.Owner.PID)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to cancel orphaned approval requests: %w", err)
	}
	if err := b.expireLeft(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// NoChannelError is the fail-safe refusal when no person can be asked.
type NoChannelError struct {
	Tool string
	Rule string
}

func (e *NoChannelError) Error() string {
	rule := ""
	if e.Rule != "" {
		rule = " (" + e.Rule + ")"
	}
	return fmt.Sprintf("calling %s needs a supervisor's approval%s, but no channel can reach one: "+
		"stdin and stderr are not a terminal, and no supervisor can decide from elsewhere. Ways out: "+
		"1) configure [[security.approval.supervisors]] and notify_channel = \"api\" (or a webhook), then decide with "+
		"`warden approvals approve ID` from another terminal, or through `warden serve`, while this process waits; "+
		"2) --mode yolo; 3) --dry-run; 4) an [[security.approval.auto_approve]] rule matching this call; "+
		"5) security.tool_policy.tools.%s = \"allow\"", e.Tool, rule, e.Tool)
}

// Unwrap makes errors.Is(err, ErrNoChannel) true.
func (e *NoChannelError) Unwrap() error { return ErrNoChannel }

// NewID returns an unguessable request id: 128 random bits in hex.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // rand.Read does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// Ask implements Approver.
func (b *Broker) Ask(ctx context.Context, req *Request) (Outcome, error) {
	args, err := Canonical(req.Args)
	if err != nil {
		return Outcome{State: store.Denied}, fmt.Errorf("failed to ask approval for %s: %w", req.Tool, err)
	}
	tool, _ := config.NormalizeTool(req.Tool)
	now := time.Now()
	a := &store.Approval{
		ID: NewID(), Tool: tool, Args: args, ArgsHash: BindingHash(tool, args, req.Workspace, req.Session, req.Targets...),
		Workspace: req.Workspace, Session: req.Session, Agent: req.Agent, Rule: req.Rule, Risk: req.Risk,
		State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(b.o.Timeout), Owner: b.owner,
	}
	if rule, ok := b.o.Auto.Match(tool, args, req.Targets...); ok {
		a.State, a.Decision, a.DecidedBy, a.DecidedAt, a.Claimed = store.Approved, string(audit.DecisionAutoApproved), "auto:"+rule.Name, now, true
		rec := b.record(a, "approval", audit.DecisionAutoApproved)
		if err := b.o.Store.Create(ctx, a, rec); err != nil {
			return Outcome{State: store.Denied}, fmt.Errorf("failed to record the auto-approval of %s: %w", tool, err)
		}
		b.mirror(ctx, a.ID, rec)
		return Outcome{ID: a.ID, Approved: true, Auto: true, By: a.DecidedBy, State: store.Approved, Args: args, ArgsHash: a.ArgsHash}, nil
	}
	if g, ok, err := b.useGrant(ctx, a); err != nil {
		return Outcome{State: store.Denied}, err
	} else if ok {
		return Outcome{ID: a.ID, Approved: true, Grant: g.ID, By: a.DecidedBy, Reason: a.Reason, State: store.Approved, Args: a.Args, ArgsHash: a.ArgsHash}, nil
	}
	if req.MaxWait > 0 {
		if out, ok, err := b.takeUp(ctx, a, req.Targets, req.MaxWait); ok {
			return out, err
		}
	}
	if b.o.Prompt == nil && (!b.o.Remote || len(b.o.Supervisors) == 0) {
		err := &NoChannelError{Tool: tool, Rule: req.Rule}
		rec := b.record(a, "approval", audit.DecisionDenied)
		rec.Reason, rec.DecidedBy = "no approval channel", "no-channel"
		rec.Error = err.Error()
		if _, aerr := b.o.Store.AppendAudit(ctx, rec); aerr != nil {
			return Outcome{State: store.Denied}, errors.Join(err, aerr)
		}
		b.mirror(ctx, "", rec)
		return Outcome{State: store.Denied, Reason: "no approval channel can reach a supervisor"}, err
	}
	return b.askOnce(ctx, a, req.Targets, req.MaxWait, false)
}

// targetsOf returns the targets request id was asked with (kept in memory
// by the asking broker: they are checked, not stored).
func (b *Broker) targetsOf(id string) []Target {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.targets[id]
}

// group is the one PENDING request that identical asks share: same
// binding hash, so same tool, canonical arguments, workspace and session.
// Its fields other than done, out and err are guarded by Broker.mu.
type group struct {
	key     string
	id      string
	tool    string
	expires time.Time
	waiters int // callers still waiting for it
	// leavable: a caller past its MaxWait (or whose context ended) leaves
	// the request PENDING instead of cancelling it (Request.MaxWait).
	leavable bool
	cancel   context.CancelCauseFunc
	done     chan struct{} // closed once out and err are final
	out      Outcome
	err      error
}

// collapsed counts the executions still expected for an approved request
// that several identical calls waited on.
type collapsed struct {
	left   int
	marked bool // the request row is EXECUTED; the others are audit rows
}

// collapsedRuns holds, by request id, the approved requests several calls
// wait to run. It is shared by the process's brokers: a caller may record
// the execution through another broker on the same store (mcp.Approver
// does).
var collapsedRuns = struct {
	sync.Mutex
	m map[string]*collapsed
}{m: map[string]*collapsed{}}

// askOnce stores a as a PENDING request and waits for its decision, unless
// an identical request of this broker is already PENDING: then the call
// waits on that one and gets its decision, without a second row or a
// second notification. stored means a is already in the store: a request an
// earlier identical call left waiting (Request.MaxWait), taken up again.
func (b *Broker) askOnce(ctx context.Context, a *store.Approval, targets []Target, maxWait time.Duration, stored bool) (Outcome, error) {
	b.mu.Lock()
	if g := b.groups[a.ArgsHash]; g != nil {
		g.waiters++
		b.mu.Unlock()
		rec := b.record(a, "approval_collapsed", "")
		rec.RequestID, rec.Reason = g.id, "an identical call waits on this pending request"
		if _, err := b.o.Store.AppendAudit(ctx, rec); err != nil {
			b.log.Warn("failed to audit a collapsed request", "id", g.id, "err", err)
		}
		b.mirror(ctx, g.id, rec)
		b.log.Info("identical approval request collapsed into a pending one", "id", g.id, "tool", a.Tool)
		b.notifyCaller(ctx, g.id, a)
		return b.await(ctx, g, maxWait)
	}
	gctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	g := &group{key: a.ArgsHash, id: a.ID, tool: a.Tool, expires: a.ExpiresAt, waiters: 1, leavable: maxWait > 0,
		cancel: cancel, done: make(chan struct{})}
	b.groups[g.key] = g
	if len(targets) > 0 {
		b.targets[a.ID] = targets // until finish: settled checks the claim against them
	}
	b.mu.Unlock()

	// The request carries this process's lease while it waits: if the
	// process dies, any other one cancels it once the lease runs out.
	lease, err := b.acquireLease(ctx)
	if err != nil {
		err = fmt.Errorf("failed to take a lease for the approval request for %s: %w", a.Tool, err)
		b.finish(g, Outcome{State: store.Denied}, err)
		return Outcome{State: store.Denied}, err
	}
	// Watch before the request exists: a decision made right after it is
	// stored still wakes the wait.
	changed, unwatch := b.o.Store.Watch(a.ID)
	if stored {
		// A request an earlier call left to no process: this one takes it
		// back under its lease, so that it is swept if this process dies.
		if ok, err := b.o.Store.SetOwner(ctx, a.ID, store.Unowned, lease.k.Owner()); err != nil {
			unwatch()
			b.releaseLease(lease)
			err = fmt.Errorf("failed to take up approval request %s: %w", a.ID, err)
			b.finish(g, Outcome{State: store.Denied}, err)
			return Outcome{State: store.Denied}, err
		} else if ok {
			a.Owner = lease.k.Owner()
		}
		rec := b.record(a, "approval_resumed", "")
		rec.Reason = "an identical call takes up the request an earlier one left waiting"
		if _, err := b.o.Store.AppendAudit(ctx, rec); err != nil {
			b.log.Warn("failed to audit a resumed request", "id", a.ID, "err", err)
		}
		b.mirror(ctx, a.ID, rec)
		b.notifyCaller(ctx, a.ID, a)
	} else {
		a.Owner = lease.k.Owner()
		if err := b.o.Store.Create(ctx, a, b.record(a, "approval_request", "")); err != nil {
			unwatch()
			b.releaseLease(lease)
			err = fmt.Errorf("failed to store the approval request for %s: %w", a.Tool, err)
			b.finish(g, Outcome{State: store.Denied}, err)
			return Outcome{State: store.Denied}, err
		}
		b.mirror(ctx, a.ID, b.record(a, "approval_request", ""))
		p := PendingOf(a)
		for _, ch := range b.o.Channels {
			if err := ch.Notify(ctx, p); err != nil {
				b.log.Warn("failed to notify an approval channel", "id", a.ID, "err", err)
			}
		}
	}
	b.log.Info("approval request pending", "id", a.ID, "tool", a.Tool, "expires", a.ExpiresAt.Format(time.RFC3339),
		"decide", "warden approvals approve "+a.ID+" | warden approvals deny "+a.ID+" --reason R")
	go func() {
		defer b.releaseLease(lease)
		defer unwatch()
		out, err := b.wait(gctx, a, changed, lease.k.Lost())
		b.finish(g, out, err)
	}()
	return b.await(ctx, g, maxWait)
}

// finish publishes the group's outcome to its waiters.
func (b *Broker) finish(g *group, out Outcome, err error) {
	b.mu.Lock()
	g.out, g.err = out, err
	if b.groups[g.key] == g {
		delete(b.groups, g.key)
	}
	delete(b.targets, g.id)
	if out.Approved && g.waiters > 1 {
		collapsedRuns.Lock()
		collapsedRuns.m[out.ID] = &collapsed{left: g.waiters}
		collapsedRuns.Unlock()
	}
	close(g.done)
	b.mu.Unlock()
	g.cancel(nil)
}

// await returns the group's outcome, or leaves it when ctx ends (or, for
// a leavable group, after maxWait). The last waiter to leave cancels the
// request; the others leave it to the rest. A leavable group's request is
// never cancelled by a leaving caller: it stays PENDING for a later
// identical call (takeUp), and the caller gets a *PendingError.
func (b *Broker) await(ctx context.Context, g *group, maxWait time.Duration) (Outcome, error) {
	var leave <-chan time.Time
	if g.leavable && maxWait > 0 {
		t := time.NewTimer(maxWait)
		defer t.Stop()
		leave = t.C
	}
	select {
	case <-g.done:
		return b.left(g, maxWait)
	case <-ctx.Done():
	case <-leave:
	}
	b.mu.Lock()
	select {
	case <-g.done: // decided meanwhile: this caller was counted for it
		b.mu.Unlock()
		return b.left(g, maxWait)
	default:
	}
	g.waiters--
	last := g.waiters == 0
	if last && b.groups[g.key] == g {
		delete(b.groups, g.key) // a new identical call asks anew
	}
	b.mu.Unlock()
	if g.leavable {
		if !last {
			return Outcome{ID: g.id, State: store.Pending}, b.pendingError(g, maxWait)
		}
		g.cancel(errLeft)
		<-g.done
		return b.left(g, maxWait)
	}
	if !last {
		return Outcome{ID: g.id, State: store.Cancelled, Reason: "the caller stopped waiting; identical calls still wait on the request"},
			fmt.Errorf("stopped waiting for approval request %s: %w", g.id, ctx.Err())
	}
	g.cancel(ctx.Err())
	<-g.done
	return g.out, g.err
}

type promptResult struct {
	ans Answer
	err error
}

// wait blocks until the request leaves PENDING: a decision seen in the
// store (woken by the store's watch, an in-process Decide, or the safety
// poll), the prompt's answer, the timeout, the loss of this process's
// lease, or ctx's end.
func (b *Broker) wait(ctx context.Context, a *store.Approval, changed, lost <-chan struct{}) (Outcome, error) {
	wake := b.subscribe(a.ID)
	defer b.unsubscribe(a.ID)
	timer := time.NewTimer(time.Until(a.ExpiresAt))
	defer timer.Stop()
	tick := time.NewTicker(b.o.Poll)
	defer tick.Stop()

	var promptCh chan promptResult
	if b.o.Prompt != nil {
		pctx, cancel := context.WithCancel(ctx)
		promptCh = make(chan promptResult, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			ans, err := b.o.Prompt.Prompt(pctx, PendingOf(a))
			promptCh <- promptResult{ans, err}
		}()
		defer func() { cancel(); <-done }()
	}
	bg := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			cause := context.Cause(ctx)
			if errors.Is(cause, errLeft) {
				// Every caller left a request that outlives them: it stays
				// for a person and a later identical call, owned by no
				// process, so that no sweep cancels it. A decision that
				// raced in is not lost: nobody received it, and the
				// identical call takes it up.
				if _, err := b.o.Store.SetOwner(bg, a.ID, a.Owner, store.Unowned); err != nil {
					b.log.Warn("failed to leave an approval request waiting", "id", a.ID, "err", err)
				}
				return Outcome{ID: a.ID, State: store.Pending}, errLeft
			}
			out, err := b.end(bg, a, transition(store.Cancelled, audit.DecisionCancelled, "caller", "the caller stopped waiting: "+cause.Error()))
			if err == nil && out.State == store.Cancelled {
				return out, fmt.Errorf("approval request %s cancelled: %w", a.ID, cause)
			}
			return out, err
		case <-timer.C:
			return b.end(bg, a, b.timeoutTransition())
		case r := <-promptCh:
			promptCh = nil
			t := transition(store.Denied, audit.DecisionDenied, TerminalSupervisor, "")
			switch {
			case r.err != nil && ctx.Err() == nil:
				t.Reason = "no answer at the terminal: " + r.err.Error()
			case r.err != nil:
				continue
			case r.ans.Abort:
				t.Reason = "aborted at the terminal"
			case r.ans.Approve:
				t = transition(store.Approved, audit.DecisionApproved, TerminalSupervisor, CleanReason(r.ans.Reason))
			default:
				t.Reason = CleanReason(r.ans.Reason)
				if t.Reason == "" {
					t.Reason = "denied at the terminal"
				}
			}
			_, err := b.o.Store.Decide(bg, a.ID, t, b.decisionRecord(a, t))
			if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrExpired) {
				return Outcome{ID: a.ID, State: store.Denied}, err
			}
			out, err := b.settled(bg, a)
			if err == nil && r.ans.Abort && out.State == store.Denied {
				return out, ErrAborted
			}
			if err == nil || !errors.Is(err, errStillPending) {
				return out, err
			}
		case <-lost:
			// Cut off from the database for a whole lease period: others
			// may have cancelled the request already; it must not run.
			t := transition(store.Cancelled, audit.DecisionCancelled, "lease-expiry",
				"this process could not renew its lease (cut off from the database for longer than the lease period)")
			return b.end(bg, a, t)
		case <-changed:
			if out, err := b.settled(bg, a); !errors.Is(err, errStillPending) {
				return out, err
			}
		case <-wake:
			if out, err := b.settled(bg, a); !errors.Is(err, errStillPending) {
				return out, err
			}
		case <-tick.C:
			if out, err := b.settled(bg, a); !errors.Is(err, errStillPending) {
				return out, err
			}
		}
	}
}

var errStillPending = errors.New("still pending")

// end resolves a PENDING request (timeout, cancel); if a decision won the
// race, that decision stands.
func (b *Broker) end(ctx context.Context, a *store.Approval, t store.Transition) (Outcome, error) {
	_, err := b.o.Store.Resolve(ctx, a.ID, t, b.decisionRecord(a, t))
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return Outcome{ID: a.ID, State: store.Denied}, fmt.Errorf("failed to end approval request %s: %w", a.ID, err)
	}
	return b.settled(ctx, a)
}

// settled reads the request and turns a final state into an Outcome. An
// approval is claimed first, so it is handed out once, with the stored
// arguments, which must still hash to what was asked.
func (b *Broker) settled(ctx context.Context, asked *store.Approval) (Outcome, error) {
	cur, err := b.o.Store.Get(ctx, asked.ID)
	if err != nil {
		return Outcome{ID: asked.ID, State: store.Denied}, err
	}
	out := Outcome{ID: cur.ID, By: cur.DecidedBy, Reason: cur.Reason, State: cur.State}
	switch cur.State {
	case store.Pending:
		return out, errStillPending
	case store.Approved:
		claimed, err := b.o.Store.Claim(ctx, cur.ID)
		if err != nil {
			out.State = store.Denied
			return out, fmt.Errorf("approved request %s cannot be executed: %w", cur.ID, err)
		}
		if BindingHash(claimed.Tool, claimed.Args, claimed.Workspace, claimed.Session, b.targetsOf(asked.ID)...) != asked.ArgsHash || claimed.ArgsHash != asked.ArgsHash {
			out.State = store.Denied
			return out, fmt.Errorf("approved request %s does not match what was asked: the stored request was altered; refusing to run it", cur.ID)
		}
		out.Approved, out.Args, out.ArgsHash = true, claimed.Args, claimed.ArgsHash
	case store.Denied, store.TimedOut, store.Cancelled:
	default:
		out.State = store.Denied
		return out, fmt.Errorf("approval request %s is already %s", cur.ID, cur.State)
	}
	b.mirror(ctx, cur.ID, b.decisionRecord(cur, store.Transition{Decision: cur.Decision, By: cur.DecidedBy, Reason: cur.Reason}))
	b.log.Info("approval request decided", "id", cur.ID, "state", cur.State, "by", cur.DecidedBy)
	return out, nil
}

// Executed implements Approver. When identical calls collapsed into one
// approved request, the first result moves the request to EXECUTED and
// each other one is an approval_executed audit row on the same request.
func (b *Broker) Executed(ctx context.Context, id string, success bool, result string) error {
	collapsedRuns.Lock()
	follower := false
	if e := collapsedRuns.m[id]; e != nil {
		follower, e.marked = e.marked, true
		if e.left--; e.left <= 0 {
			delete(collapsedRuns.m, id)
		}
	}
	collapsedRuns.Unlock()
	cur, err := b.o.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	rec := b.record(cur, "approval_executed", "")
	rec.Success, rec.Result, rec.DecidedBy = success, audit.Truncate(audit.Redact(result), audit.DefaultMaxLen), cur.DecidedBy
	if follower {
		rec.Reason = "an identical call that waited on this request ran"
		if _, err := b.o.Store.AppendAudit(ctx, rec); err != nil {
			return fmt.Errorf("failed to record the execution of a call collapsed into %s: %w", id, err)
		}
		b.mirror(ctx, id, rec)
		return nil
	}
	if _, err := b.o.Store.MarkExecuted(ctx, id, audit.Truncate(result, 4000), rec); err != nil {
		return err
	}
	b.mirror(ctx, id, rec)
	return nil
}

// Decide records a supervisor's decision on request id. It fails with
// ErrNotSupervisor for an id not configured, and with the store's
// ErrNotFound, ErrExpired or *ConflictError when the request cannot be
// decided any more. A denial needs a reason; it reaches the agent.
func (b *Broker) Decide(ctx context.Context, id, supervisor string, approve bool, reason string) (*store.Approval, error) {
	if err := b.checkSupervisor(supervisor); err != nil {
		return nil, err
	}
	reason = CleanReason(reason)
	t := transition(store.Approved, audit.DecisionApproved, supervisor, reason)
	if !approve {
		if reason == "" {
			return nil, ErrReasonRequired
		}
		t = transition(store.Denied, audit.DecisionDenied, supervisor, reason)
	}
	cur, err := b.o.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	a, err := b.o.Store.Decide(ctx, id, t, b.decisionRecord(cur, t))
	if err != nil {
		return nil, err
	}
	b.notify(id)
	return a, nil
}

// AuditAuthFailure records a refused attempt to reach the approval API.
func (b *Broker) AuditAuthFailure(ctx context.Context, status int, what string) {
	rec := &audit.Record{Event: "auth_failure", Decision: audit.DecisionDeny, Error: fmt.Sprintf("%d: %s", status, audit.Truncate(audit.Redact(what), audit.DefaultMaxLen))}
	if _, err := b.o.Store.AppendAudit(ctx, rec); err != nil {
		b.log.Warn("failed to audit an authentication failure", "err", err)
	}
	b.mirror(ctx, "", rec)
}

// Supervisors lists the ids that may decide.
func (b *Broker) Supervisors() []string { return slices.Clone(b.o.Supervisors) }

// Store is the store the broker works on.
func (b *Broker) Store() store.Store { return b.o.Store }

// leaseRef is a lease of this broker and the waits that hold it.
type leaseRef struct {
	k     *store.LeaseKeeper
	users int
}

// acquireLease returns the broker's lease, taking one when no request
// waits (or the last one was lost). releaseLease gives it back; the last
// user releases it in the store.
func (b *Broker) acquireLease(ctx context.Context) (*leaseRef, error) {
	b.leaseMu.Lock()
	defer b.leaseMu.Unlock()
	if b.lease != nil {
		select {
		case <-b.lease.k.Lost():
			b.lease = nil // its users still hold it; new waits get a new one
		default:
		}
	}
	if b.lease == nil {
		k, err := store.KeepLease(ctx, b.o.Store, b.owner, b.o.Lease)
		if err != nil {
			return nil, err
		}
		b.lease = &leaseRef{k: k}
	}
	b.lease.users++
	return b.lease, nil
}

func (b *Broker) releaseLease(r *leaseRef) {
	b.leaseMu.Lock()
	r.users--
	last := r.users == 0
	if last && b.lease == r {
		b.lease = nil
	}
	b.leaseMu.Unlock()
	if last {
		if err := r.k.Close(); err != nil {
			b.log.Warn("failed to release this process's lease", "err", err)
		}
	}
}

func (b *Broker) subscribe(id string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan struct{}, 1)
	b.waiters[id] = ch
	return ch
}

func (b *Broker) unsubscribe(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiters, id)
}

func (b *Broker) notify(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, ok := b.waiters[id]; ok {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (b *Broker) record(a *store.Approval, event string, decision audit.Decision) *audit.Record {
	return &audit.Record{
		Event: event, Session: a.Session, Agent: a.Agent, Workspace: a.Workspace, Tool: a.Tool,
		Args: audit.Sanitize(a.Args, audit.DefaultMaxLen), Decision: decision, Rule: a.Rule, RequestID: a.ID,
		DecidedBy: a.DecidedBy, Success: decision == audit.DecisionApproved || decision == audit.DecisionAutoApproved,
	}
}

// transition moves a PENDING request to state to, recorded as decision d
// by who.
func transition(to store.State, d audit.Decision, by, reason string) store.Transition {
	return store.Transition{To: to, Decision: string(d), By: by, Reason: reason}
}

func (b *Broker) decisionRecord(a *store.Approval, t store.Transition) *audit.Record {
	rec := b.record(a, "approval", audit.Decision(t.Decision))
	rec.DecidedBy, rec.Reason = t.By, t.Reason
	return rec
}

// mirror writes rec to the extra audit sink, if any.
func (b *Broker) mirror(ctx context.Context, id string, rec *audit.Record) {
	if b.o.Audit == nil {
		return
	}
	r := *rec
	r.RequestID = id
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if err := b.o.Audit.Write(ctx, &r); err != nil {
		b.log.Warn("failed to write the audit mirror", "err", err)
	}
}
