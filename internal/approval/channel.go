package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wardenhq/warden/internal/store"
)

// Pending is a request waiting for a decision, as channels show it.
type Pending struct {
	ID        string          `json:"request_id"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"arguments"`
	ArgsHash  string          `json:"args_hash"`
	Workspace string          `json:"workspace,omitempty"`
	Session   string          `json:"session_id,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	Rule      string          `json:"rule,omitempty"`
	Risk      string          `json:"risk,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
}

// PendingOf is the request a as channels see it.
func PendingOf(a *store.Approval) *Pending {
	return &Pending{ID: a.ID, Tool: a.Tool, Args: a.Args, ArgsHash: a.ArgsHash, Workspace: a.Workspace,
		Session: a.Session, Agent: a.Agent, Rule: a.Rule, Risk: a.Risk, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt}
}

// Channel tells a person that a request waits. Notify must return quickly
// and never decides: a person decides through the store (CLI, API, prompt).
// The channels of package notify implement it.
type Channel interface {
	Notify(ctx context.Context, p *Pending) error
}

// NamedChannel is a Channel that says what it is ("slack", "telegram"),
// for the line that tells the caller where a request was sent.
type NamedChannel interface {
	Channel
	ChannelName() string
}

// Announcement is what a process waiting for a decision prints (as `gh
// auth login` prints its code): the request, the commands that decide it,
// the page, and where it was sent. Every part from the request is made
// printable.
func Announcement(p *Pending, pageURL string, sentTo []string) string {
	var b strings.Builder
	id := Printable(p.ID, 64)
	fmt.Fprintf(&b, "warden: %s is waiting for a supervisor's decision (request %s", Printable(p.Tool, 64), id)
	if !p.ExpiresAt.IsZero() {
		fmt.Fprintf(&b, ", expires %s", p.ExpiresAt.Local().Format("15:04:05"))
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "  approve:  warden approvals approve %s\n", id)
	fmt.Fprintf(&b, "  deny:     warden approvals deny %s --reason \"...\"\n", id)
	if pageURL != "" {
		fmt.Fprintf(&b, "  page:     %s/requests/%s\n", strings.TrimRight(pageURL, "/"), url.PathEscape(p.ID))
	}
	if len(sentTo) > 0 {
		fmt.Fprintf(&b, "  sent to:  %s\n", strings.Join(sentTo, ", "))
	} else {
		b.WriteString("  sent to:  no channel; a supervisor sees it in warden approvals list or on warden serve's page\n")
	}
	return b.String()
}

// Decider decides requests on behalf of a channel that takes answers
// (Telegram). *Broker is one. Store is where the channel reads a request
// before approving it, so that it approves only what its message showed
// whole.
type Decider interface {
	Decide(ctx context.Context, id, supervisor string, approve bool, reason string) (*store.Approval, error)
	AuditAuthFailure(ctx context.Context, status int, what string)
	Store() store.Store
}

var _ Decider = (*Broker)(nil)

// Listener is a channel that takes answers (Telegram). Listen starts
// taking them, deciding through d; it returns false when it does not (in
// this process another channel already polls the same bot).
type Listener interface {
	Listen(d Decider) bool
}

// Listen starts every channel among chans that takes answers, deciding
// through d (the broker the channels notify for, or any broker on the
// same store whose supervisors include the channel's).
func Listen(d Decider, chans []Channel) {
	for _, c := range chans {
		if l, ok := c.(Listener); ok {
			l.Listen(d)
		}
	}
}

// Answer is a person's reply at a prompt.
type Answer struct {
	Approve bool
	Abort   bool // stop the whole run, not only this call
	Reason  string
	// Grant approves with a grant for the session lasting this long
	// (capped at the broker's GrantMax); zero approves once.
	Grant time.Duration
	// WorkspaceGrant makes the grant cover the call in every session of
	// the agent in the workspace, not only this session.
	WorkspaceGrant bool
	// Always approves and writes the proposed lasting rules
	// (ProposeAlways) into the user config.
	Always bool
}

// Prompter asks the person in front of this process, and blocks until they
// answer or ctx ends (another channel decided first). An error (EOF
// included) denies.
type Prompter interface {
	Prompt(ctx context.Context, p *Pending) (Answer, error)
}

// Printable makes untrusted text safe to show on a terminal or in a log
// line: control characters (escape sequences included), bidirectional
// overrides and invalid UTF-8 are shown as escapes, and the text is cut to
// max runes (0 for no limit).
func Printable(s string, max int) string { return printable(s, max, false) }

// Gutter starts each line of a block of PrintableLines text shown among
// other lines (an email, `warden approvals show`), so that no line of it
// can pass for a line of the message ("Tool: ...").
const Gutter = "  │ "

// PrintableLines is Printable for text shown as a block of its own (a
// fenced code block, a Telegram pre entity, lines behind a gutter): its
// newlines and tabs stay as they are, everything else Printable escapes is
// escaped, carriage returns included (a bare \r could overwrite a line on a
// terminal). The caller must keep the block apart, so that no line of it
// can pass for a line of the message.
func PrintableLines(s string, max int) string {
	return strings.TrimRight(printable(strings.ReplaceAll(s, "\r\n", "\n"), max, true), "\n")
}

func printable(s string, max int, lines bool) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if max > 0 && n >= max {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i-1]))
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r) || isBidi(r) || r == '\u2028' || r == '\u2029':
			b.WriteString(`\u`)
			b.WriteString(hex4(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isBidi(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') || r == '\u200e' || r == '\u200f' || r == '\u061c'
}

const hexDigits = "0123456789abcdef"

func hex2(c byte) string { return string([]byte{hexDigits[c>>4], hexDigits[c&15]}) }

func hex4(r rune) string {
	return string([]byte{hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15]})
}

// CleanReason makes a supervisor's reason safe to store, show and hand to
// the agent: control characters become spaces, and it is cut to 500 runes.
func CleanReason(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || isBidi(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) > 500 {
		s = string([]rune(s)[:500]) + "…"
	}
	return s
}
