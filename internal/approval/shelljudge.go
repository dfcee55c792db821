package approval

import (
	"errors"
	"fmt"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/shellpolicy"
	"github.com/wardenhq/warden/internal/tools"
)

// ShellJudge is the CommandJudge on warden's shell policy: the command is
// parsed, checked against the blocklist, wrappers (sh -c, env, xargs, …)
// are unwrapped, and every simple command, at every depth, is listed by its
// source text. It must also pass LiteralJudge, whose simple commands are
// listed too: a pattern written for "echo " must not approve
// "echo x > ~/.bashrc" or "ls ${HOME}" because their text starts well.
// A command either judge refuses is asked, never auto-approved.
func ShellJudge(opts *shellpolicy.Options) CommandJudge {
	return func(cmd string) (*CommandVerdict, error) {
		v := shellpolicy.Judge(cmd, opts)
		if v.ParseError != "" {
			return nil, fmt.Errorf("%w: %s", errUnjudgeable, v.ParseError)
		}
		if v.Blocked {
			return &CommandVerdict{Blocked: true}, nil
		}
		lit, err := LiteralJudge(cmd)
		if err != nil {
			return nil, err
		}
		out := &CommandVerdict{Commands: lit.Commands}
		for _, c := range v.Commands {
			out.Commands = append(out.Commands, c.Text)
		}
		return out, nil
	}
}

// ShellJudgeFromConfig is ShellJudge with the options run_command judges
// with (tools.JudgeOptions: the user's [commands] lists and
// blocked_patterns, the environment allowlist, the masks, the jail), so a
// user-blocked command is never auto-approved and the risk summary shows
// the reading that decided.
func ShellJudgeFromConfig(cfg *config.Config) (CommandJudge, error) {
	opts, err := tools.JudgeOptions(cfg)
	if err != nil {
		return nil, errors.Join(errors.New("commands.blocked_patterns"), err)
	}
	return ShellJudge(opts), nil
}
