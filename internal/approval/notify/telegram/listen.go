package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// GrantDuration is how long the "approve and allow" button allows the
// exact same call in the same session (the broker caps it at
// grant_max_minutes).
const GrantDuration = 15 * time.Minute

// Granter approves with a grant (Broker.ApproveWithGrant); an approval.Decider that
// is also a Granter gets the "approve and allow" button.
type Granter interface {
	ApproveWithGrant(ctx context.Context, id, supervisor, reason string, d time.Duration) (*store.Approval, *store.Grant, error)
}

// pollers holds the one Telegram channel per bot that polls in this
// process: the Bot API answers 409 to a second concurrent getUpdates.
var pollers = struct {
	sync.Mutex
	m map[string]*Channel
}{m: map[string]*Channel{}}

// Listen starts taking answers by long polling, deciding through d. Only
// one channel per bot polls in a process; Listen returns false (and does
// nothing) when another already does. Processes that share a database
// may each poll: the Bot API then refuses all but one (409), the others
// back off, and whichever polls decides in the shared store.
func (t *Channel) Listen(d approval.Decider) bool {
	key := t.api + "\x00" + t.token
	pollers.Lock()
	if pollers.m[key] != nil || t.cancel != nil {
		pollers.Unlock()
		return false
	}
	pollers.m[key] = t
	t.key = key
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	pollers.Unlock()
	t.wg.Go(func() { t.poll(ctx, d) })
	return true
}

func (t *Channel) poll(ctx context.Context, d approval.Decider) {
	delay := t.o.Backoff
	maxDelay := max(t.o.MaxBackoff, time.Minute)
	for ctx.Err() == nil {
		err := t.pollOnce(ctx, d)
		if err == nil {
			delay = t.o.Backoff
			continue
		}
		if ctx.Err() != nil {
			return
		}
		wait := notify.Jitter(delay)
		var ra *notify.RetryAfterError
		if errors.As(err, &ra) {
			wait = max(wait, ra.After)
		}
		t.o.Logger.Warn("telegram getUpdates failed; retrying", "in", wait, "err", err)
		tm := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			tm.Stop()
			return
		case <-tm.C:
		}
		delay = min(delay*2, maxDelay)
	}
}

// pollOnce fetches one batch of updates and handles it.
func (t *Channel) pollOnce(ctx context.Context, d approval.Decider) error {
	t.mu.Lock()
	offset := t.next
	t.mu.Unlock()
	params := map[string]any{"timeout": int(t.pollTimeout / time.Second), "allowed_updates": []string{"message", "callback_query"}}
	if offset != 0 {
		params["offset"] = offset
	}
	var raw []json.RawMessage
	if err := t.call(ctx, t.pollClient, "getUpdates", params, &raw); err != nil {
		return err
	}
	for _, r := range raw {
		u, err := parseUpdate(r)
		if err != nil {
			t.o.Logger.Warn("ignoring a malformed telegram update", "err", err)
			if u == nil {
				continue
			}
		}
		t.mu.Lock()
		if u.UpdateID >= t.next {
			t.next = u.UpdateID + 1
		}
		replay := t.seen[u.UpdateID]
		if !replay {
			t.seen[u.UpdateID] = true
			t.ring = append(t.ring, u.UpdateID)
			if len(t.ring) > tgMaxSeen {
				delete(t.seen, t.ring[0])
				t.ring = t.ring[1:]
			}
		}
		t.mu.Unlock()
		if replay || err != nil {
			continue
		}
		t.handle(ctx, d, u)
	}
	return nil
}

// parseUpdate decodes one update. An update whose id can be read
// but whose body cannot is returned with an error, so its id still moves
// the offset on.
func parseUpdate(raw []byte) (*tgUpdate, error) {
	var id struct {
		UpdateID *int64 `json:"update_id"`
	}
	if err := json.Unmarshal(raw, &id); err != nil || id.UpdateID == nil {
		return nil, fmt.Errorf("update without an update_id: %.80q", raw)
	}
	var u tgUpdate
	if err := json.Unmarshal(raw, &u); err != nil {
		return &tgUpdate{UpdateID: *id.UpdateID}, fmt.Errorf("update %d: %w", *id.UpdateID, err)
	}
	return &u, nil
}

// supervisor returns the supervisor id an update from chat and from
// decides as, or false: only a configured private chat, from its own user.
func (t *Channel) supervisor(chat tgChat, from *tgUser) (string, bool) {
	if from == nil || from.IsBot || chat.Type != "private" || chat.ID != from.ID || !slices.Contains(t.chats, chat.ID) {
		return "", false
	}
	return Supervisor(chat.ID), true
}

// Refusals audited per chat per minute, and chats per minute: past these a
// flood of forged updates is only logged, so it cannot bloat the audit
// chain.
const (
	tgAuditPerChat = 5
	tgAuditChats   = 256
)

func (t *Channel) refuse(ctx context.Context, d approval.Decider, u *tgUpdate, chat tgChat, from *tgUser, what string) {
	var user int64
	if from != nil {
		user = from.ID
	}
	t.mu.Lock()
	if now := time.Now(); now.Sub(t.refusedAt) > time.Minute || t.refused == nil {
		t.refusedAt, t.refused = now, map[int64]int{}
	}
	n, known := t.refused[chat.ID]
	audit := n < tgAuditPerChat && (known || len(t.refused) < tgAuditChats)
	if audit {
		t.refused[chat.ID] = n + 1
	}
	t.mu.Unlock()
	if !audit {
		t.o.Logger.Debug("refused a telegram update (audit rate-limited)", "chat", chat.ID, "user", user, "what", what)
		return
	}
	d.AuditAuthFailure(ctx, http.StatusForbidden, fmt.Sprintf("telegram %s (update %d) from chat %d (%s) user %d refused: not a configured supervisor's private chat",
		what, u.UpdateID, chat.ID, approval.Printable(chat.Type, 20), user))
	t.o.Logger.Warn("refused a telegram update from a chat that is not a supervisor", "chat", chat.ID, "user", user, "what", what)
}

func (t *Channel) handle(ctx context.Context, d approval.Decider, u *tgUpdate) {
	switch {
	case u.CallbackQuery != nil:
		t.handleCallback(ctx, d, u, u.CallbackQuery)
	case u.Message != nil:
		t.handleMessage(ctx, d, u, u.Message)
	}
}

func (t *Channel) answerCallback(ctx context.Context, id, text string) {
	if err := t.call(ctx, t.o.Client, "answerCallbackQuery", map[string]any{"callback_query_id": id, "text": text}, nil); err != nil {
		t.o.Logger.Warn("telegram answerCallbackQuery failed", "err", err)
	}
}

func (t *Channel) handleCallback(ctx context.Context, d approval.Decider, u *tgUpdate, cb *tgCallback) {
	var chat tgChat
	if cb.Message != nil {
		chat = cb.Message.Chat
	}
	sup, ok := t.supervisor(chat, &cb.From)
	if !ok {
		t.refuse(ctx, d, u, chat, &cb.From, "button press")
		t.answerCallback(ctx, cb.ID, "Refused: this chat cannot decide warden requests.")
		return
	}
	action, id, ok := parseCallback(cb.Data)
	if !ok {
		t.answerCallback(ctx, cb.ID, "Unknown button.")
		return
	}
	if action == tgDeny {
		t.answerCallback(ctx, cb.ID, "Reply with the reason for the denial.")
		t.reply(chat.ID, "Why deny request "+id+"? Reply to this message with the reason: the agent reads it.",
			map[string]any{"reply_markup": map[string]any{"force_reply": true, "input_field_placeholder": "reason for the denial"}})
		return
	}
	if why, short := t.cannotApprove(ctx, d, id); why != "" {
		t.answerCallback(ctx, cb.ID, "Not approved: "+short)
		t.reply(chat.ID, "Request "+id+" was not approved. "+why, nil)
		return
	}
	var msg, outcome string
	switch action {
	case tgGrant:
		msg, outcome = t.grant(ctx, d, id, sup)
	case tgAlways:
		msg, outcome = t.always(ctx, d, id, sup)
	default:
		msg, outcome = t.decide(ctx, d, id, sup, true, "")
	}
	t.answerCallback(ctx, cb.ID, msg)
	if outcome != "" {
		t.settle(id, cb.Message, outcome)
	}
}

// cannotApprove says why request id may not be approved from Telegram
// (why, and short enough for a button's answer), or "" when it may. It reads the stored request (never what the update
// claims): a pending request whose arguments or risk a message shows only
// in part cannot be approved here, whatever button or command says so. A
// request already decided goes on to Decide, which refuses it and says
// who decided; one that cannot be read is not approved.
func (t *Channel) cannotApprove(ctx context.Context, d approval.Decider, id string) (why, short string) {
	a, err := d.Store().Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", "" // Decide answers "No such request."
	case err != nil:
		t.o.Logger.Warn("telegram: cannot read the request to approve", "id", id, "err", err)
		return "warden could not read it: " + approval.Printable(err.Error(), 150), "warden could not read the request."
	case a.State != store.Pending:
		return "", ""
	}
	if s := notify.Summarize(approval.PendingOf(a), t.pageURL, time.Now()); s.Cut {
		return s.TooLong(), "too long to show here; see the reply for where to review it."
	}
	return "", ""
}

// grant approves id with a GrantDuration, when d can.
func (t *Channel) grant(ctx context.Context, d approval.Decider, id, sup string) (answer, outcome string) {
	g, ok := d.(Granter)
	if !ok {
		return "Grants are not available here; approve or deny.", ""
	}
	a, gr, err := g.ApproveWithGrant(ctx, id, sup, "approved from Telegram with a grant", GrantDuration)
	if err != nil {
		return t.outcomeOf(nil, err, id, sup)
	}
	until := gr.ExpiresAt.UTC().Format("15:04 UTC")
	return "Approved; the same call is allowed until " + until + ".",
		"✅ Approved by " + a.DecidedBy + "; the same call in this session is allowed until " + until + " (grant " + gr.ID + ")."
}

// Alwayser approves and writes a lasting rule (Broker.ApproveAlways); an
// approval.Decider that is also an Alwayser gets the "approve always"
// button.
type Alwayser interface {
	ApproveAlways(ctx context.Context, id, supervisor, reason string, rs []config.Rule) (*store.Approval, []config.Rule, error)
}

// always approves id and writes the narrowest rule that covers it (the one
// the message showed), when d can.
func (t *Channel) always(ctx context.Context, d approval.Decider, id, sup string) (answer, outcome string) {
	al, ok := d.(Alwayser)
	if !ok {
		return "\"Always\" is not available here; approve or deny.", ""
	}
	cur, err := d.Store().Get(ctx, id)
	if err != nil {
		return t.outcomeOf(nil, err, id, sup)
	}
	if _, ok := alwaysShowable(cur.Tool, cur.Args, cur.Workspace); !ok {
		return "No lasting rule from Telegram for this call (none fits, or it holds redacted text); use the page or the CLI.", ""
	}
	a, rs, err := al.ApproveAlways(ctx, id, sup, "approved always from Telegram", nil)
	if errors.Is(err, approval.ErrAlwaysRule) || errors.Is(err, approval.ErrNoRuleWriter) {
		return "No lasting rule: " + approval.Printable(err.Error(), 150), ""
	}
	if err != nil && a != nil && a.State == store.Approved {
		return "Approved once; the rule was not written.", "✅ Approved once by " + a.DecidedBy + "; the lasting rule was not written: " + approval.Printable(err.Error(), 200)
	}
	if err != nil {
		return t.outcomeOf(a, err, id, sup)
	}
	return "Approved always.", "✅ Approved always by " + a.DecidedBy + ": " + approval.Printable(approval.DescribeRules(rs), 400) +
		" (warden rules remove " + rs[0].ID + ")"
}

// decide applies a decision and says what happened: the short answer for
// the supervisor, and the outcome to show on the notifications ("" when
// nothing changed that they should show).
func (t *Channel) decide(ctx context.Context, d approval.Decider, id, sup string, approve bool, reason string) (answer, outcome string) {
	a, err := d.Decide(ctx, id, sup, approve, reason)
	return t.outcomeOf(a, err, id, sup)
}

func (t *Channel) outcomeOf(a *store.Approval, err error, id, sup string) (answer, outcome string) {
	var ce *store.ConflictError
	switch {
	case err == nil && a.State == store.Approved:
		return "Approved.", "✅ Approved by " + a.DecidedBy
	case err == nil:
		return "Denied.", "❌ Denied by " + a.DecidedBy + ": " + a.Reason
	case errors.As(err, &ce):
		by := ""
		if ce.By != "" {
			by = " by " + approval.Printable(ce.By, 80)
		}
		return "Already decided: " + strings.ToLower(string(ce.State)) + by + ". Nothing changed.",
			"Already " + strings.ToLower(string(ce.State)) + by + "."
	case errors.Is(err, store.ErrExpired):
		return "Too late: the request expired. Nothing changed.", "Expired before a decision."
	case errors.Is(err, store.ErrNotFound):
		return "No such request.", ""
	case errors.Is(err, approval.ErrNotSupervisor):
		t.o.Logger.Warn("telegram chat is not among the broker's supervisors", "supervisor", sup)
		return "warden does not accept decisions from this chat here.", ""
	case errors.Is(err, store.ErrGrantScope):
		return "This request cannot get a grant (no session); approve or deny it.", ""
	case errors.Is(err, approval.ErrReasonRequired):
		return "A denial needs a reason: /deny " + id + " reason: …", ""
	default:
		t.o.Logger.Warn("telegram decision failed", "id", id, "err", err)
		return "Failed: " + approval.Printable(err.Error(), 150), ""
	}
}

func (t *Channel) handleMessage(ctx context.Context, d approval.Decider, u *tgUpdate, m *tgMessage) {
	cmd, ok := parseCommand(m)
	sup, allowed := t.supervisor(m.Chat, m.From)
	if !allowed {
		if ok || strings.HasPrefix(strings.TrimSpace(m.Text), "/") || m.ReplyTo != nil {
			t.refuse(ctx, d, u, m.Chat, m.From, "message")
		}
		if m.Chat.Type == "private" && ok && cmd.verb == "start" {
			t.reply(m.Chat.ID, fmt.Sprintf("This chat (id %d) is not a warden supervisor. To make it one, add %d to security.approval.telegram.chat_ids.", m.Chat.ID, m.Chat.ID), nil)
		}
		return
	}
	if !ok {
		return
	}
	switch cmd.verb {
	case "start", "help":
		t.reply(m.Chat.ID, "warden sends approval requests here. Press Approve or Deny, or send /approve ID or /deny ID reason: … (you decide as "+sup+").", nil)
	case "approve", "deny":
		if cmd.id == "" {
			t.reply(m.Chat.ID, "Which request? /"+cmd.verb+" ID"+map[bool]string{true: "", false: " reason: …"}[cmd.verb == "approve"], nil)
			return
		}
		if cmd.verb == "deny" && cmd.reason == "" {
			t.reply(m.Chat.ID, "A denial needs a reason: /deny "+cmd.id+" reason: …", nil)
			return
		}
		if cmd.verb == "approve" {
			if why, _ := t.cannotApprove(ctx, d, cmd.id); why != "" {
				t.reply(m.Chat.ID, "Request "+cmd.id+" was not approved. "+why, map[string]any{"reply_parameters": map[string]any{"message_id": m.MessageID, "allow_sending_without_reply": true}})
				return
			}
		}
		answer, outcome := t.decide(ctx, d, cmd.id, sup, cmd.verb == "approve", cmd.reason)
		t.reply(m.Chat.ID, "Request "+cmd.id+": "+answer, map[string]any{"reply_parameters": map[string]any{"message_id": m.MessageID, "allow_sending_without_reply": true}})
		if outcome != "" {
			t.settle(cmd.id, nil, outcome)
		}
	}
}
