package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/egress"
)

// EgressTool is the name a per-host network approval carries in the store,
// on the page and in the channels: a connection a jailed command opens (the
// network group), not a tool a model calls.
const EgressTool = "network_connect"

// EgressAsker puts the egress proxy's questions (unknown = "ask") to a
// person through the approval broker: each is a request bound to the host
// and port only, so a grant for a host ("approve for N minutes") admits
// its next connections without asking again, whatever command opens them;
// the command is shown in the request's summary.
type EgressAsker struct {
	Approver approval.Approver
	Agent    string
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
