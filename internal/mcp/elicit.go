package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/approval"
)

// Elicitor is an approval.Prompter that asks the person behind the MCP
// client of the call, through elicitation: a form showing the tool, its
// arguments, the risk and the diff, with approve or deny and a reason. It
// races every other channel of the broker; the first decision wins.
//
// When the call did not come from an MCP session whose client can elicit,
// or the client fails to answer, Prompt decides nothing: it waits until ctx
// ends (another channel decided, the request timed out or was cancelled).
type Elicitor struct{}

var _ approval.Prompter = Elicitor{}

// Decision values of the elicitation form.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// elicitSchema is the form: a decision and an optional reason.
var elicitSchema = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"decision": {Type: "string", Title: "Decision", Enum: []any{DecisionApprove, DecisionDeny},
			Description: "approve runs exactly the call shown; deny refuses it"},
		"reason": {Type: "string", Title: "Reason", MaxLength: intPtr(500),
			Description: "told to the agent (required to deny)"},
	},
	Required: []string{"decision"},
}

func intPtr(n int) *int { return &n }

// Prompt implements approval.Prompter.
func (Elicitor) Prompt(ctx context.Context, p *approval.Pending) (approval.Answer, error) {
	c := callFrom(ctx)
	if !c.canElicit() {
		<-ctx.Done()
		return approval.Answer{}, ctx.Err()
	}
	res, err := c.session.Elicit(ctx, &sdk.ElicitParams{
		Mode:            "form",
		Message:         ElicitMessage(p),
		RequestedSchema: elicitSchema,
	})
	if err != nil {
		// The client could not answer (it closed the form's channel, sent
		// a malformed answer): that is no decision; the request stays
		// pending for the other channels and its timeout.
		<-ctx.Done()
		return approval.Answer{}, ctx.Err()
	}
	return answerOf(res), nil
}

// answerOf reads an elicitation result: only an accepted form saying
// approve approves; anything else denies, with the reason given.
func answerOf(res *sdk.ElicitResult) approval.Answer {
	switch res.Action {
	case "accept":
		decision, _ := res.Content["decision"].(string)
		reason, _ := res.Content["reason"].(string)
		if decision == DecisionApprove {
			return approval.Answer{Approve: true, Reason: reason}
		}
		if strings.TrimSpace(reason) == "" {
			reason = "denied in the MCP client"
		}
		return approval.Answer{Reason: reason}
	case "decline":
		return approval.Answer{Reason: "declined in the MCP client"}
	default: // "cancel": the person dismissed the form
		return approval.Answer{Reason: "dismissed in the MCP client"}
	}
}

// ElicitMessage is the text of the approval form for p. Untrusted parts
// (arguments, risk, diff) are made printable and cut.
func ElicitMessage(p *approval.Pending) string {
	var b strings.Builder
	fmt.Fprintf(&b, "warden: approve this %s call?\n\n", approval.Printable(p.Tool, 80))
	fmt.Fprintf(&b, "Arguments: %s\n", approval.Printable(string(p.Args), 2000))
	if p.Risk != "" {
		fmt.Fprintf(&b, "\n%s\n", printableBlock(p.Risk, 4000))
	}
	if p.Rule != "" {
		fmt.Fprintf(&b, "\nWhy asked: %s\n", approval.Printable(p.Rule, 200))
	}
	fmt.Fprintf(&b, "\nRequest %s, expires %s. It can also be decided with `warden approvals approve|deny %s`.",
		p.ID, p.ExpiresAt.Local().Format(time.TimeOnly), p.ID)
	return b.String()
}

// printableBlock keeps line breaks and tabs of a multi-line text (a diff)
// and escapes every other control character of each line.
func printableBlock(s string, max int) string {
	if len(s) > max {
		s = s[:max] + "\n… (cut)"
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = approval.Printable(p, 0)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}

// Approver routes each supervised call to one of two approvers on the same
// store: Eliciting (a broker whose prompt is an Elicitor) when the call
// comes from an MCP client that can elicit, Plain otherwise. Plain without
// a remote channel fails safe (no one can be asked); Eliciting always has
// the client to ask.
type Approver struct {
	Plain     approval.Approver
	Eliciting approval.Approver
}

var _ approval.Approver = (*Approver)(nil)

// Ask implements approval.Approver.
func (a *Approver) Ask(ctx context.Context, req *approval.Request) (approval.Outcome, error) {
	if a.Eliciting != nil && callFrom(ctx).canElicit() {
		return a.Eliciting.Ask(ctx, req)
	}
	return a.Plain.Ask(ctx, req)
}

// Foresee implements approval.Foreseer: both approvers share the store and
// the auto-approve rules.
func (a *Approver) Foresee(ctx context.Context, req *approval.Request) (approval.Foresight, error) {
	if f, ok := a.Plain.(approval.Foreseer); ok {
		return f.Foresee(ctx, req)
	}
	return approval.Foresight{}, nil
}

// Executed implements approval.Approver: both approvers share the store.
func (a *Approver) Executed(ctx context.Context, id string, success bool, result string) error {
	return a.Plain.Executed(ctx, id, success, result)
}

// ProgressChannel is an approval.Channel that tells the MCP client of the
// call that it now waits for request p, in a progress notification and in
// every later one, so the person knows what to approve and where.
type ProgressChannel struct{}

var _ approval.CallNotifier = ProgressChannel{}

// NotifiesCaller implements approval.CallNotifier: it tells the call that
// waits, so it is told again when a call takes up a request left waiting.
func (ProgressChannel) NotifiesCaller() {}

// Notify implements approval.Channel.
func (ProgressChannel) Notify(ctx context.Context, p *approval.Pending) error {
	c := callFrom(ctx)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	c.pending = p.ID
	c.mu.Unlock()
	if c.progress != nil {
		c.progress(c.status(0))
	}
	return nil
}
