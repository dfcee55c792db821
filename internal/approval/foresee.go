package approval

import (
	"context"
	"fmt"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// Foresight is what Ask would decide about a request before asking a
// person: approved by an auto-approve rule, by an active grant, or neither.
type Foresight struct {
	// Rule names the auto-approve rule that approves the call, with the
	// file and line it was written at ("" for none).
	Rule string
	// Grant is the active grant that approves the call (nil for none).
	Grant *store.Grant
}

// Foreseer is an Approver that can say what it would decide about a
// request without a person, with no side effect: nothing is stored, no
// grant is used. The engine's decision stage reads it so that explain, a
// host's hook and a call agree.
type Foreseer interface {
	Foresee(ctx context.Context, req *Request) (Foresight, error)
}

var _ Foreseer = (*Broker)(nil)

// Foresee implements Foreseer with the checks Ask makes first, in Ask's
// order: the auto-approve rules, then the active grants.
func (b *Broker) Foresee(ctx context.Context, req *Request) (Foresight, error) {
	args, err := Canonical(req.Args)
	if err != nil {
		return Foresight{}, err
	}
	tool, _ := config.NormalizeTool(req.Tool)
	if rule, ok := b.o.Auto.Match(tool, args, req.Targets...); ok {
		return Foresight{Rule: rule.Name}, nil
	}
	hash := BindingHash(tool, args, req.Workspace, req.Session, req.Targets...)
	gs, err := b.o.Store.ListGrants(ctx, store.GrantFilter{})
	if err != nil {
		return Foresight{}, fmt.Errorf("failed to read the active grants: %w", err)
	}
	now := time.Now()
	for _, g := range gs {
		// The fields UseGrant matches on, so that a grant foreseen is one Ask uses.
		if g.ArgsHash == hash && g.Tool == tool && string(g.Args) == string(args) &&
			g.Workspace == req.Workspace && g.Session == req.Session && g.Active(now) {
			return Foresight{Grant: g}, nil
		}
	}
	return Foresight{}, nil
}
