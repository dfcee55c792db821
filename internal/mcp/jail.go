package mcp

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/sandbox"
)

// jailStopGrace is how long a jailed stdio server has to exit after its
// input is closed before it is killed.
const jailStopGrace = 2 * time.Second

// jailTransport runs a stdio MCP server in the workspace jail and speaks
// newline-delimited JSON over the jailed process's stdin and stdout.
type jailTransport struct {
	jail func(ctx context.Context, argv []string) (*sandbox.Process, error)
	argv []string
}

func (t *jailTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	p, err := t.jail(ctx, t.argv)
	if err != nil {
		return nil, fmt.Errorf("failed to start the server in the workspace jail: %w", err)
	}
	return (&sdk.IOTransport{Reader: jailStdout{p}, Writer: jailStdin{p}}).Connect(ctx)
}

// jailStdout is the server's output. Closing it does nothing: the
// connection is closed through stdin (as for a local stdio server), and a
// read ends when the process does.
type jailStdout struct{ p *sandbox.Process }

func (r jailStdout) Read(b []byte) (int, error) { return r.p.Stdout().Read(b) }
func (r jailStdout) Close() error               { return nil }

// jailStdin is the server's input. Closing it shuts the server down as the
// MCP stdio transport asks: close its input, give it time to exit, then
// kill it (with everything it started).
type jailStdin struct{ p *sandbox.Process }

func (w jailStdin) Write(b []byte) (int, error) { return w.p.Stdin().Write(b) }

func (w jailStdin) Close() error {
	_ = w.p.Stdin().Close()
	select {
	case <-w.p.Done():
		return nil
	case <-time.After(jailStopGrace):
		return w.p.Close()
	}
}
