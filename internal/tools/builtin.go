package tools

import "github.com/wardenhq/warden/internal/config"

// Builtin returns the registry of warden's own tools for cfg: every file
// tool, http_request, and run_command unless commands are disabled (then it
// is not registered at all, so a model never sees it).
func Builtin(cfg *config.Config) *Registry {
	r := NewRegistry(ReadFile(), WriteFile(), EditFile(), ApplyPatch(), DeleteFile())
	for _, t := range extraTools {
		r.Add(t())
	}
	if cfg.Commands.Enabled && runCommandTool != nil {
		r.Add(runCommandTool())
	}
	return r
}

// extraTools and runCommandTool are filled by the files that define those
// tools, so each tool lives in its own file.
var (
	extraTools     []func() *Tool
	runCommandTool func() *Tool
)
