package engine

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"mvdan.cc/sh/v3/syntax"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
)

// HookOutputMax is how much of a hook's output reaches the model.
const HookOutputMax = 1000

// PostEditHooks runs the user's [[hooks.post_edit]] commands after an edit
// (seed 000 layer 10). A hook that fails, hangs or cannot start never
// breaks the call: its outcome is reported as text for the model.
//
// The edited file's name comes from the model, so it is shell-quoted
// before it replaces {file}; it also reaches the hook as WARDEN_EDITED_FILE.
type PostEditHooks struct {
	Hooks []config.Hook
	// Runner runs the hooks in the workspace root (on the host, or in the jail).
	Runner command.Runner
	// Env is the environment every hook gets (already allowlisted).
	Env []string
}

// AfterEdit implements HookRunner.
func (h *PostEditHooks) AfterEdit(ctx context.Context, files []string) string {
	var out []string
	for _, file := range files {
		for _, hook := range h.Hooks {
			if !hookMatches(hook, file) {
				continue
			}
			out = append(out, h.run(ctx, hook, file))
		}
	}
	return strings.Join(out, "\n")
}

func hookMatches(hook config.Hook, file string) bool {
	if len(hook.FilePatterns) == 0 {
		return true
	}
	for _, p := range hook.FilePatterns {
		if ok, _ := doublestar.Match(p, file); ok {
			return true
		}
		if ok, _ := doublestar.Match(p, path.Base(file)); ok {
			return true
		}
	}
	return false
}

func (h *PostEditHooks) run(ctx context.Context, hook config.Hook, file string) string {
	name := hook.Name
	if name == "" {
		name = hook.Command
	}
	quoted, err := syntax.Quote(file, syntax.LangBash)
	if err != nil {
		return fmt.Sprintf("[hook %s: not run: the file name %q cannot be quoted for the shell]", name, file)
	}
	timeout := time.Duration(hook.Timeout) * time.Second
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	res, err := h.Runner.Run(ctx, command.Spec{
		Shell:   strings.ReplaceAll(hook.Command, "{file}", quoted),
		Dir:     ".",
		Env:     append(append([]string(nil), h.Env...), "WARDEN_EDITED_FILE="+file),
		Timeout: timeout,
	})
	var status string
	switch {
	case err != nil:
		return fmt.Sprintf("[hook %s: could not run: %v]", name, err)
	case res.TimedOut:
		status = fmt.Sprintf("timed out after %s", timeout)
	case res.ExitCode != 0:
		status = fmt.Sprintf("failed with status %d", res.ExitCode)
	default:
		status = "ok"
	}
	text := strings.TrimSpace(audit.Truncate(res.Output, HookOutputMax))
	if text == "" {
		return fmt.Sprintf("[hook %s on %s: %s]", name, file, status)
	}
	return fmt.Sprintf("[hook %s on %s: %s]\n%s", name, file, status, text)
}
