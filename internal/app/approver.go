package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/approval/notify/telegram"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/mcp"
	"github.com/wardenhq/warden/internal/rulefile"
	"github.com/wardenhq/warden/internal/store"
)

// ApprovalOptions are the broker options cfg's [security.approval] states
// (approval.FromConfig), with the channels it names started: the webhook,
// then each of notify_channels in order. Each Telegram private chat is a
// supervisor too. The caller sets Store (and Prompt, Audit), calls
// approval.Listen with the broker so that Telegram takes answers, and
// closeFn when done, which closes the channels.
//
// A channel that cannot be started (its variable unset, its settings
// incomplete) is a warning, logged, and not an error: a notifier is not a
// gate, the other channels carry on, and a call that needs a person and
// reaches none fails safe as it would without it (ChannelProblems lists
// them for doctor and the audit).
func ApprovalOptions(cfg *config.Config, log *slog.Logger) (o approval.Options, closeFn func() error, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o, closeFn, problems, err := approvalOptions(cfg, log)
	for _, p := range problems {
		log.Warn("notification channel not started; approval requests are not sent there", "error", p)
	}
	return o, closeFn, err
}

// ChannelProblems says, for each notification channel cfg names that
// cannot be started, why. It starts nothing that outlives the call.
func ChannelProblems(cfg *config.Config) []error {
	_, closeFn, problems, err := approvalOptions(cfg, slog.New(slog.DiscardHandler))
	closeFn()
	if err != nil {
		problems = append(problems, err)
	}
	return problems
}

func approvalOptions(cfg *config.Config, log *slog.Logger) (o approval.Options, closeFn func() error, problems []error, err error) {
	closeFn = func() error { return nil }
	if o, err = approval.FromConfig(cfg, nil); err != nil {
		return o, closeFn, nil, err
	}
	o.Logger = log
	o.Lease = LeaseTTL(cfg.Store)
	ac := &cfg.Security.Approval
	no := &notify.Options{Logger: log}
	var chans []notify.Channel
	closeFn = func() error {
		var errs []error
		for _, c := range slices.Backward(chans) {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	add := func(c notify.Channel) {
		chans = append(chans, c)
		o.Channels = append(o.Channels, c)
	}
	if w, err := notify.WebhookFromConfig(ac, no); err != nil {
		problems = append(problems, fmt.Errorf("webhook: %w", err))
	} else if w != nil {
		add(w)
	}
	for _, name := range approval.NotifyChannels(ac) {
		if name == "telegram" {
			t, err := telegram.FromConfig(ac, no)
			if err != nil {
				problems = append(problems, fmt.Errorf("telegram: %w", err))
				continue
			}
			add(t)
			for _, id := range telegram.Supervisors(ac) {
				if !slices.Contains(o.Supervisors, id) {
					o.Supervisors = append(o.Supervisors, id)
				}
			}
			continue
		}
		c, err := notify.FromConfig(ac, name, no)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if c != nil {
			add(c)
		}
	}
	return o, closeFn, problems, nil
}

// announce prints, on stderr, how to decide a request this process waits
// for (approval.Announcement).
func announce(cfg *config.Config) func(*approval.Pending, []string) {
	return func(p *approval.Pending, sentTo []string) {
		fmt.Fprint(os.Stderr, approval.Announcement(p, cfg.Security.Approval.PageURL, sentTo))
	}
}

// channelOptions is ApprovalOptions for an approver that asks: each
// channel that cannot start is also written to the audit trail (event
// notify_failed, to every sink of sinks that is one), so the trail says why
// nobody was told.
func channelOptions(ctx context.Context, cfg *config.Config, log *slog.Logger, sinks ...any) (approval.Options, func() error, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o, closeFn, problems, err := approvalOptions(cfg, log)
	for _, p := range problems {
		log.Warn("notification channel not started; approval requests are not sent there", "error", p)
		for _, s := range sinks {
			if sink, ok := s.(audit.Sink); ok && sink != nil {
				_ = sink.Write(ctx, &audit.Record{Time: time.Now().UTC(), Event: "notify_failed", Error: p.Error()})
			}
		}
	}
	return o, closeFn, err
}

// Lazy builds the approver f builds on its first use (approval.Lazy): a
// process whose calls need no person never opens the channels nor sweeps
// the store. A configuration error of the channels then refuses the first
// supervised call instead of the command's start.
func Lazy(f ApproverFunc) ApproverFunc {
	return func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error) {
		l := approval.Lazy(func() (approval.Approver, func(), error) { return f(ctx, cfg, st, mirror, log) })
		return l, l.Close, nil
	}
}

// TerminalApprover is the approver of the CLI: the broker on st with the
// configured channels and supervisors, and the terminal prompt when stdin
// and stderr are a terminal. close releases the channels; st stays open.
func TerminalApprover(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error) {
	return newBroker(ctx, cfg, st, mirror, log)
}

func newBroker(ctx context.Context, cfg *config.Config, st store.Store, mirror audit.Sink, log *slog.Logger) (*approval.Broker, func(), error) {
	o, closeChannels, err := channelOptions(ctx, cfg, log, mirror, st)
	if err != nil {
		return nil, nil, err
	}
	o.Store, o.Rules = st, rulefile.User{}
	if mirror != nil {
		o.Audit = mirror
	}

	if approval.IsTerminal(os.Stdin, os.Stderr) {
		o.Prompt = approval.NewTerminal(os.Stdin, os.Stderr)
	} else {
		o.Announce = announce(cfg)
	}
	b, err := approval.New(ctx, o)
	if err != nil {
		closeChannels()
		return nil, nil, err
	}
	approval.Listen(b, o.Channels) // Telegram answers, while this process waits
	return b, func() { _ = closeChannels() }, nil
}

// MCPApprover is the approver of `warden mcp`: it asks nobody in this
// process (a supervisor decides through the store, or the call fails
// safe), and, with elicit, also the MCP client through an elicitation.
// Neither uses the terminal: stdin is the protocol.
func MCPApprover(elicit bool) ApproverFunc {
	return func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error) {
		o, closeChannels, err := channelOptions(ctx, cfg, log, mirror, st)
		if err != nil {
			return nil, nil, err
		}
		closeFn := func() { _ = closeChannels() }
		o.Store, o.Audit = st, mirror

		o.Channels = append(o.Channels, mcp.ProgressChannel{})
		o.Announce = announce(cfg) // stderr: the host's log of this server
		plain, err := approval.New(ctx, o)
		if err != nil {
			closeFn()
			return nil, nil, err
		}
		approval.Listen(plain, o.Channels) // Telegram answers, unless this process already polls
		a := &mcp.Approver{Plain: plain}
		if elicit {
			o.Prompt = mcp.Elicitor{}
			if a.Eliciting, err = approval.New(ctx, o); err != nil {
				closeFn()
				return nil, nil, err
			}
		}
		return a, closeFn, nil
	}
}

// DecidingBroker is the broker of `warden serve`: it asks nothing itself,
// it decides for the configured supervisors (the API's, and the Telegram
// chats, whose answers it takes while it runs). close stops the channels;
// st stays open.
func DecidingBroker(ctx context.Context, cfg *config.Config, st store.Store, log *slog.Logger) (*approval.Broker, func(), error) {
	co, closeChannels, err := ApprovalOptions(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	b, err := approval.New(ctx, approval.Options{Store: st, Supervisors: co.Supervisors, Logger: log, GrantMax: co.GrantMax, Rules: rulefile.User{}})
	if err != nil {
		closeChannels()
		return nil, nil, err
	}
	approval.Listen(b, co.Channels)
	return b, func() { _ = closeChannels() }, nil
}
