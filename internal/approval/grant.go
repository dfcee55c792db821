package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// DefaultGrantMax caps a grant's duration when grant_max_minutes is not set.
const DefaultGrantMax = 60 * time.Minute

// ErrGrantDuration means a grant was asked for with no positive duration.
var ErrGrantDuration = errors.New("a grant needs a positive duration")

// GrantMax is the grant cap configured in [security.approval]
// (grant_max_minutes; 0 means DefaultGrantMax).
func GrantMax(a *config.Approval) time.Duration {
	if a.GrantMaxMinutes <= 0 {
		return DefaultGrantMax
	}
	return time.Duration(a.GrantMaxMinutes) * time.Minute
}

// GrantDuration is how long a grant asked for d lasts: d capped at the
// broker's GrantMax. A duration above the cap is shortened, not refused;
// the grant's ExpiresAt says what was given.
func (b *Broker) GrantDuration(d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, fmt.Errorf("grant of %s: %w", d, ErrGrantDuration)
	}
	return min(d, b.o.GrantMax), nil
}

// ApproveWithGrant approves PENDING request id, as Decide does, and in the
// same transaction grants the exact same call (tool + canonical arguments +
// workspace + session, nothing broader) for d, capped at GrantMax: while
// the grant is active, Ask for that call in that session is approved
// without asking, recorded as decision "granted" by supervisor. A request
// without a session cannot get a grant (store.ErrGrantScope). A request
// already decided, expired or executed is refused like a late decision.
func (b *Broker) ApproveWithGrant(ctx context.Context, id, supervisor, reason string, d time.Duration) (*store.Approval, *store.Grant, error) {
	return b.approveWithGrant(ctx, id, supervisor, reason, d, false)
}

// approveWithGrant approves with a grant for the session, or with scoped
// for the request's workspace and agent.
func (b *Broker) approveWithGrant(ctx context.Context, id, supervisor, reason string, d time.Duration, scoped bool) (*store.Approval, *store.Grant, error) {
	if err := b.checkSupervisor(supervisor); err != nil {
		return nil, nil, err
	}
	d, err := b.GrantDuration(d)
	if err != nil {
		return nil, nil, err
	}
	cur, err := b.o.Store.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	t := transition(store.Approved, audit.DecisionApproved, supervisor, CleanReason(reason))
	rec := b.decisionRecord(cur, t)
	var a *store.Approval
	var g *store.Grant
	if scoped {
		if !WorkspaceGrantable(cur) {
			return nil, nil, fmt.Errorf("%s changes files or names no workspace; it can be granted for its session only: %w", cur.Tool, store.ErrGrantScope)
		}
		a, g, err = b.o.Store.DecideWithScopedGrant(ctx, id, t, NewID(), d, ScopeHash(cur.Tool, cur.Args, cur.Workspace, cur.Agent), rec)
	} else {
		a, g, err = b.o.Store.DecideWithGrant(ctx, id, t, NewID(), d, rec)
	}
	if err != nil {
		return nil, nil, err
	}
	b.notify(id)
	b.log.Info("approval request approved with a grant", "id", id, "grant", g.ID, "scope", g.Scope(), "by", supervisor, "until", g.ExpiresAt.Format(time.RFC3339))
	return a, g, nil
}

// Grants lists the active grants (unexpired, unrevoked), newest first. It
// first records the grants that expired since the last look.
func (b *Broker) Grants(ctx context.Context) ([]*store.Grant, error) {
	b.expireGrants(ctx)
	return b.o.Store.ListGrants(ctx, store.GrantFilter{})
}

// RevokeGrant ends grant grantID now: the next identical call is asked
// again. It is audited as grant_revoked by supervisor. A grant already
// revoked or expired gives a *store.GrantStateError (errors.Is
// store.ErrConflict); an unknown one store.ErrGrantNotFound.
func (b *Broker) RevokeGrant(ctx context.Context, grantID, supervisor string) error {
	if err := b.checkSupervisor(supervisor); err != nil {
		return err
	}
	g, err := b.o.Store.RevokeGrant(ctx, grantID, supervisor)
	if err != nil {
		return err
	}
	b.log.Info("grant revoked", "grant", g.ID, "by", supervisor)
	return nil
}

func (b *Broker) expireGrants(ctx context.Context) {
	gs, err := b.o.Store.ExpireGrants(ctx)
	if err != nil {
		b.log.Warn("failed to record expired grants", "err", err)
	}
	for _, g := range gs {
		b.log.Info("grant expired", "grant", g.ID, "uses", g.Uses)
	}
}

// useGrant stores a as approved by an active grant, if one covers it.
func (b *Broker) useGrant(ctx context.Context, a *store.Approval) (*store.Grant, bool, error) {
	rec := b.record(a, "approval", audit.DecisionGranted)
	g, err := b.o.Store.UseGrant(ctx, a, rec)
	if errors.Is(err, store.ErrNoGrant) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("failed to check the grants for %s: %w", a.Tool, err)
	}
	r := *rec
	r.Decision, r.DecidedBy, r.Reason, r.Success = audit.Decision(a.Decision), a.DecidedBy, a.Reason, true
	b.mirror(ctx, a.ID, &r)
	return g, true, nil
}

func (b *Broker) checkSupervisor(supervisor string) error {
	if supervisor == "" || !slices.Contains(b.o.Supervisors, supervisor) {
		return fmt.Errorf("%q: %w (configured: %v)", supervisor, ErrNotSupervisor, b.o.Supervisors)
	}
	return nil
}

// WorkspaceGrantable reports whether request a can be granted for every
// session of its agent in its workspace (ApproveWithScopedGrant): not a
// call that changes files, and one that names its workspace.
func WorkspaceGrantable(a *store.Approval) bool {
	return !fileChange[a.Tool] && a.Workspace != ""
}

// ScopeHash binds a call to its workspace and agent rather than its
// session: the key of a workspace+agent grant. It is BindingHash with a
// session no real session can be (it starts with a NUL byte).
func ScopeHash(tool string, canonicalArgs json.RawMessage, workspace, agent string) string {
	return BindingHash(tool, canonicalArgs, workspace, "\x00agent:"+agent)
}

// scopeHashOf is the scope hash a request can be granted under: none for a
// call that changes files (where a change lands is bound per request and
// checked again each time; a grant for every session could not carry
// that), nor for a request without a workspace. Agent "" is the default
// agent.
func scopeHashOf(tool string, args json.RawMessage, req *Request) string {
	if len(req.Targets) > 0 || fileChange[tool] || req.Workspace == "" {
		return ""
	}
	return ScopeHash(tool, args, req.Workspace, req.Agent)
}

// fileChange are the tools whose calls change files at targets.
var fileChange = map[string]bool{"write_file": true, "edit_file": true, "apply_patch": true, "delete_file": true}

// ApproveWithScopedGrant is ApproveWithGrant with a grant for the
// request's workspace and agent: the same call in any session of that
// agent there (another `warden tool call` process, a reconnected MCP
// client) runs without asking until the grant expires. A file-changing
// call is granted per session only (store.ErrGrantScope).
func (b *Broker) ApproveWithScopedGrant(ctx context.Context, id, supervisor, reason string, d time.Duration) (*store.Approval, *store.Grant, error) {
	return b.approveWithGrant(ctx, id, supervisor, reason, d, true)
}
