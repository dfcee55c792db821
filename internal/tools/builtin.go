package tools

import "github.com/wardenhq/warden/internal/config"

// builtinTools are warden's own tools but run_command, each defined in a
// file of its own.
var builtinTools = []func() *Tool{
	ReadFile, WriteFile, EditFile, ApplyPatch, DeleteFile,
	ListFiles, FindFiles, SearchCode, Grep,
	HTTPRequest,
}

// Builtin returns the registry of warden's own tools for cfg: every file
// tool, http_request, and run_command unless commands are disabled (then it
// is not registered at all, so a model never sees it).
func Builtin(cfg *config.Config) *Registry {
	r := NewRegistry()
	for _, t := range builtinTools {
		r.Add(t())
	}
	if cfg.Commands.Enabled {
		r.Add(RunCommand())
	}
	return r
}
