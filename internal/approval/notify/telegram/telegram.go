package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
)

// DefaultAPI is the Bot API base URL.
const DefaultAPI = "https://api.telegram.org"

// Options configure a Telegram channel.
type Options struct {
	APIURL  string // default DefaultAPI
	Token   string // the bot token (secret: never logged)
	ChatIDs []int64
	PageURL string
	// PollTimeout is getUpdates' long-poll timeout; default 30 s.
	PollTimeout time.Duration
	Notify      *notify.Options
}

// Channel is an approval.Channel that sends each new request to every supervisor
// chat through the Bot API, with Approve and Deny buttons, and — once
// Listen is called — takes the supervisors' answers by long polling
// getUpdates (no public URL needed): a button press, `/approve ID`,
// `/deny ID reason: …`, or a reply giving the reason a Deny button asked
// for. Decisions go through the approval.Decider as supervisor "telegram:<chat id>".
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
type Channel struct {
	api, token  string
	chats       []int64
	pageURL     string
	pollTimeout time.Duration
	o           notify.Options
	box         *notify.Outbox
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

// New starts a Telegram channel; Listen starts taking answers and
// Close stops both.
func New(o Options) (*Channel, error) {
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
		o.APIURL = DefaultAPI
	}
	if err := checkAPI(o.APIURL); err != nil {
		return nil, err
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 30 * time.Second
	}
	t := &Channel{
		api: strings.TrimRight(o.APIURL, "/"), token: o.Token, chats: slices.Clone(o.ChatIDs), pageURL: o.PageURL,
		pollTimeout: o.PollTimeout, o: o.Notify.WithDefaults(), sent: map[string]*tgSentReq{}, seen: map[int64]bool{},
	}
	t.pollClient = &http.Client{Transport: t.o.Client.Transport, Timeout: o.PollTimeout + 15*time.Second}
	t.box = notify.NewOutbox("telegram", t.o)
	return t, nil
}

// alwaysShowable is the rule "always" would write for a call, when a chat
// may see it: not when the message redacts part of the arguments (a token
// in a command line), which the rule would carry whole.
func alwaysShowable(tool string, args json.RawMessage, workspace string) ([]config.Rule, bool) {
	rs, err := approval.ProposeAlways(tool, args, workspace, nil)
	if err != nil {
		return nil, false
	}
	var raw, clean any
	if json.Unmarshal(args, &raw) != nil || json.Unmarshal(audit.Sanitize(args, 1<<20), &clean) != nil || !reflect.DeepEqual(raw, clean) {
		return nil, false
	}
	return rs, true
}

// tgKeyboard is the message's buttons: Deny only when the message shows an
// excerpt of the call (cut), which must not be approved from here.
func tgKeyboard(p *approval.Pending, cut bool) map[string]any {
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
	if _, ok := alwaysShowable(p.Tool, p.Args, p.Workspace); ok {
		rows = append(rows, []map[string]string{{"text": "♾ Approve always (the rule shown)", "callback_data": tgAlways + ":" + p.ID}})
	}
	return map[string]any{"inline_keyboard": rows}
}

// Notify implements Channel: one message per supervisor chat, queued.
func (t *Channel) Notify(_ context.Context, p *approval.Pending) error {
	sum := notify.Summarize(p, t.pageURL, time.Now())
	decide := "Approve or deny with the buttons, or reply /approve " + p.ID + " or /deny " + p.ID + " reason: …"
	if sum.Cut {
		decide = sum.TooLong() + "\nIt cannot be approved from Telegram. Deny with the button, or reply /deny " + p.ID + " reason: …"
	}
	if rs, ok := alwaysShowable(p.Tool, p.Args, p.Workspace); ok && !sum.Cut {
		decide += "\nAlways would write: " + approval.Printable(approval.DescribeRules(rs), 600)
	}
	text, blocks := sum.Text(decide, "")
	expires := p.ExpiresAt
	var errs []error
	for _, chat := range t.chats {
		params := map[string]any{"chat_id": chat, "text": text, "reply_markup": tgKeyboard(p, sum.Cut),
			"link_preview_options": map[string]bool{"is_disabled": true}}
		if e := preEntities(text, blocks); len(e) > 0 {
			params["entities"] = e
		}
		id := p.ID
		errs = append(errs, t.box.Enqueue(notify.Delivery{What: fmt.Sprintf("message for request %s to chat %d", p.ID, chat),
			Send: func(ctx context.Context) error {
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
func (t *Channel) remember(id string, s tgSent, expires, now time.Time) {
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
func (t *Channel) reply(chat int64, text string, extra map[string]any) {
	params := map[string]any{"chat_id": chat, "text": text}
	for k, v := range extra {
		params[k] = v
	}
	if err := t.box.Enqueue(notify.Delivery{What: fmt.Sprintf("reply to chat %d", chat), Send: func(ctx context.Context) error {
		return t.call(ctx, t.o.Client, "sendMessage", params, nil)
	}}); err != nil {
		t.o.Logger.Warn("telegram reply not sent", "err", err)
	}
}

// settle edits every notification of request id this process sent, and
// the message msg (the one a button was pressed on), to show the outcome
// without buttons.
func (t *Channel) settle(id string, msg *tgMessage, outcome string) {
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
		if err := t.box.Enqueue(notify.Delivery{What: "outcome of request " + id, Send: func(ctx context.Context) error {
			return t.call(ctx, t.o.Client, "editMessageText", params, nil)
		}}); err != nil {
			t.o.Logger.Warn("telegram edit not sent", "err", err)
		}
	}
}

// preEntities marks each block of text (byte spans) as a pre entity, in
// the UTF-16 code units Telegram counts. An entity is no markup: the text
// inside cannot end it, whatever it holds.
func preEntities(text string, blocks []notify.Span) []map[string]any {
	var out []map[string]any
	for _, b := range blocks {
		if b.Start < 0 || b.End > len(text) || b.Start >= b.End {
			continue
		}
		off := utf16Len(text[:b.Start])
		out = append(out, map[string]any{"type": "pre", "offset": off, "length": utf16Len(text[b.Start:b.End])})
	}
	return out
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Close stops polling, delivers what is queued (up to CloseTimeout) and
// stops.
func (t *Channel) Close() error {
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
	t.box.Close()
	return nil
}

// ChannelName implements approval.NamedChannel.
func (*Channel) ChannelName() string { return "telegram" }
