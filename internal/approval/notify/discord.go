package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
)

// Discord is a Channel posting each new request to a Discord webhook, as a
// message with an embed: tool, a short redacted excerpt of the arguments,
// the risk, where it runs, the time left and a link to the request on the
// page. It never decides.
//
// Every message sets allowed_mentions to parse nothing, so no text can
// ping @everyone, @here, a role or a user; agent-controlled text also has
// Discord's markdown and mention syntax escaped (a masked link
// [text](url) cannot be forged), and the arguments and the risk (a diff,
// on its own lines) sit in code blocks whose fence they cannot write (a
// backtick shows as ˋ).
type Discord struct {
	url     string
	pageURL string
	o       Options
	box     *Outbox
}

// NewDiscord starts a Discord channel posting to webhookURL (a secret: it
// is never logged); Close stops it.
func NewDiscord(webhookURL, pageURL string, o *Options) (*Discord, error) {
	if webhookURL == "" {
		return nil, errors.New("discord needs a webhook URL")
	}
	d := &Discord{url: webhookURL, pageURL: pageURL, o: o.WithDefaults()}
	d.box = NewOutbox("discord", d.o)
	return d, nil
}

// discordEscape backslash-escapes Discord markdown and breaks mention
// syntax: "@everyone" shows as is but is no mention, "<@123>" is text.
func discordEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '*', '_', '~', '`', '|', '>', '<', '#', '-', '[', ']', '(', ')', ':', '.', '+', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '@':
			b.WriteString("@\u200b") // a zero-width space: no mention, even shown
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// discordCode is s for a ``` code block it cannot close; @ is broken too.
func discordCode(s string) string {
	return strings.NewReplacer("`", "ˋ", "@", "@\u200b").Replace(s)
}

// DiscordMessage is the webhook body.
type DiscordMessage struct {
	Content         string              `json:"content"`
	Embeds          []DiscordEmbed      `json:"embeds,omitempty"`
	AllowedMentions DiscordMentionRules `json:"allowed_mentions"`
}

// DiscordMentionRules is allowed_mentions; Parse empty means no mention pings.
type DiscordMentionRules struct {
	Parse []string `json:"parse"`
}

// DiscordEmbed is one embed of a message.
type DiscordEmbed struct {
	Title       string         `json:"title"`
	URL         string         `json:"url,omitempty"`
	Description string         `json:"description,omitempty"`
	Fields      []DiscordField `json:"fields,omitempty"`
	Footer      *DiscordFooter `json:"footer,omitempty"`
	Timestamp   string         `json:"timestamp,omitempty"`
	Color       int            `json:"color,omitempty"`
}

// DiscordField is a name/value pair of an embed.
type DiscordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline,omitempty"`
}

// DiscordFooter is an embed's footer.
type DiscordFooter struct {
	Text string `json:"text"`
}

func (d *Discord) message(p *approval.Pending, now time.Time) *DiscordMessage {
	m := Summarize(p, d.pageURL, now)
	e := DiscordEmbed{
		Title:       "Approval needed: " + m.Tool, // embed titles are not markdown
		URL:         m.Link,
		Description: "**Arguments**\n```\n" + discordCode(m.Args) + "\n```",
		Fields:      []DiscordField{{Name: "Tool", Value: discordEscape(m.Tool), Inline: true}},
		Footer:      &DiscordFooter{Text: "request " + m.ID},
		Color:       0xE0A800,
	}
	if !p.CreatedAt.IsZero() {
		e.Timestamp = p.CreatedAt.UTC().Format(time.RFC3339)
	}
	if m.Risk != "" {
		// Its own lines, in a code block its text cannot close.
		e.Description += "\n**Risk**\n```\n" + discordCode(m.Risk) + "\n```"
	}
	if w := m.where(); w != "" {
		e.Fields = append(e.Fields, DiscordField{Name: "Where", Value: discordEscape(w)})
	}
	if t := m.timeLeft(); t != "" {
		e.Fields = append(e.Fields, DiscordField{Name: "Time left", Value: discordEscape(t)})
	}
	content := "warden: approval needed for " + discordEscape(m.Tool)
	if m.Link != "" {
		content += "\n" + m.Link
	} else {
		content += "\nDecide with `warden approvals approve " + m.ID + "`"
	}
	return &DiscordMessage{Content: content, Embeds: []DiscordEmbed{e}, AllowedMentions: DiscordMentionRules{Parse: []string{}}}
}

// Notify implements approval.Channel: it queues the message and returns at once.
func (d *Discord) Notify(_ context.Context, p *approval.Pending) error {
	body, err := json.Marshal(d.message(p, time.Now()))
	if err != nil {
		return fmt.Errorf("failed to encode the discord message: %w", err)
	}
	return d.box.Enqueue(Delivery{What: "message for request " + p.ID, Send: func(ctx context.Context) error {
		return postJSON(ctx, d.o.Client, "discord", d.url, body)
	}})
}

// Close delivers what is queued (up to CloseTimeout) and stops.
func (d *Discord) Close() error { d.box.Close(); return nil }

// ChannelName implements approval.NamedChannel.
func (*Discord) ChannelName() string { return "discord" }
