package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/notify"
)

// checkAPI accepts an https Bot API base URL, or plain http to a
// loopback address only: over plain http the token (in every URL path)
// travels in clear and anyone on the path can answer getUpdates with
// forged decisions.
func checkAPI(raw string) error {
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
func (t *Channel) call(ctx context.Context, c *http.Client, method string, params, result any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return notify.Permanent(fmt.Errorf("telegram %s: %w", method, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.api+"/bot"+t.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return notify.Permanent(fmt.Errorf("telegram %s: bad api_url", method))
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
			msg += ": " + approval.Printable(r.Description, 200)
		}
		err := errors.New(msg)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || r.ErrorCode == 429:
			if r.Parameters != nil && r.Parameters.RetryAfter > 0 {
				return &notify.RetryAfterError{Err: err, After: time.Duration(r.Parameters.RetryAfter) * time.Second}
			}
			return err
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusConflict:
			return err
		default:
			return notify.Permanent(err)
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
