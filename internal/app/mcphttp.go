package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/mcp"
)

// MCPWorkspace is a workspace `warden serve` serves over MCP, at
// /mcp/<Name>.
type MCPWorkspace struct {
	Name, Dir string
}

// MCPHandler builds the MCP streamable-HTTP handler for the workspaces: one
// App (configuration, jail, store) per workspace, built from base with the
// workspace's directory, and one engine per MCP session so the audit trail
// tells sessions apart. Refused logins are audited through b. The
// sandboxed workspaces' workers are offered to `warden exec` and `warden
// sandbox status` (serveControl). close releases it all.
func MCPHandler(ctx context.Context, base Options, workspaces []MCPWorkspace, b *approval.Broker) (http.Handler, func(), error) {
	log := base.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var apps []*App
	closeAll := func() {
		for _, a := range apps {
			a.Close()
		}
	}
	servers := map[string]*sdk.Server{}
	for _, w := range workspaces {
		if _, ok := mcp.WorkspaceFromPath("/mcp/" + w.Name); !ok {
			closeAll()
			return nil, nil, &UsageError{Err: fmt.Errorf("--mcp-workspace %q: NAME must be letters, digits, '-' or '_'", w.Name+"="+w.Dir)}
		}
		if servers[w.Name] != nil {
			closeAll()
			return nil, nil, &UsageError{Err: fmt.Errorf("--mcp-workspace %s: the name is used twice", w.Name)}
		}
		o := base
		o.Workspace = w.Dir
		if o.Session == "" {
			o.Session = "mcp-http"
		}
		if o.Approver == nil {
			o.Approver = MCPApprover(true)
		}
		a, err := New(ctx, o)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--mcp-workspace %s: %w", w.Name, err)
		}
		apps = append(apps, a)
		servers[w.Name] = mcp.NewServer(a.engine, &mcp.ServerOptions{
			Logger:       log,
			ForSession:   func(session string) (mcp.Engine, error) { return a.EngineFor(session) },
			ApprovalWait: time.Duration(a.cfg.Security.Approval.MCPWaitSecs) * time.Second,
		})
	}
	tokens, err := mcp.TokensFromEnv(os.Environ())
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	if len(tokens) == 0 {
		log.Warn("no MCP client tokens (" + mcp.TokenEnvPrefix + "<CLIENT>=<token>): every MCP request will be refused")
	}
	h, err := mcp.NewHTTPHandler(mcp.HTTPOptions{
		Server:        func(name string) *sdk.Server { return servers[name] },
		Tokens:        tokens,
		OnAuthFailure: b.AuditAuthFailure,
		Logger:        log,
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closeControl := serveControl(apps, log)
	return h, func() { closeControl(); closeAll() }, nil
}
