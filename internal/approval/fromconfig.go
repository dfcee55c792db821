package approval

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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

// TelegramSupervisors are the supervisor ids of the Telegram chats that
// may decide: "telegram:<id>" for each private chat in telegram.chat_ids
// (a positive id; a group's is negative and never decides).
func TelegramSupervisors(a *config.Approval) []string {
	var ids []string
	for _, c := range a.Telegram.ChatIDs {
		if c > 0 && !slices.Contains(ids, TelegramSupervisor(c)) {
			ids = append(ids, TelegramSupervisor(c))
		}
	}
	return ids
}

// notifyChannels is notify_channels plus notify_channel, without duplicates.
func notifyChannels(a *config.Approval) []string {
	var cs []string
	for _, c := range append(slices.Clone(a.NotifyChannels), a.NotifyChannel) {
		c = strings.ToLower(strings.TrimSpace(c))
		if c != "" && !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	return cs
}

// ConfigOptions tune FromConfig; nil means the defaults.
type ConfigOptions struct {
	// Judge judges commands for auto-approve rules; nil for
	// ShellJudgeFromConfig(cfg).
	Judge CommandJudge
	// Logger gets the channels' delivery failures; default discards.
	Logger *slog.Logger
	// Notify tunes the channels' delivery (tests); Logger wins over its own.
	Notify *NotifyOptions
}

// OptionsFromConfig is FromConfig with judge and no logger.
func OptionsFromConfig(cfg *config.Config, judge CommandJudge) (o Options, closeFn func() error, err error) {
	return FromConfig(cfg, &ConfigOptions{Judge: judge})
}

// FromConfig fills broker Options from cfg's [security.approval]:
// timeout, on_timeout, supervisors, auto-approve rules, the channels and
// Remote. The caller sets Store, Prompt and Audit, calls Listen with the
// broker so that channels taking answers (Telegram) start, and calls
// closeFn when done.
//
// Channels: the webhook when webhook.url is set; "slack", "discord",
// "telegram" and "email" when named in notify_channels (or
// notify_channel), each then required to be fully configured, its secrets
// read from the environment variables the configuration names. Each
// Telegram private chat becomes a supervisor, "telegram:<chat id>".
func FromConfig(cfg *config.Config, co *ConfigOptions) (o Options, closeFn func() error, err error) {
	if co == nil {
		co = &ConfigOptions{}
	}
	ac := &cfg.Security.Approval
	var closers []func() error
	closeFn = func() error {
		var errs []error
		for _, c := range slices.Backward(closers) {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			closeFn()
			closeFn = func() error { return nil }
		}
	}()
	o.Timeout = time.Duration(ac.TimeoutSecs) * time.Second
	o.OnTimeout = ac.OnTimeout
	o.Supervisors = SupervisorIDs(ac)
	judge := co.Judge
	if judge == nil {
		if judge, err = ShellJudgeFromConfig(cfg); err != nil {
			return o, closeFn, err
		}
	}
	if o.Auto, err = CompileAutoApprove(ac.AutoApprove, judge); err != nil {
		return o, closeFn, fmt.Errorf("security.approval.auto_approve: %w", err)
	}
	no := NotifyOptions{}
	if co.Notify != nil {
		no = *co.Notify
	}
	if co.Logger != nil {
		no.Logger = co.Logger
	}
	if no.Logger == nil {
		no.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	channels := notifyChannels(ac)
	for _, c := range channels {
		if !slices.Contains(KnownChannels, c) {
			return o, closeFn, fmt.Errorf("security.approval.notify_channels: unknown channel %q (known: %s)", c, strings.Join(KnownChannels, ", "))
		}
		if slices.Contains(RemoteChannels, c) {
			o.Remote = true
		}
	}
	add := func(ch Channel, c interface{ Close() error }) {
		o.Channels = append(o.Channels, ch)
		closers = append(closers, c.Close)
	}
	if ac.Webhook.URL != "" {
		if ac.Webhook.SecretEnv == "" {
			return o, closeFn, errors.New("security.approval.webhook: secret_env is required (the variable holding the HMAC secret)")
		}
		secret := os.Getenv(ac.Webhook.SecretEnv)
		if secret == "" {
			return o, closeFn, fmt.Errorf("security.approval.webhook: environment variable %s (secret_env) is empty", ac.Webhook.SecretEnv)
		}
		w, err := NewWebhook(ac.Webhook.URL, []byte(secret), &no)
		if err != nil {
			return o, closeFn, fmt.Errorf("security.approval.webhook: %w", err)
		}
		add(w.withPage(ac.PageURL), w)
		o.Remote = true
	}
	for _, c := range channels {
		switch c {
		case "slack", "discord":
			cw := ac.Slack
			if c == "discord" {
				cw = ac.Discord
			}
			u, err := envValue("security.approval."+c+".url_env", cw.URLEnv, "the webhook URL")
			if err != nil {
				return o, closeFn, err
			}
			if c == "slack" {
				s, err := NewSlack(u, ac.PageURL, &no)
				if err != nil {
					return o, closeFn, fmt.Errorf("security.approval.slack: %w", err)
				}
				add(s, s)
			} else {
				d, err := NewDiscord(u, ac.PageURL, &no)
				if err != nil {
					return o, closeFn, fmt.Errorf("security.approval.discord: %w", err)
				}
				add(d, d)
			}
		case "telegram":
			tc := ac.Telegram
			tok, err := envValue("security.approval.telegram.bot_token_env", tc.BotTokenEnv, "the bot token")
			if err != nil {
				return o, closeFn, err
			}
			t, err := NewTelegram(TelegramOptions{APIURL: tc.APIURL, Token: tok, ChatIDs: tc.ChatIDs, PageURL: ac.PageURL, Notify: &no})
			if err != nil {
				return o, closeFn, fmt.Errorf("security.approval.telegram: %w", err)
			}
			add(t, t)
			for _, id := range TelegramSupervisors(ac) {
				if !slices.Contains(o.Supervisors, id) {
					o.Supervisors = append(o.Supervisors, id)
				}
			}
		case "email":
			e, err := emailFromConfig(&ac.Email, ac.PageURL, &no)
			if err != nil {
				return o, closeFn, fmt.Errorf("security.approval.email: %w", err)
			}
			add(e, e)
		}
	}
	if len(o.Supervisors) == 0 {
		o.Remote = false
	}
	return o, closeFn, nil
}

func envValue(key, name, what string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%s is required (the environment variable holding %s)", key, what)
	}
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s: environment variable %s is empty", key, name)
	}
	return v, nil
}

func emailFromConfig(ec *config.Email, pageURL string, no *NotifyOptions) (*Email, error) {
	if ec.SMTPAddr == "" || ec.From == "" || len(ec.To) == 0 {
		return nil, errors.New("smtp_addr, from and to are required")
	}
	eo := EmailOptions{Addr: ec.SMTPAddr, From: ec.From, To: ec.To, PageURL: pageURL, Notify: no}
	if ec.UsernameEnv != "" || ec.PasswordEnv != "" {
		var err error
		if eo.Username, err = envValue("username_env", ec.UsernameEnv, "the SMTP user name"); err != nil {
			return nil, err
		}
		if eo.Password, err = envValue("password_env", ec.PasswordEnv, "the SMTP password"); err != nil {
			return nil, err
		}
	}
	if ec.CAFile != "" {
		pem, err := os.ReadFile(ec.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificate in it", ec.CAFile)
		}
		eo.RootCAs = pool
	}
	return NewEmail(eo)
}

// listener is a channel that takes answers (Telegram).
type listener interface{ Listen(Decider) bool }

// Listen starts every channel among chans that takes answers, deciding
// through d (the broker the channels notify for, or any broker on the
// same store whose supervisors include the channel's).
func Listen(d Decider, chans []Channel) {
	for _, c := range chans {
		if l, ok := c.(listener); ok {
			l.Listen(d)
		}
	}
}
