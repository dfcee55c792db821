package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/shellpolicy"
)

type runArgs struct {
	Command string `json:"command" jsonschema:"the shell command line to run (bash syntax); it is parsed and every part of it is judged before anything runs"`
	Cwd     string `json:"cwd,omitempty" jsonschema:"working directory relative to the workspace root (default: the root)"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"seconds before the whole command is killed (default from config, capped by config)"`
}

// GuardError is a refusal by a named hard rule.
type GuardError struct {
	Rule string
	Msg  string
}

func (e *GuardError) Error() string { return e.Msg }

// RuleID names the rule, for refusals and audit records.
func (e *GuardError) RuleID() string { return e.Rule }

// JudgeOptions turns the [commands] configuration into shellpolicy options.
func JudgeOptions(cfg *config.Config) (*shellpolicy.Options, error) {
	pats, err := shellpolicy.CompilePatterns(cfg.Commands.BlockedPatterns)
	if err != nil {
		return nil, err
	}
	return &shellpolicy.Options{
		SafeCommands:    cfg.Commands.SafeCommands,
		DevCommands:     cfg.Commands.DevCommands,
		BlockedPatterns: pats,
	}, nil
}

// judgeCommand applies every hard guard of run_command: commands enabled,
// the blocklist (built-in and the user's patterns), allowed_only.
func judgeCommand(cfg *config.Config, cmd string) (*shellpolicy.Verdict, error) {
	if !cfg.Commands.Enabled {
		return nil, &GuardError{Rule: "commands-disabled", Msg: "run_command is disabled (commands.enabled = false)"}
	}
	opts, err := JudgeOptions(cfg)
	if err != nil {
		return nil, err
	}
	v := shellpolicy.Judge(cmd, opts)
	if v.Blocked {
		return v, &GuardError{Rule: v.Rule, Msg: fmt.Sprintf("command refused by rule %s at %s: %s. This rule cannot be turned off; do not try another spelling of the same command.", v.Rule, v.Pos, v.Reason)}
	}
	if cfg.Commands.AllowedOnly && v.Class >= shellpolicy.Dangerous {
		return v, &GuardError{Rule: "allowed-only", Msg: "command refused: commands.allowed_only is on and this command is not classified safe or dev (" + firstDangerous(v) + ")"}
	}
	return v, nil
}

func firstDangerous(v *shellpolicy.Verdict) string {
	for _, c := range v.Commands {
		if c.Class >= shellpolicy.Dangerous {
			return fmt.Sprintf("%q: %s", c.Text, c.Why)
		}
	}
	return "dangerous"
}

// riskSummary describes a judged command for a person deciding on it.
func riskSummary(v *shellpolicy.Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class: %s\n", v.Class)
	for _, c := range v.Commands {
		fmt.Fprintf(&b, "  %-9s %s", c.Class, c.Text)
		if c.Why != "" {
			fmt.Fprintf(&b, "  (%s)", c.Why)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// timeoutFor is the call's timeout: its own, else the default, capped by config.
func timeoutFor(cfg *config.Config, asked int) (time.Duration, error) {
	maxT := cfg.Commands.MaxTimeout
	if maxT <= 0 || maxT > 600 {
		maxT = 600
	}
	t := cfg.Commands.DefaultTimeout
	if asked != 0 {
		if asked < 1 {
			return 0, fmt.Errorf("timeout must be at least 1 second")
		}
		t = asked
	}
	if t > maxT {
		t = maxT
	}
	if t < 1 {
		t = 30
	}
	return time.Duration(t) * time.Second, nil
}

// RunCommand is the run_command tool.
func RunCommand() *Tool {
	return &Tool{
		Name: "run_command",
		Description: "Run a shell command in the workspace and return its combined output and exit status. " +
			"The command is parsed and every part of it is judged: destructive or privileged commands are refused, " +
			"others may need the user's approval. stdin is empty, the environment holds no secrets, and a timeout kills the whole process group.",
		Group:       GroupShell,
		Sensitive:   true,
		Annotations: Annotations{Destructive: true, OpenWorld: true},
		Schema:      schemaFor[runArgs](),
		Guard: func(env *Env, raw json.RawMessage) (Facts, error) {
			a, err := decodeArgs[runArgs](raw)
			if err != nil {
				return Facts{}, err
			}
			if strings.TrimSpace(a.Command) == "" {
				return Facts{}, errors.New("command is empty")
			}
			if _, err := timeoutFor(env.Config, a.Timeout); err != nil {
				return Facts{}, err
			}
			if err := checkPath(env, "cwd", a.Cwd, false); err != nil {
				return Facts{}, err
			}
			v, err := judgeCommand(env.Config, a.Command)
			if err != nil {
				return Facts{}, err
			}
			return Facts{CommandClass: v.Class.String(), Risk: riskSummary(v)}, nil
		},
		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[runArgs](raw)
			if err != nil {
				return "", err
			}
			// Judged again here: Run must hold even for a caller that skipped Guard.
			if _, err := judgeCommand(env.Config, a.Command); err != nil {
				return "", err
			}
			if env.Runner == nil {
				return "", errors.New("no command runner is configured")
			}
			timeout, err := timeoutFor(env.Config, a.Timeout)
			if err != nil {
				return "", err
			}
			// Dir for a jailed runner (resolved again inside the jail), AbsDir
			// for the host runner, both through the workspace.
			rel, abs := ".", env.Root.Dir()
			if a.Cwd != "" {
				if rel, err = env.Root.Clean("cwd", a.Cwd); err != nil {
					return "", err
				}
				if abs, err = env.Root.DirPath(a.Cwd); err != nil {
					return "", err
				}
			}
			res, err := env.Runner.Run(ctx, command.Spec{
				Shell:          a.Command,
				Dir:            rel,
				AbsDir:         abs,
				Env:            command.Environ(env.Config.Commands.EnvAllowlist, os.LookupEnv),
				Timeout:        timeout,
				MaxOutputLines: env.Config.Commands.MaxOutputLines,
			})
			if err != nil {
				return "", fmt.Errorf("the command could not be started: %w", err)
			}
			return formatRun(res, timeout)
		},
	}
}

func formatRun(res command.Result, timeout time.Duration) (string, error) {
	out := res.Output
	switch {
	case res.TimedOut:
		return out, fmt.Errorf("the command timed out after %s and its whole process group was killed", timeout)
	case res.ExitCode != 0:
		return out, fmt.Errorf("the command exited with status %d", res.ExitCode)
	}
	if out == "" {
		out = "(no output)"
	}
	return out, nil
}
