package notify

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
)

// Channel is an approval.Channel that delivers in the background: Close
// delivers what is queued (up to CloseTimeout) and stops it.
type Channel interface {
	approval.Channel
	Close() error
}

var (
	_ Channel = (*Webhook)(nil)
	_ Channel = (*Slack)(nil)
	_ Channel = (*Discord)(nil)
	_ Channel = (*Email)(nil)
)

// WebhookFromConfig returns the webhook [security.approval.webhook]
// configures, or nil when its url is not set. The HMAC secret comes from
// the environment variable secret_env names.
func WebhookFromConfig(ac *config.Approval, o *Options) (*Webhook, error) {
	if ac.Webhook.URL == "" {
		return nil, nil
	}
	if ac.Webhook.SecretEnv == "" {
		return nil, errors.New("security.approval.webhook: secret_env is required (the variable holding the HMAC secret)")
	}
	secret := os.Getenv(ac.Webhook.SecretEnv)
	if secret == "" {
		return nil, fmt.Errorf("security.approval.webhook: environment variable %s (secret_env) is empty", ac.Webhook.SecretEnv)
	}
	w, err := NewWebhook(ac.Webhook.URL, []byte(secret), o)
	if err != nil {
		return nil, fmt.Errorf("security.approval.webhook: %w", err)
	}
	return w.withPage(ac.PageURL), nil
}

// FromConfig returns the channel notify_channels names name, as
// [security.approval] configures it: "slack", "discord" or "email", each
// then required to be fully configured, its secrets read from the
// environment variables the configuration names. It returns nil, nil for
// a name this package does not build: "telegram" (package telegram),
// "api" and "terminal" (no channel: a supervisor decides through the store,
// or at the prompt).
func FromConfig(ac *config.Approval, name string, o *Options) (Channel, error) {
	switch name {
	case "slack", "discord":
		cw := ac.Slack
		if name == "discord" {
			cw = ac.Discord
		}
		u, err := FromEnv("security.approval."+name+".url_env", cw.URLEnv, "the webhook URL")
		if err != nil {
			return nil, err
		}
		if name == "slack" {
			s, err := NewSlack(u, ac.PageURL, o)
			if err != nil {
				return nil, fmt.Errorf("security.approval.slack: %w", err)
			}
			return s, nil
		}
		d, err := NewDiscord(u, ac.PageURL, o)
		if err != nil {
			return nil, fmt.Errorf("security.approval.discord: %w", err)
		}
		return d, nil
	case "email":
		e, err := emailFromConfig(&ac.Email, ac.PageURL, o)
		if err != nil {
			return nil, fmt.Errorf("security.approval.email: %w", err)
		}
		return e, nil
	}
	return nil, nil
}

// FromEnv returns the value of the environment variable name, which the
// setting key names and which holds what: an error naming the setting
// when either is empty.
func FromEnv(key, name, what string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%s is required (the environment variable holding %s)", key, what)
	}
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s: environment variable %s is empty", key, name)
	}
	return v, nil
}

func emailFromConfig(ec *config.Email, pageURL string, no *Options) (*Email, error) {
	if ec.SMTPAddr == "" || ec.From == "" || len(ec.To) == 0 {
		return nil, errors.New("smtp_addr, from and to are required")
	}
	eo := EmailOptions{Addr: ec.SMTPAddr, From: ec.From, To: ec.To, PageURL: pageURL, Notify: no}
	if ec.UsernameEnv != "" || ec.PasswordEnv != "" {
		var err error
		if eo.Username, err = FromEnv("username_env", ec.UsernameEnv, "the SMTP user name"); err != nil {
			return nil, err
		}
		if eo.Password, err = FromEnv("password_env", ec.PasswordEnv, "the SMTP password"); err != nil {
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
