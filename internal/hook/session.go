package hook

import (
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// HostProtected are the hosts' own configuration files inside a workspace:
// a call a hook decides never writes them, or the model could write its way
// out of the hook (or add an MCP server, or a permission rule).
var HostProtected = []string{".claude/**", ".codex/**", ".gemini/**", ".cursor/**", ".mcp.json", ".vscode/mcp.json"}

// EngineSession is a Session on an open workspace: Decider builds the
// registry (the built-in tools and HostTools) and hands it to NewEngine.
type EngineSession struct {
	Root   *workspace.Root
	Config *config.Config
	// NewEngine builds the engine around reg (the session's store,
	// approver and audit trail are the caller's).
	NewEngine func(reg *tools.Registry) (Decider, error)
	// Closer releases what the session holds; nil for nothing.
	Closer func() error
	// HostAsks and Wait are the configuration's [hooks] approval = "host"
	// and wait_secs (Options' when not set here: see Settings).
	HostAsks bool
	Wait     time.Duration
}

// Settings is implemented by a Session whose configuration says how a
// supervised call is answered ([hooks] approval and wait_secs); they win
// over Options.HostAsks and Options.Wait.
type Settings interface {
	HookSettings() (hostAsks bool, wait time.Duration)
}

// HookSettings implements Settings.
func (s *EngineSession) HookSettings() (bool, time.Duration) { return s.HostAsks, s.Wait }

var _ Session = (*EngineSession)(nil)

// Workspace implements Session.
func (s *EngineSession) Workspace() string { return s.Root.Dir() }

// Refused implements Session.
func (s *EngineSession) Refused(rel string, write bool) bool {
	if _, ok := s.Root.MaskRule(rel); ok {
		return true
	}
	if _, ok := s.Root.ProtectRule(rel); ok && write {
		return true
	}
	return false
}

// Decider implements Session: the engine holds the one tool the call is
// decided as (the built-in tools and HostTools are its candidates), so that
// a hook process prepares only what it uses. A call of a tool none of them
// is stays unknown to the engine, which refuses it.
func (s *EngineSession) Decider(c Call) (Decider, error) {
	mcpTool := ""
	if mcpRe.MatchString(c.Tool) {
		mcpTool = c.Tool
	}
	reg := tools.NewRegistry()
	all := append(tools.Builtin(s.Config).List(), HostTools(mcpTool)...)
	for _, t := range all {
		if t.Name == policy.Canonical(c.Tool) {
			reg.Add(t)
		}
	}
	return s.NewEngine(reg)
}

// Close implements Session.
func (s *EngineSession) Close() error {
	if s.Closer == nil {
		return nil
	}
	return s.Closer()
}
