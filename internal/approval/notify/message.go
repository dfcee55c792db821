package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
)

// Lengths of the parts of a notification, in runes.
const (
	msgArgsMax = 300
	msgToolMax = 64
	msgTextMax = 200
	// msgRiskMax bounds the risk (an edit's diff, a command's parse),
	// shown as a block of its own lines.
	msgRiskMax = 1200
	// msgRiskLines bounds its lines: blank lines cannot push the part
	// that matters out of sight.
	msgRiskLines = 60
)

// RequestLink is the page's address for request id: page + "/requests/" + id,
// or "" without a page URL.
func RequestLink(pageURL, id string) string {
	if pageURL == "" {
		return ""
	}
	return strings.TrimRight(pageURL, "/") + "/requests/" + url.PathEscape(id)
}

// Summary is what every chat and email message says about a request, each
// field already redacted and made printable (no control characters, no
// newlines), but Risk: it keeps its newlines and tabs, and every channel
// shows it as a block of its own that its text cannot leave (a fenced code
// block whose fence it cannot write, a Telegram pre entity, lines behind a
// gutter). Each channel then escapes its own markup.
type Summary struct {
	ID, Tool, Args, Risk, Workspace, Agent, Session string
	Left                                            time.Duration
	Expires                                         time.Time
	Link                                            string
	// Cut is true when Args or Risk is an excerpt: the message does not
	// show the whole call, so it must not be approved from the message.
	Cut bool
}

// Summarize is what a message about p says, as of now.
func Summarize(p *approval.Pending, pageURL string, now time.Time) Summary {
	args := readableJSON(audit.Sanitize(p.Args, msgArgsMax))
	risk := audit.Excerpt(p.Risk, msgRiskMax)
	s := Summary{
		ID:        approval.Printable(p.ID, 64),
		Tool:      approval.Printable(p.Tool, msgToolMax),
		Args:      approval.Printable(args, msgArgsMax),
		Risk:      approval.PrintableLines(risk, msgRiskMax),
		Workspace: approval.Printable(audit.Excerpt(p.Workspace, msgTextMax), msgTextMax),
		Agent:     approval.Printable(p.Agent, msgToolMax),
		Session:   approval.Printable(p.Session, 8),
		Expires:   p.ExpiresAt.UTC(),
		Link:      RequestLink(pageURL, p.ID),
		// A string Sanitize or Excerpt cut ends in "... (N chars total)"
		// past the limit, so the text is longer than the limit whenever
		// anything was cut, here or by Printable.
		Cut: utf8.RuneCountInString(args) > msgArgsMax || utf8.RuneCountInString(risk) > msgRiskMax,
	}
	if n := strings.Count(s.Risk, "\n") + 1; n > msgRiskLines {
		lines := strings.SplitAfterN(s.Risk, "\n", msgRiskLines+1)
		s.Risk = strings.Join(lines[:msgRiskLines], "") + fmt.Sprintf("… (%d lines total)", n)
		s.Cut = true
	}
	if !p.ExpiresAt.IsZero() {
		s.Left = max(p.ExpiresAt.Sub(now).Round(time.Second), 0)
	}
	return s
}

// where is "workspace W · agent A · session S…" with the parts known.
func (s Summary) where() string {
	var parts []string
	if s.Workspace != "" {
		parts = append(parts, "workspace "+s.Workspace)
	}
	if s.Agent != "" {
		parts = append(parts, "agent "+s.Agent)
	}
	if s.Session != "" {
		parts = append(parts, "session "+s.Session)
	}
	return strings.Join(parts, " · ")
}

// readableJSON re-encodes a JSON value without Go's HTML escapes (\u003c
// for <), so a person reads what the agent sent; each channel escapes its
// own markup afterwards.
func readableJSON(v json.RawMessage) string {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return string(v)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return string(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (s Summary) timeLeft() string {
	if s.Expires.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s (expires %s)", s.Left, s.Expires.Format("2006-01-02 15:04:05 UTC"))
}

// TooLong says where to read a request the message shows only an excerpt
// of: its page, or the CLI without a page URL.
func (s Summary) TooLong() string {
	if s.Link != "" {
		return "Too long to show here; review it on the page: " + s.Link
	}
	return "Too long to show here; review it with: warden approvals show " + s.ID
}

// Gutter starts each line of a block in plain text (approval.Gutter).
const Gutter = approval.Gutter

// Span is a block of a message's text, in bytes: [Start, End).
type Span struct{ Start, End int }

// PlainText is the message for plain-text channels (email): nothing in it
// is markup, and the risk is a block behind Gutter.
func (s Summary) PlainText(decide string) string {
	text, _ := s.Text(decide, Gutter)
	return text
}

// Text is the plain-text message with each line of the risk block behind
// gutter, and where the block is, for channels that mark it themselves
// (Telegram's pre entity, with an empty gutter).
func (s Summary) Text(decide, gutter string) (string, []Span) {
	var b strings.Builder
	var spans []Span
	fmt.Fprintf(&b, "warden: approval needed for %s\n\n", s.Tool)
	fmt.Fprintf(&b, "Tool: %s\n", s.Tool)
	fmt.Fprintf(&b, "Arguments: %s\n", s.Args)
	if s.Risk != "" {
		b.WriteString("Risk:\n")
		start := b.Len()
		for line := range strings.Lines(s.Risk) {
			b.WriteString(gutter + line)
		}
		spans = append(spans, Span{start, b.Len()})
		b.WriteString("\n")
	}
	if w := s.where(); w != "" {
		fmt.Fprintf(&b, "Where: %s\n", w)
	}
	if t := s.timeLeft(); t != "" {
		fmt.Fprintf(&b, "Time left: %s\n", t)
	}
	fmt.Fprintf(&b, "Request: %s\n", s.ID)
	if s.Link != "" {
		fmt.Fprintf(&b, "Open: %s\n", s.Link)
	}
	if decide != "" {
		b.WriteString("\n" + decide + "\n")
	}
	return b.String(), spans
}
