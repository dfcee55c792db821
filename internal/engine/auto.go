package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/tools"
)

// JailCheck reports whether the workspace's jail is up and healthy (the
// worker answers, under its seccomp filter and no_new_privs), starting it
// if needed; why says what was found either way. The auto mode runs
// confined calls unasked only while it holds.
type JailCheck interface {
	JailHealthy(ctx context.Context) (ok bool, why string)
}

// autoState remembers what the engine said about the auto mode, so that
// it says it once and again only when it changes: on stderr whenever the
// message does, in the audit when the jail goes from healthy to not or
// back (a jail failing to start says why in words that differ each time —
// a pid, which end of a pipe broke first — and one row says the mode
// changed).
type autoState struct {
	mu      sync.Mutex
	said    string
	audited int // 0: nothing yet; 1: healthy; 2: not
}

// autoDecide is the auto mode: where the confirmation mode (auto) made a
// call supervised, a call whose whole effect stays inside a healthy jail
// runs unasked — file writes, edits, patches and deletions in the
// workspace (the guards already refused masked and protected paths), safe
// and dev commands, and dangerous commands when a checkpoint is taken
// before they run (warden undo takes them back) — as long as the jail does
// not share the host's network (network = "host": a command could carry
// the workspace anywhere; under "allowlist" the egress proxy asks a
// person for each unknown host). What leaves the jail stays supervised:
// http_request, MCP tools, anything else. Without a healthy jail it
// changes nothing: auto is then exactly confirm-sensitive. note explains
// the jail check for explain ("" when auto is not the mode that decided).
func (e *Engine) autoDecide(ctx context.Context, t *tools.Tool, facts tools.Facts, pd policy.Decision) (out policy.Decision, note string) {
	if pd.Action != policy.Supervised || pd.Rule != "confirm_mode="+config.ModeAuto {
		return pd, ""
	}
	ok, why := e.jailHealthy(ctx)
	if !ok {
		return pd, "auto: no working jail (" + why + "): asking as confirm-sensitive"
	}
	note = "auto: jail healthy (" + why + ")"
	allow := func(reason string) (policy.Decision, string) {
		return policy.Decision{Action: policy.Allow, Rule: pd.Rule, Reason: reason + ", inside the workspace's healthy jail"}, note
	}
	cfg := e.opts.Env.Config
	switch {
	case t.Group == tools.GroupFSWrite:
		return allow(t.Name + " changes the workspace only")
	case t.Group == tools.GroupShell && jailNetworkOpen(cfg):
		return pd, note + "; the jail shares the host network, so commands are asked"
	case t.Group == tools.GroupShell && (facts.CommandClass == "safe" || facts.CommandClass == "dev"):
		return allow("the command is classified " + facts.CommandClass)
	case t.Group == tools.GroupShell && e.WillCheckpoint(t, facts):
		return allow("the dangerous command's effect is confined to the workspace, and a checkpoint is taken first")
	case t.Group == tools.GroupShell:
		return pd, note + "; a dangerous command runs unasked only with checkpoints on"
	}
	return pd, note + fmt.Sprintf("; %s reaches beyond the jail", t.Name)
}

// jailNetworkOpen reports a jail that shares the host's network (network
// = "host"). With "none" nothing leaves; with "allowlist" the egress proxy
// decides each host by [sandbox.egress] and asks a person for unknown ones.
func jailNetworkOpen(cfg *config.Config) bool {
	sb := cfg.Sandbox
	return sb != nil && !sb.Lockdown && (sb.Network || sb.NetworkMode == config.NetworkHost)
}

// jailHealthy checks the jail, and says once (log and audit) what the auto
// mode does because of it, and again when that changes.
func (e *Engine) jailHealthy(ctx context.Context) (bool, string) {
	ok, why := false, "the workspace has no [sandbox]"
	if e.opts.Jail != nil {
		ok, why = e.opts.Jail.JailHealthy(ctx)
	}
	msg := "auto mode: the workspace's jail is healthy (" + why + "): calls confined to it run unasked"
	if !ok {
		msg = "auto mode: no working jail (" + why + "): behaving exactly as confirm-sensitive"
	}
	state := 2
	if ok {
		state = 1
	}
	e.auto.mu.Lock()
	changed, flipped := e.auto.said != msg, e.auto.audited != state
	e.auto.said, e.auto.audited = msg, state
	e.auto.mu.Unlock()
	if changed {
		if ok {
			e.opts.Log.Info(msg)
		} else {
			e.opts.Log.Warn(msg)
		}
		if e.opts.Audit != nil && flipped {
			rec := &audit.Record{Time: e.now().UTC(), Event: "auto_mode", Session: e.opts.Env.Session, Agent: e.opts.Env.Agent,
				Workspace: e.workRoot, Reason: msg, Success: ok}
			if err := e.opts.Audit.Write(context.WithoutCancel(ctx), rec); err != nil {
				e.opts.Log.Error("audit write failed", "err", err)
			}
		}
	}
	return ok, why
}
