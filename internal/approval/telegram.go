package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/store"
)

// DefaultTelegramAPI is the Bot API base URL.
const DefaultTelegramAPI = "https://api.telegram.org"

// TelegramSupervisorPrefix starts the supervisor id of a Telegram chat:
// decisions from chat 123 are made as "telegram:123".
const TelegramSupervisorPrefix = "telegram:"

// TelegramSupervisor is the supervisor id decisions from chat id are made as.
func TelegramSupervisor(chatID int64) string {
	return TelegramSupervisorPrefix + strconv.FormatInt(chatID, 10)
}

// Decider decides requests on behalf of a channel that takes answers
// (Telegram). *Broker is one. Store is where the channel reads a request
// before approving it: it approves only what its message showed whole.
type Decider interface {
	Decide(ctx context.Context, id, supervisor string, approve bool, reason string) (*store.Approval, error)
	AuditAuthFailure(ctx context.Context, status int, what string)
	Store() store.Store
}

// TelegramOptions configure a Telegram channel.
type TelegramOptions struct {
	APIURL  string // default DefaultTelegramAPI
	Token   string // the bot token (secret: never logged)
	ChatIDs []int64
	PageURL string
	// PollTimeout is getUpdates' long-poll timeout; default 30 s.
	PollTimeout time.Duration
	Notify      *NotifyOptions
}

// Telegram is a Channel that sends each new request to every supervisor
// chat through the Bot API, with Approve and Deny buttons, and — once
// Listen is called — takes the supervisors' answers by long polling
// getUpdates (no public URL needed): a button press, `/approve ID`,
// `/deny ID reason: …`, or a reply giving the reason a Deny button asked
// for. Decisions go through the Decider as supervisor "telegram:<chat id>".
//
// Who may decide: an update decides only when it comes from a private chat
// whose id is in ChatIDs and whose sender is that chat's user (in a private
// chat the chat id is the user id). Group chats in ChatIDs receive the
// notifications but never decide: a group member is not a known person.
// Anything else is refused, audited as an auth failure, and changes
// nothing.
//
// What may be approved: only a request whose arguments and risk the
// message showed whole. When either was cut to fit, the message has no
// Approve or grant button and points at the page (or `warden approvals
// show`), and an approval from Telegram (button, forged callback or
// /approve) is refused, judged on the stored request; Deny still works.
type Telegram struct {
	api, token  string
	chats       []int64
	pageURL     string
	pollTimeout time.Duration
	o           NotifyOptions
	box         *outbox
	pollClient  *http.Client

	mu      sync.Mutex
	sent    map[string]*tgSentReq // request id → notifications this process sent, at most tgMaxSent
	sentSeq uint64                // order of first notification, for evicting the oldest
	seen    map[int64]bool        // update ids handled (replays are ignored)
	ring    []int64               // seen, oldest first, bounded
	next    int64                 // the next getUpdates offset

	refusedAt time.Time     // start of the current refusal-audit window
	refused   map[int64]int // refusals audited in that window, by chat

	stopOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	key      string // set while this channel is the process's poller
}

type tgSent struct{ chat, msg int64 }

// tgSentReq is what settle needs of one request: the messages to edit.
type tgSentReq struct {
	msgs    []tgSent
	expires time.Time // the request's expiry; zero if none
	seq     uint64
}

const (
	tgMaxSeen = 4096
	tgMaxSent = 1024
)

// NewTelegram starts a Telegram channel; Listen starts taking answers and
// Close stops both.
func NewTelegram(o TelegramOptions) (*Telegram, error) {
	if o.Token == "" {
		return nil, errors.New("telegram needs a bot token")
	}
	if strings.ContainsAny(o.Token, "/?#% \t\r\n") {
		return nil, errors.New("telegram bot token has characters a token cannot have")
	}
	if len(o.ChatIDs) == 0 {
		return nil, errors.New("telegram needs at least one chat id (chat_ids)")
	}
	if o.APIURL == "" {
		o.APIURL = DefaultTelegramAPI
	}
	if err := checkTelegramAPI(o.APIURL); err != nil {
		return nil, err
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 30 * time.Second
	}
	t := &Telegram{
		api: strings.TrimRight(o.APIURL, "/"), token: o.Token, chats: slices.Clone(o.ChatIDs), pageURL: o.PageURL,
		pollTimeout: o.PollTimeout, o: o.Notify.withDefaults(), sent: map[string]*tgSentReq{}, seen: map[int64]bool{},
	}
	t.pollClient = &http.Client{Transport: t.o.Client.Transport, Timeout: o.PollTimeout + 15*time.Second}
	t.box = newOutbox("telegram", t.o)
	return t, nil
}

// checkTelegramAPI accepts an https Bot API base URL, or plain http to a
// loopback address only: over plain http the token (in every URL path)
// travels in clear and anyone on the path can answer getUpdates with
// forged decisions.
func checkTelegramAPI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("security.approval.telegram.api_url %q is not an https URL", raw)
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return fmt.Errorf("security.approval.telegram.api_url %q is plain http to a host that is not this machine: "+
			"the bot token would travel in clear and updates could be forged; use https (http is allowed only to 127.0.0.0/8, ::1 or localhost)", u.Redacted())
	}
	return nil
}

// isLoopbackHost is true for "localhost" and loopback IP literals
// (127.0.0.0/8, ::1); not for names that merely resolve there.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// The Bot API's shapes, as far as warden reads them.
type (
	tgUpdate struct {
		UpdateID      int64       `json:"update_id"`
		Message       *tgMessage  `json:"message"`
		CallbackQuery *tgCallback `json:"callback_query"`
	}
	tgMessage struct {
		MessageID int64      `json:"message_id"`
		From      *tgUser    `json:"from"`
		Chat      tgChat     `json:"chat"`
		Text      string     `json:"text"`
		ReplyTo   *tgMessage `json:"reply_to_message"`
	}
	tgUser struct {
		ID    int64 `json:"id"`
		IsBot bool  `json:"is_bot"`
	}
	tgChat struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}
	tgCallback struct {
		ID      string     `json:"id"`
		From    tgUser     `json:"from"`
		Message *tgMessage `json:"message"`
		Data    string     `json:"data"`
	}
	tgResponse struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  *struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
)

// call invokes a Bot API method. Errors never show the token.
func (t *Telegram) call(ctx context.Context, c *http.Client, method string, params, result any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return permanent(fmt.Errorf("telegram %s: %w", method, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.api+"/bot"+t.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return permanent(fmt.Errorf("telegram %s: bad api_url", method))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	defer resp.Body.Close()
	var r tgResponse
	derr := json.NewDecoder(&limitedReader{r: resp.Body, n: 8 << 20}).Decode(&r)
	if resp.StatusCode/100 != 2 || (derr == nil && !r.OK) {
		msg := fmt.Sprintf("telegram %s answered %s", method, resp.Status)
		if r.Description != "" {
			msg += ": " + Printable(r.Description, 200)
		}
		err := errors.New(msg)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || r.ErrorCode == 429:
			if r.Parameters != nil && r.Parameters.RetryAfter > 0 {
				return &retryAfterError{err, time.Duration(r.Parameters.RetryAfter) * time.Second}
			}
			return err
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusConflict:
			return err
		default:
			return permanent(err)
		}
	}
	if derr != nil {
		return fmt.Errorf("telegram %s: malformed answer: %w", method, derr)
	}
	if result != nil {
		if err := json.Unmarshal(r.Result, result); err != nil {
			return fmt.Errorf("telegram %s: malformed result: %w", method, err)
		}
	}
	return nil
}

type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("answer too large")
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// Callback data: one letter for the action, ':', the request id.
const (
	tgApprove = "a"
	tgDeny    = "d"
	tgGrant   = "g" // approve, and allow the same call in the session for TelegramGrant
)

// TelegramGrant is how long the "approve and allow" button allows the
// exact same call in the same session (the broker caps it at
// grant_max_minutes).
const TelegramGrant = 15 * time.Minute

// Granter approves with a grant (Broker.ApproveWithGrant); a Decider that
// is also a Granter gets the "approve and allow" button.
type Granter interface {
	ApproveWithGrant(ctx context.Context, id, supervisor, reason string, d time.Duration) (*store.Approval, *store.Grant, error)
}

// tgKeyboard is the message's buttons: Deny only when the message shows an
// excerpt of the call (cut), which must not be approved from here.
func tgKeyboard(p *Pending, cut bool) map[string]any {
	deny := map[string]string{"text": "❌ Deny", "callback_data": tgDeny + ":" + p.ID}
	if cut {
		return map[string]any{"inline_keyboard": [][]map[string]string{{deny}}}
	}
	rows := [][]map[string]string{{
		{"text": "✅ Approve", "callback_data": tgApprove + ":" + p.ID},
		deny,
	}}
	if p.Session != "" { // a grant is scoped to a session
		rows = append(rows, []map[string]string{{"text": "✅ Approve + allow this exact call for 15 min", "callback_data": tgGrant + ":" + p.ID}})
	}
	return map[string]any{"inline_keyboard": rows}
}

// Notify implements Channel: one message per supervisor chat, queued.
func (t *Telegram) Notify(_ context.Context, p *Pending) error {
	sum := summarize(p, t.pageURL, time.Now())
	decide := "Approve or deny with the buttons, or reply /approve " + p.ID + " or /deny " + p.ID + " reason: …"
	if sum.Cut {
		decide = sum.tooLong() + "\nIt cannot be approved from Telegram. Deny with the button, or reply /deny " + p.ID + " reason: …"
	}
	text := sum.plainText(decide)
	expires := p.ExpiresAt
	var errs []error
	for _, chat := range t.chats {
		params := map[string]any{"chat_id": chat, "text": text, "reply_markup": tgKeyboard(p, sum.Cut),
			"link_preview_options": map[string]bool{"is_disabled": true}}
		id := p.ID
		errs = append(errs, t.box.enqueue(delivery{what: fmt.Sprintf("message for request %s to chat %d", p.ID, chat),
			send: func(ctx context.Context) error {
				var m tgMessage
				if err := t.call(ctx, t.o.Client, "sendMessage", params, &m); err != nil {
					return err
				}
				t.remember(id, tgSent{chat: chat, msg: m.MessageID}, expires, time.Now())
				return nil
			}}))
	}
	return errors.Join(errs...)
}

// remember records a notification of request id so that a decision made
// through Telegram edits it. Requests decided elsewhere are never settled
// here, so the map is bounded: when full, requests expired by now are
// dropped, then the oldest; a new notification is always remembered.
func (t *Telegram) remember(id string, s tgSent, expires, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.sent[id]; ok {
		r.msgs = append(r.msgs, s)
		return
	}
	if len(t.sent) >= tgMaxSent {
		for k, r := range t.sent {
			if !r.expires.IsZero() && now.After(r.expires) {
				delete(t.sent, k)
			}
		}
	}
	for len(t.sent) >= tgMaxSent {
		oldest, first := "", true
		var seq uint64
		for k, r := range t.sent {
			if first || r.seq < seq {
				oldest, seq, first = k, r.seq, false
			}
		}
		delete(t.sent, oldest)
	}
	t.sentSeq++
	t.sent[id] = &tgSentReq{msgs: []tgSent{s}, expires: expires, seq: t.sentSeq}
}

// reply queues a plain message to chat.
func (t *Telegram) reply(chat int64, text string, extra map[string]any) {
	params := map[string]any{"chat_id": chat, "text": text}
	for k, v := range extra {
		params[k] = v
	}
	if err := t.box.enqueue(delivery{what: fmt.Sprintf("reply to chat %d", chat), send: func(ctx context.Context) error {
		return t.call(ctx, t.o.Client, "sendMessage", params, nil)
	}}); err != nil {
		t.o.Logger.Warn("telegram reply not sent", "err", err)
	}
}

// settle edits every notification of request id this process sent, and
// the message msg (the one a button was pressed on), to show the outcome
// without buttons.
func (t *Telegram) settle(id string, msg *tgMessage, outcome string) {
	t.mu.Lock()
	var sent []tgSent
	if r := t.sent[id]; r != nil {
		sent = r.msgs
	}
	delete(t.sent, id)
	t.mu.Unlock()
	type target struct {
		s    tgSent
		text string
	}
	var ts []target
	if msg != nil && msg.MessageID != 0 {
		ts = append(ts, target{tgSent{msg.Chat.ID, msg.MessageID}, msg.Text})
	}
	for _, s := range sent {
		if msg == nil || s != (tgSent{msg.Chat.ID, msg.MessageID}) {
			ts = append(ts, target{s, "warden: request " + id})
		}
	}
	for _, tg := range ts {
		params := map[string]any{"chat_id": tg.s.chat, "message_id": tg.s.msg, "text": tg.text + "\n\n" + outcome,
			"link_preview_options": map[string]bool{"is_disabled": true}}
		if err := t.box.enqueue(delivery{what: "outcome of request " + id, send: func(ctx context.Context) error {
			return t.call(ctx, t.o.Client, "editMessageText", params, nil)
		}}); err != nil {
			t.o.Logger.Warn("telegram edit not sent", "err", err)
		}
	}
}

// Close stops polling, delivers what is queued (up to CloseTimeout) and
// stops.
func (t *Telegram) Close() error {
	t.stopOnce.Do(func() {
		if t.cancel != nil {
			t.cancel()
		}
	})
	t.wg.Wait()
	pollers.Lock()
	if t.key != "" && pollers.m[t.key] == t {
		delete(pollers.m, t.key)
	}
	pollers.Unlock()
	t.box.close()
	return nil
}

// pollers holds the one Telegram channel per bot that polls in this
// process: the Bot API answers 409 to a second concurrent getUpdates.
var pollers = struct {
	sync.Mutex
	m map[string]*Telegram
}{m: map[string]*Telegram{}}

// Listen starts taking answers by long polling, deciding through d. Only
// one channel per bot polls in a process; Listen returns false (and does
// nothing) when another already does. Processes that share a database
// may each poll: the Bot API then refuses all but one (409), the others
// back off, and whichever polls decides in the shared store.
func (t *Telegram) Listen(d Decider) bool {
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

func (t *Telegram) poll(ctx context.Context, d Decider) {
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
		wait := jitter(delay)
		var ra *retryAfterError
		if errors.As(err, &ra) {
			wait = max(wait, ra.after)
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
func (t *Telegram) pollOnce(ctx context.Context, d Decider) error {
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
		u, err := parseTelegramUpdate(r)
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

// parseTelegramUpdate decodes one update. An update whose id can be read
// but whose body cannot is returned with an error, so its id still moves
// the offset on.
func parseTelegramUpdate(raw []byte) (*tgUpdate, error) {
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
func (t *Telegram) supervisor(chat tgChat, from *tgUser) (string, bool) {
	if from == nil || from.IsBot || chat.Type != "private" || chat.ID != from.ID || !slices.Contains(t.chats, chat.ID) {
		return "", false
	}
	return TelegramSupervisor(chat.ID), true
}

// Refusals audited per chat per minute, and chats per minute: past these a
// flood of forged updates is only logged, so it cannot bloat the audit
// chain.
const (
	tgAuditPerChat = 5
	tgAuditChats   = 256
)

func (t *Telegram) refuse(ctx context.Context, d Decider, u *tgUpdate, chat tgChat, from *tgUser, what string) {
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
		what, u.UpdateID, chat.ID, Printable(chat.Type, 20), user))
	t.o.Logger.Warn("refused a telegram update from a chat that is not a supervisor", "chat", chat.ID, "user", user, "what", what)
}

func (t *Telegram) handle(ctx context.Context, d Decider, u *tgUpdate) {
	switch {
	case u.CallbackQuery != nil:
		t.handleCallback(ctx, d, u, u.CallbackQuery)
	case u.Message != nil:
		t.handleMessage(ctx, d, u, u.Message)
	}
}

func (t *Telegram) answerCallback(ctx context.Context, id, text string) {
	if err := t.call(ctx, t.o.Client, "answerCallbackQuery", map[string]any{"callback_query_id": id, "text": text}, nil); err != nil {
		t.o.Logger.Warn("telegram answerCallbackQuery failed", "err", err)
	}
}

func (t *Telegram) handleCallback(ctx context.Context, d Decider, u *tgUpdate, cb *tgCallback) {
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
	action, id, ok := parseTelegramCallback(cb.Data)
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
	if action == tgGrant {
		msg, outcome = t.grant(ctx, d, id, sup)
	} else {
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
func (t *Telegram) cannotApprove(ctx context.Context, d Decider, id string) (why, short string) {
	a, err := d.Store().Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", "" // Decide answers "No such request."
	case err != nil:
		t.o.Logger.Warn("telegram: cannot read the request to approve", "id", id, "err", err)
		return "warden could not read it: " + Printable(err.Error(), 150), "warden could not read the request."
	case a.State != store.Pending:
		return "", ""
	}
	if s := summarize(pendingOf(a), t.pageURL, time.Now()); s.Cut {
		return s.tooLong(), "too long to show here; see the reply for where to review it."
	}
	return "", ""
}

// grant approves id with a TelegramGrant, when d can.
func (t *Telegram) grant(ctx context.Context, d Decider, id, sup string) (answer, outcome string) {
	g, ok := d.(Granter)
	if !ok {
		return "Grants are not available here; approve or deny.", ""
	}
	a, gr, err := g.ApproveWithGrant(ctx, id, sup, "approved from Telegram with a grant", TelegramGrant)
	if err != nil {
		return t.outcomeOf(nil, err, id, sup)
	}
	until := gr.ExpiresAt.UTC().Format("15:04 UTC")
	return "Approved; the same call is allowed until " + until + ".",
		"✅ Approved by " + a.DecidedBy + "; the same call in this session is allowed until " + until + " (grant " + gr.ID + ")."
}

// decide applies a decision and says what happened: the short answer for
// the supervisor, and the outcome to show on the notifications ("" when
// nothing changed that they should show).
func (t *Telegram) decide(ctx context.Context, d Decider, id, sup string, approve bool, reason string) (answer, outcome string) {
	a, err := d.Decide(ctx, id, sup, approve, reason)
	return t.outcomeOf(a, err, id, sup)
}

func (t *Telegram) outcomeOf(a *store.Approval, err error, id, sup string) (answer, outcome string) {
	var ce *store.ConflictError
	switch {
	case err == nil && a.State == store.Approved:
		return "Approved.", "✅ Approved by " + a.DecidedBy
	case err == nil:
		return "Denied.", "❌ Denied by " + a.DecidedBy + ": " + a.Reason
	case errors.As(err, &ce):
		by := ""
		if ce.By != "" {
			by = " by " + Printable(ce.By, 80)
		}
		return "Already decided: " + strings.ToLower(string(ce.State)) + by + ". Nothing changed.",
			"Already " + strings.ToLower(string(ce.State)) + by + "."
	case errors.Is(err, store.ErrExpired):
		return "Too late: the request expired. Nothing changed.", "Expired before a decision."
	case errors.Is(err, store.ErrNotFound):
		return "No such request.", ""
	case errors.Is(err, ErrNotSupervisor):
		t.o.Logger.Warn("telegram chat is not among the broker's supervisors", "supervisor", sup)
		return "warden does not accept decisions from this chat here.", ""
	case errors.Is(err, store.ErrGrantScope):
		return "This request cannot get a grant (no session); approve or deny it.", ""
	case errors.Is(err, ErrReasonRequired):
		return "A denial needs a reason: /deny " + id + " reason: …", ""
	default:
		t.o.Logger.Warn("telegram decision failed", "id", id, "err", err)
		return "Failed: " + Printable(err.Error(), 150), ""
	}
}

func (t *Telegram) handleMessage(ctx context.Context, d Decider, u *tgUpdate, m *tgMessage) {
	cmd, ok := parseTelegramCommand(m)
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

// telegramCommand is a supervisor's text: "/approve ID [reason]",
// "/deny ID reason: …", "/start", "/help", or a reply to the
// "Why deny request ID?" question (a deny with the reply as reason).
type telegramCommand struct {
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

func parseTelegramCallback(data string) (action, id string, ok bool) {
	action, id, ok = strings.Cut(data, ":")
	if !ok || (action != tgApprove && action != tgDeny && action != tgGrant) || !tgIDPatt.MatchString(id) {
		return "", "", false
	}
	return action, id, true
}

func parseTelegramCommand(m *tgMessage) (telegramCommand, bool) {
	text := strings.TrimSpace(m.Text)
	if text == "" {
		return telegramCommand{}, false
	}
	if m.ReplyTo != nil && m.ReplyTo.From != nil && m.ReplyTo.From.IsBot && !strings.HasPrefix(text, "/") {
		if sm := tgDenyQuestion.FindStringSubmatch(m.ReplyTo.Text); sm != nil {
			return telegramCommand{verb: "deny", id: sm[1], reason: CleanReason(tgReasonPrefix.ReplaceAllString(text, ""))}, true
		}
		return telegramCommand{}, false
	}
	head, rest, _ := strings.Cut(text, " ")
	sm := tgCommandSuffix.FindStringSubmatch(strings.ToLower(head))
	if sm == nil {
		return telegramCommand{}, false
	}
	cmd := telegramCommand{verb: sm[1]}
	switch cmd.verb {
	case "start", "help":
		return cmd, true
	case "approve", "deny":
	default:
		return telegramCommand{}, false
	}
	rest = strings.TrimSpace(rest)
	id, reason, _ := strings.Cut(rest, " ")
	if i := strings.IndexAny(id, "\n\t"); i >= 0 {
		id, reason = id[:i], id[i:]+" "+reason
	}
	id = strings.ToLower(id)
	if id != "" && !tgIDPatt.MatchString(id) {
		return telegramCommand{}, false
	}
	cmd.id = id
	cmd.reason = CleanReason(tgReasonPrefix.ReplaceAllString(strings.TrimSpace(reason), ""))
	return cmd, true
}
