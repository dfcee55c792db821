package tools

import (
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// Env is what a tool may use: the confined file system, the configuration
// and a command runner. Nothing else of the machine is reachable from a tool.
type Env struct {
	FS     workspace.FS
	Config *config.Config
	// Session and Agent identify the caller, for audit and approvals.
	Session string
	Agent   string
}
