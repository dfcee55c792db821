package approval

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/config"
)

// RemoteChannels are notify_channel values meaning "a supervisor decides
// from elsewhere, through the store": requests then wait without a TTY.
// "slack", "discord" and "email" link to the page (or name the CLI
// command); "telegram" decides itself.
var RemoteChannels = slices.DeleteFunc(slices.Clone(KnownChannels), func(c string) bool { return c == "terminal" })

// KnownChannels are the values notify_channel(s) accepts (the config
// validator's list): RemoteChannels and "terminal" (the prompt of the
// process that asks).
var KnownChannels = config.NotifyChannels

// SupervisorIDs lists the configured supervisors: every
// [[security.approval.supervisors]] id, and supervisor_id (the
// one-supervisor form), without duplicates.
func SupervisorIDs(a *config.Approval) []string {
	var ids []string
	for _, s := range a.Supervisors {
		if s.ID != "" && !slices.Contains(ids, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	if a.SupervisorID != "" && !slices.Contains(ids, a.SupervisorID) {
		ids = append(ids, a.SupervisorID)
	}
	return ids
}

// NotifyChannels is notify_channels plus notify_channel, lower-cased, in
// order, without duplicates.
func NotifyChannels(a *config.Approval) []string {
	var cs []string
	for _, c := range append(slices.Clone(a.NotifyChannels), a.NotifyChannel) {
		c = strings.ToLower(strings.TrimSpace(c))
		if c != "" && !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	return cs
}

// FromConfig returns the broker Options that cfg's [security.approval]
// states: timeout, on_timeout, grant_max_minutes, the supervisors, the
// auto-approve rules, and Remote (a channel named in notify_channels lets
// a supervisor decide from elsewhere, or a webhook is set). judge judges
// commands for command_pattern rules; nil means ShellJudgeFromConfig(cfg).
//
// The caller adds the rest: Store, Prompt, Audit, the channels (package
// notify builds them from the same section) and the supervisors of the
// channels that decide (each Telegram private chat).
func FromConfig(cfg *config.Config, judge CommandJudge) (Options, error) {
	ac := &cfg.Security.Approval
	o := Options{
		Timeout:     time.Duration(ac.TimeoutSecs) * time.Second,
		OnTimeout:   ac.OnTimeout,
		Supervisors: SupervisorIDs(ac),
		GrantMax:    GrantMax(ac),
	}
	if judge == nil {
		var err error
		if judge, err = ShellJudgeFromConfig(cfg); err != nil {
			return o, err
		}
	}
	var err error
	if o.Auto, err = CompileAutoApprove(ac.AutoApprove, judge); err != nil {
		return o, fmt.Errorf("security.approval.auto_approve: %w", err)
	}
	for _, c := range NotifyChannels(ac) {
		if !slices.Contains(KnownChannels, c) {
			return o, fmt.Errorf("security.approval.notify_channels: unknown channel %q (known: %s)", c, strings.Join(KnownChannels, ", "))
		}
		if slices.Contains(RemoteChannels, c) {
			o.Remote = true
		}
	}
	if ac.Webhook.URL != "" {
		o.Remote = true
	}
	return o, nil
}
