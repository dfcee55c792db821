package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/mcp"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/tools"
)

// pinsPath is the file that pins the trusted tool definitions of the
// [[mcp.servers]], in the user's state directory.
func pinsPath() (string, error) {
	dir := config.StateDir()
	if dir == "" {
		return "", errors.New("failed to find the state directory for the MCP pins (set XDG_STATE_HOME)")
	}
	return filepath.Join(dir, mcp.PinsFile), nil
}

// MCPClientOptions are how warden connects to the [[mcp.servers]] of the
// workspace dir under cfg: the pins, the environment allowlist, and, in a
// sandboxed workspace, a jail of its own for stdio servers. close stops
// that jail.
func MCPClientOptions(cfg *config.Config, dir string, log *slog.Logger) (*mcp.ClientOptions, func() error, error) {
	return mcpClientOptions(cfg, dir, log, nil)
}

// mcpClientOptions is MCPClientOptions whose jail, under network =
// "allowlist", asks and audits through eo (nil: nobody, counters only).
func mcpClientOptions(cfg *config.Config, dir string, log *slog.Logger, eo *sandbox.EgressOptions) (*mcp.ClientOptions, func() error, error) {
	pp, err := pinsPath()
	if err != nil {
		return nil, nil, err
	}
	var c closers
	co := &mcp.ClientOptions{
		Pins: mcp.OpenPins(pp), Logger: log, Dir: dir, Sandboxed: sandbox.Enabled(cfg.Sandbox),
		Env: command.Environ(cfg.Commands.EnvAllowlist, os.LookupEnv),
	}
	if co.Sandboxed {
		co.Jail = jailSpawner(&c, cfg, dir, log, eo)
	}
	return co, c.close, nil
}

// UpstreamRegistry serves the tools of the upstream [[mcp.servers]]
// instead of the built-in ones: warden as a policy gateway.
func UpstreamRegistry(servers []config.MCPServer) RegistryFunc {
	return func(ctx context.Context, a *App) (_ *tools.Registry, closeAll func(), err error) {
		var c closers
		closeAll = func() { c.close() }
		var eo *sandbox.EgressOptions
		if a.jailOpts != nil {
			eo = a.jailOpts.Egress
		}
		co, closeJail, err := mcpClientOptions(a.cfg, a.root.Dir(), a.log, eo)
		if err != nil {
			return nil, closeAll, err
		}
		c.add(closeJail)
		reg := tools.NewRegistry()
		for _, s := range servers {
			r, err := mcp.Connect(ctx, s, co)
			if err != nil {
				closeAll()
				return nil, func() {}, err
			}
			c.add(r.Close)
			for _, t := range r.Tools() {
				reg.Add(t)
			}
		}
		return reg, closeAll, nil
	}
}
