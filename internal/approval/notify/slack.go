package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
)

// Slack is a Channel posting each new request to a Slack incoming webhook:
// tool, a short redacted excerpt of the arguments, the risk, where it runs,
// the time left and a link to the request on the page. It never decides:
// a supervisor follows the link (or uses the CLI/API).
//
// Every piece of agent-controlled text has Slack's control characters
// (& < >) escaped, so it cannot form a link, a mention (<@U…>, <!channel>)
// or a date token; the arguments and the risk (a diff, on its own lines)
// sit in code blocks whose fence they cannot write (a backtick shows as ˋ).
type Slack struct {
	url     string
	pageURL string
	o       Options
	box     *Outbox
}

// NewSlack starts a Slack channel posting to webhookURL (a secret: it is
// never logged); Close stops it.
func NewSlack(webhookURL, pageURL string, o *Options) (*Slack, error) {
	if webhookURL == "" {
		return nil, errors.New("slack needs an incoming webhook URL")
	}
	s := &Slack{url: webhookURL, pageURL: pageURL, o: o.WithDefaults()}
	s.box = NewOutbox("slack", s.o)
	return s, nil
}

// slackEscape escapes the three characters Slack treats as control
// characters in message text.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackCode is s escaped for a ``` code block it cannot close.
func slackCode(s string) string {
	return slackEscape(strings.ReplaceAll(s, "`", "ˋ"))
}

// SlackMessage is the incoming-webhook body.
type SlackMessage struct {
	Text   string `json:"text"`
	Blocks []any  `json:"blocks,omitempty"`
}

func slackText(t string) map[string]any { return map[string]any{"type": "mrkdwn", "text": t} }

func (s *Slack) message(p *approval.Pending, now time.Time) *SlackMessage {
	m := Summarize(p, s.pageURL, now)
	tool := slackEscape(m.Tool)
	fields := []any{slackText("*Tool*\n" + tool)}
	if w := m.where(); w != "" {
		fields = append(fields, slackText("*Where*\n"+slackEscape(w)))
	}
	if t := m.timeLeft(); t != "" {
		fields = append(fields, slackText("*Time left*\n"+slackEscape(t)))
	}
	blocks := []any{
		map[string]any{"type": "section", "text": slackText(":warning: *warden: approval needed* for `" + slackCode(m.Tool) + "`")},
		map[string]any{"type": "section", "fields": fields},
		map[string]any{"type": "section", "text": slackText("*Arguments*\n```" + slackCode(m.Args) + "```")},
	}
	if m.Risk != "" {
		// Its own lines, in a code block its text cannot close.
		blocks = append(blocks, map[string]any{"type": "section", "text": slackText("*Risk*\n```" + slackCode(m.Risk) + "```")})
	}
	text := "warden: approval needed for " + tool
	decide := "Request " + m.ID + ": `warden approvals approve " + m.ID + "`"
	if m.Link != "" {
		blocks = append(blocks, map[string]any{"type": "actions", "elements": []any{map[string]any{
			"type": "button", "text": map[string]any{"type": "plain_text", "text": "Open the request"}, "url": m.Link,
		}}})
		text += " — " + slackLink(m.Link, "open the request")
		decide = slackLink(m.Link, "Request "+m.ID)
	}
	blocks = append(blocks, map[string]any{"type": "context", "elements": []any{slackText(decide)}})
	return &SlackMessage{Text: text, Blocks: blocks}
}

// slackLink is <url|text>; url is ours (page_url + id), never the agent's.
func slackLink(u, text string) string {
	return "<" + strings.NewReplacer("<", "%3C", ">", "%3E", "|", "%7C").Replace(u) + "|" + slackEscape(text) + ">"
}

// Notify implements approval.Channel: it queues the message and returns at once.
func (s *Slack) Notify(_ context.Context, p *approval.Pending) error {
	body, err := json.Marshal(s.message(p, time.Now()))
	if err != nil {
		return fmt.Errorf("failed to encode the slack message: %w", err)
	}
	return s.box.Enqueue(Delivery{What: "message for request " + p.ID, Send: func(ctx context.Context) error {
		return postJSON(ctx, s.o.Client, "slack", s.url, body)
	}})
}

// Close delivers what is queued (up to CloseTimeout) and stops.
func (s *Slack) Close() error { s.box.Close(); return nil }

// postJSON POSTs body to u once and classifies the answer (httpResult).
// The URL is not in the error: for chat webhooks it is the secret.
func postJSON(ctx context.Context, c *http.Client, service, u string, body []byte, header ...string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return Permanent(fmt.Errorf("%s: bad webhook URL", service))
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL stays out of the log
		}
		return fmt.Errorf("%s: %w", service, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return httpResult(service, resp)
}

// ChannelName implements approval.NamedChannel.
func (*Slack) ChannelName() string { return "slack" }
