package approval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// Requests that outlive their caller (Request.MaxWait).
//
// An MCP client gives up on a call after about a minute, and a host runs a
// hook within its own timeout, while a person may take minutes to decide.
// So such a caller waits at most MaxWait, then leaves the request PENDING,
// handed to no process (store.Unowned) so that no sweep cancels it, and
// tells the model that a person has been asked and that the same call can
// be made again. The request is bound to the call by its binding hash; an
// identical later Ask finds it (takeUp), takes it back and waits on it
// again, runs it once if it was approved meanwhile, or gets its denial. A
// decision a waiting caller received is never taken up again: that caller
// still owned the request. Nothing is cancelled because a caller went away
// (a process killed while it waits still has its request swept, as any
// other: keep MaxWait below the time after which the caller is killed).

// ErrPending means the caller stopped waiting while its request is still
// PENDING: a person may still decide it, and an identical call takes it up.
var ErrPending = errors.New("the approval request is still pending")

// errLeft is the cause with which the last caller of a leavable request
// stops the broker's wait on it, leaving it PENDING.
var errLeft = errors.New("every caller left the request waiting for a person")

// PendingError is Ask's answer when a request outlives its caller.
type PendingError struct {
	ID        string
	Tool      string
	ExpiresAt time.Time
	// Waited is how long this caller waited.
	Waited time.Duration
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("approval request %s for %s is still pending after %s (it expires at %s)",
		e.ID, e.Tool, e.Waited.Round(time.Second), e.ExpiresAt.UTC().Format(time.RFC3339))
}

// Unwrap makes errors.Is(err, ErrPending) true.
func (e *PendingError) Unwrap() error { return ErrPending }

// CallNotifier is a Channel that tells the caller itself which request it
// waits for (an MCP progress notification). Unlike the channels that reach
// a person, it is told again when a later identical call takes up a request
// left waiting.
type CallNotifier interface {
	Channel
	NotifiesCaller()
}

// takeUp looks for the request an identical earlier call left (same binding
// hash, owned by no process) and, when there is one, answers from it: a
// PENDING one is waited on again, an APPROVED one not yet claimed is claimed
// and run (once), a DENIED one gives its denial until it would have expired.
// ok false means there is none to take up: ask anew. A request left waiting
// has outlived its time when the store's expiry has passed.
//
// The binding hash covers the targets (where each change lands), so the
// request found was asked for the same places; they are handed on so that
// the claim is checked against them as for any request.
func (b *Broker) takeUp(ctx context.Context, a *store.Approval, targets []Target, maxWait time.Duration) (out Outcome, ok bool, err error) {
	l, err := b.o.Store.List(ctx, store.Filter{ArgsHash: a.ArgsHash, Limit: 1})
	if err != nil {
		return Outcome{State: store.Denied}, true, fmt.Errorf("failed to look for an earlier request for %s: %w", a.Tool, err)
	}
	if len(l) == 0 {
		return Outcome{}, false, nil
	}
	cur := l[0]
	if cur.Owner != store.Unowned || cur.Tool != a.Tool || cur.Workspace != a.Workspace || cur.Session != a.Session ||
		!bytes.Equal(cur.Args, a.Args) {
		return Outcome{}, false, nil
	}
	now := time.Now()
	switch cur.State {
	case store.Pending:
		if !now.Before(cur.ExpiresAt) {
			out, err := b.end(ctx, cur, b.timeoutTransition())
			if err == nil && out.Approved {
				return out, true, nil // on_timeout = allow
			}
			return Outcome{}, false, nil
		}
		out, err := b.askOnce(ctx, cur, targets, maxWait, true)
		return out, true, err
	case store.Approved:
		if cur.Claimed {
			return Outcome{}, false, nil
		}
		b.mu.Lock()
		b.targets[cur.ID] = targets
		b.mu.Unlock()
		out, err := b.settled(ctx, cur)
		b.mu.Lock()
		delete(b.targets, cur.ID)
		b.mu.Unlock()
		return out, true, err
	case store.Denied:
		// The denial reaches this caller; taken back, it is not repeated.
		if ok, err := b.o.Store.SetOwner(ctx, cur.ID, store.Unowned, b.owner); err == nil && ok {
			return Outcome{ID: cur.ID, By: cur.DecidedBy, Reason: cur.Reason, State: cur.State}, true, nil
		}
	}
	return Outcome{}, false, nil
}

// left is the outcome for a caller of g once g is done: the decision, or a
// *PendingError when every caller left it waiting.
func (b *Broker) left(g *group, maxWait time.Duration) (Outcome, error) {
	if errors.Is(g.err, errLeft) {
		return Outcome{ID: g.id, State: store.Pending}, b.pendingError(g, maxWait)
	}
	return g.out, g.err
}

func (b *Broker) pendingError(g *group, waited time.Duration) error {
	return &PendingError{ID: g.id, Tool: g.tool, ExpiresAt: g.expires, Waited: waited}
}

// notifyCaller tells the caller's own channels (CallNotifier) that it waits
// on request id, which another call created.
func (b *Broker) notifyCaller(ctx context.Context, id string, a *store.Approval) {
	p := PendingOf(a)
	p.ID = id
	for _, ch := range b.o.Channels {
		if cn, ok := ch.(CallNotifier); ok {
			if err := cn.Notify(ctx, p); err != nil {
				b.log.Warn("failed to tell the caller which request it waits for", "id", id, "err", err)
			}
		}
	}
}

// timeoutTransition is how an expired request ends: TIMED_OUT, or approved
// under on_timeout = "allow".
func (b *Broker) timeoutTransition() store.Transition {
	if b.o.OnTimeout == config.PolicyAllow {
		return transition(store.Approved, audit.DecisionApproved, "timeout", fmt.Sprintf("no decision within %s; on_timeout = allow", b.o.Timeout))
	}
	return transition(store.TimedOut, audit.DecisionTimedOut, "timeout", fmt.Sprintf("no decision within %s", b.o.Timeout))
}

// expireLeft ends the requests left waiting whose time is up: no process
// waits on them to do it.
func (b *Broker) expireLeft(ctx context.Context) error {
	l, err := b.o.Store.List(ctx, store.Filter{State: store.Pending})
	if err != nil {
		return fmt.Errorf("failed to look for expired approval requests: %w", err)
	}
	now := time.Now()
	for _, a := range l {
		if a.Owner != store.Unowned || now.Before(a.ExpiresAt) {
			continue
		}
		t := b.timeoutTransition()
		if _, err := b.o.Store.Resolve(ctx, a.ID, t, b.decisionRecord(a, t)); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("failed to end expired approval request %s: %w", a.ID, err)
		}
		b.log.Info("approval request left waiting expired", "id", a.ID, "tool", a.Tool)
	}
	return nil
}

type maxWaitKey struct{}

// WithMaxWait returns ctx saying that a call made with it waits at most d
// for a person (Request.MaxWait): the MCP server sets it, since MCP clients
// give up on a call after about a minute. The engine reads it with
// MaxWaitFrom; it wins over the engine's own setting.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, maxWaitKey{}, d)
}

// MaxWaitFrom returns the wait WithMaxWait put in ctx, and whether there is one.
func MaxWaitFrom(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(maxWaitKey{}).(time.Duration)
	return d, ok
}
