package approval

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/wardenhq/warden/internal/config"
)

// RemoteChannels are notify_channel values meaning "a supervisor decides
// from elsewhere, through the store": requests then wait without a TTY.
var RemoteChannels = []string{"api", "cli", "webhook"}

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

// OptionsFromConfig fills broker Options from cfg's [security.approval]:
// timeout, on_timeout, supervisors, auto-approve rules (commands judged by
// judge, nil for ShellJudgeFromConfig(cfg)), the webhook channel and Remote. The caller
// sets Store, Prompt, Audit and Logger, and calls closeFn when done.
func OptionsFromConfig(cfg *config.Config, judge CommandJudge) (o Options, closeFn func() error, err error) {
	ac := &cfg.Security.Approval
	closeFn = func() error { return nil }
	o.Timeout = time.Duration(ac.TimeoutSecs) * time.Second
	o.OnTimeout = ac.OnTimeout
	o.Supervisors = SupervisorIDs(ac)
	if judge == nil {
		if judge, err = ShellJudgeFromConfig(cfg); err != nil {
			return o, closeFn, err
		}
	}
	if o.Auto, err = CompileAutoApprove(ac.AutoApprove, judge); err != nil {
		return o, closeFn, fmt.Errorf("security.approval.auto_approve: %w", err)
	}
	channels := slices.Clone(ac.NotifyChannels)
	if ac.NotifyChannel != "" {
		channels = append(channels, ac.NotifyChannel)
	}
	for _, c := range channels {
		if slices.Contains(RemoteChannels, c) {
			o.Remote = true
		}
	}
	if ac.Webhook.URL != "" {
		if ac.Webhook.SecretEnv == "" {
			return o, closeFn, errors.New("security.approval.webhook: secret_env is required (the variable holding the HMAC secret)")
		}
		secret := os.Getenv(ac.Webhook.SecretEnv)
		if secret == "" {
			return o, closeFn, fmt.Errorf("security.approval.webhook: environment variable %s (secret_env) is empty", ac.Webhook.SecretEnv)
		}
		w, err := NewWebhook(ac.Webhook.URL, []byte(secret), nil)
		if err != nil {
			return o, closeFn, fmt.Errorf("security.approval.webhook: %w", err)
		}
		o.Channels = append(o.Channels, w)
		o.Remote = true
		closeFn = w.Close
	}
	if len(o.Supervisors) == 0 {
		o.Remote = false
	}
	return o, closeFn, nil
}
