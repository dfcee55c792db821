package telegram

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/config"
)

// SupervisorPrefix starts the supervisor id of a Telegram chat:
// decisions from chat 123 are made as "telegram:123".
const SupervisorPrefix = "telegram:"

// Supervisor is the supervisor id decisions from chat id are made as.
func Supervisor(chatID int64) string {
	return SupervisorPrefix + strconv.FormatInt(chatID, 10)
}

// Supervisors are the supervisor ids of the Telegram chats that may
// decide: "telegram:<id>" for each private chat in telegram.chat_ids (a
// positive id; a group's is negative and never decides).
func Supervisors(a *config.Approval) []string {
	var ids []string
	for _, c := range a.Telegram.ChatIDs {
		if c > 0 && !slices.Contains(ids, Supervisor(c)) {
			ids = append(ids, Supervisor(c))
		}
	}
	return ids
}

// FromConfig returns the channel [security.approval.telegram] configures,
// the bot token read from the environment variable bot_token_env names.
// The caller adds Supervisors(a) to the broker's supervisors and calls
// Listen to take answers.
func FromConfig(a *config.Approval, o *notify.Options) (*Channel, error) {
	tc := a.Telegram
	tok, err := notify.FromEnv("security.approval.telegram.bot_token_env", tc.BotTokenEnv, "the bot token")
	if err != nil {
		return nil, err
	}
	t, err := New(Options{APIURL: tc.APIURL, Token: tok, ChatIDs: tc.ChatIDs, PageURL: a.PageURL, Notify: o})
	if err != nil {
		return nil, fmt.Errorf("security.approval.telegram: %w", err)
	}
	return t, nil
}
