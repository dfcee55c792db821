package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/notify"
	"github.com/wardenhq/warden/internal/approval/notify/telegram"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/mcp"
	"github.com/wardenhq/warden/internal/store"
)

// ApprovalOptions are the broker options cfg's [security.approval] states
// (approval.FromConfig), with the channels it names started: the webhook,
// then each of notify_channels in order. Each Telegram private chat is a
// supervisor too. The caller sets Store (and Prompt, Audit), calls
// approval.Listen with the broker so that Telegram takes answers, and
// closeFn when done, which closes the channels.
func ApprovalOptions(cfg *config.Config, log *slog.Logger) (o approval.Options, closeFn func() error, err error) {
	if o, err = approval.FromConfig(cfg, nil); err != nil {
		return o, func() error { return nil }, err
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
	defer func() {
		if err != nil {
			closeFn()
			closeFn = func() error { return nil }
		}
	}()
	add := func(c notify.Channel) {
		chans = append(chans, c)
		o.Channels = append(o.Channels, c)
	}
	if w, err := notify.WebhookFromConfig(ac, no); err != nil {
		return o, closeFn, err
	} else if w != nil {
		add(w)
	}
	for _, name := range approval.NotifyChannels(ac) {
		if name == "telegram" {
			t, err := telegram.FromConfig(ac, no)
			if err != nil {
				return o, closeFn, err
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
			return o, closeFn, err
		}
		if c != nil {
			add(c)
		}
	}
	return o, closeFn, nil
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
	o, closeChannels, err := ApprovalOptions(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	o.Store = st
	if mirror != nil {
		o.Audit = mirror
	}
	if approval.IsTerminal(os.Stdin, os.Stderr) {
		o.Prompt = approval.NewTerminal(os.Stdin, os.Stderr)
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
		o, closeChannels, err := ApprovalOptions(cfg, log)
		if err != nil {
			return nil, nil, err
		}
		closeFn := func() { _ = closeChannels() }
		o.Store, o.Audit = st, mirror
		o.Channels = append(o.Channels, mcp.ProgressChannel{})
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
	b, err := approval.New(ctx, approval.Options{Store: st, Supervisors: co.Supervisors, Logger: log, GrantMax: co.GrantMax})
	if err != nil {
		closeChannels()
		return nil, nil, err
	}
	approval.Listen(b, co.Channels)
	return b, func() { _ = closeChannels() }, nil
}
