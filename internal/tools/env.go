package tools

import (
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// Env is what a tool may use: the confined file system, the configuration
// and a command runner. Nothing else of the machine is reachable from a tool.
type Env struct {
	FS workspace.FS
	// Root is the workspace on the host. Tools use it only to check names
	// (masks, protected paths) before a call runs; every access goes
	// through FS, which may be the jailed worker.
	Root *workspace.Root
	// Runner runs commands: on the host, or in the workspace jail.
	Runner command.Runner
	Config *config.Config
	// Session and Agent identify the caller, for audit and approvals.
	Session string
	Agent   string
}
