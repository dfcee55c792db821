package telegram

import (
	"regexp"
	"strings"

	"github.com/wardenhq/warden/internal/approval"
)

// Callback data: one letter for the action, ':', the request id.
const (
	tgApprove = "a"
	tgDeny    = "d"
	tgGrant   = "g" // approve, and allow the same call in the session for GrantDuration
	tgAlways  = "r" // approve, and write the lasting rule the message shows
)

// command is a supervisor's text: "/approve ID [reason]",
// "/deny ID reason: …", "/start", "/help", or a reply to the
// "Why deny request ID?" question (a deny with the reply as reason).
type command struct {
	verb   string // approve, deny, start, help
	id     string
	reason string
}

var (
	tgIDPatt        = regexp.MustCompile(`^[0-9a-f]{8,64}$`)
	tgDenyQuestion  = regexp.MustCompile(`^Why deny request ([0-9a-f]{8,64})\?`)
	tgReasonPrefix  = regexp.MustCompile(`(?i)^reason\s*:\s*`)
	tgCommandSuffix = regexp.MustCompile(`^/([a-z]+)(@[A-Za-z0-9_]+)?$`)
)

func parseCallback(data string) (action, id string, ok bool) {
	action, id, ok = strings.Cut(data, ":")
	if !ok || (action != tgApprove && action != tgDeny && action != tgGrant && action != tgAlways) || !tgIDPatt.MatchString(id) {
		return "", "", false
	}
	return action, id, true
}

func parseCommand(m *tgMessage) (command, bool) {
	text := strings.TrimSpace(m.Text)
	if text == "" {
		return command{}, false
	}
	if m.ReplyTo != nil && m.ReplyTo.From != nil && m.ReplyTo.From.IsBot && !strings.HasPrefix(text, "/") {
		if sm := tgDenyQuestion.FindStringSubmatch(m.ReplyTo.Text); sm != nil {
			return command{verb: "deny", id: sm[1], reason: approval.CleanReason(tgReasonPrefix.ReplaceAllString(text, ""))}, true
		}
		return command{}, false
	}
	head, rest, _ := strings.Cut(text, " ")
	sm := tgCommandSuffix.FindStringSubmatch(strings.ToLower(head))
	if sm == nil {
		return command{}, false
	}
	cmd := command{verb: sm[1]}
	switch cmd.verb {
	case "start", "help":
		return cmd, true
	case "approve", "deny":
	default:
		return command{}, false
	}
	rest = strings.TrimSpace(rest)
	id, reason, _ := strings.Cut(rest, " ")
	if i := strings.IndexAny(id, "\n\t"); i >= 0 {
		id, reason = id[:i], id[i:]+" "+reason
	}
	id = strings.ToLower(id)
	if id != "" && !tgIDPatt.MatchString(id) {
		return command{}, false
	}
	cmd.id = id
	cmd.reason = approval.CleanReason(tgReasonPrefix.ReplaceAllString(strings.TrimSpace(reason), ""))
	return cmd, true
}
