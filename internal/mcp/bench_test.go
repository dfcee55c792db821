package mcp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
)

// benchConfig is the user config of the benchmarks: run_command allowed,
// and the sandbox on when WARDEN_BENCH_SANDBOX=1.
func benchConfig() string {
	c := "[security.tool_policy.tools]\nrun_command = \"allow\"\n"
	if os.Getenv("WARDEN_BENCH_SANDBOX") == "1" {
		c += "\n[sandbox]\nenabled = true\nbackend = \"local\"\n"
	}
	return c
}

var benchCalls = map[string]string{
	"read_file":   `{"path":"a.txt"}`,
	"run_command": `{"command":"true"}`,
}

// benchSession starts `warden mcp` (closed when b ends) and returns its
// session and the call of tool, made once.
func benchSession(b *testing.B, tool string) (*sdk.ClientSession, *sdk.CallToolParams) {
	h := newHome(b, benchConfig())
	cmd := exec.Command(warden(b), "mcp", "--workspace", h.ws)
	cmd.Env = h.env
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(b.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	p := &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(benchCalls[tool])}
	if res, err := cs.CallTool(b.Context(), p); err != nil || res.IsError {
		b.Fatalf("%v %v", err, res)
	}
	return cs, p
}

// Tool calls over one `warden mcp` stdio session.
func BenchmarkStdio(b *testing.B) {
	for _, tool := range []string{"read_file", "run_command"} {
		b.Run(tool, func(b *testing.B) {
			cs, p := benchSession(b, tool)
			b.ResetTimer()
			for b.Loop() {
				if _, err := cs.CallTool(b.Context(), p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// read_file calls over one `warden mcp` stdio session with 8 in flight at
// once (a client that pipelines): the SDK's server handles them
// concurrently, and their audit records share transactions.
func BenchmarkStdioInFlight(b *testing.B) {
	cs, p := benchSession(b, "read_file")
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cs.CallTool(b.Context(), p); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// The same calls, one `warden tool call` process each.
func BenchmarkProcess(b *testing.B) {
	for _, tool := range []string{"read_file", "run_command"} {
		b.Run(tool, func(b *testing.B) {
			h := newHome(b, benchConfig())
			for b.Loop() {
				cmd := exec.Command(warden(b), "tool", "call", tool, "--workspace", h.ws, "--args", benchCalls[tool])
				cmd.Env = h.env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// Tool calls through warden's engine to an upstream stdio MCP server (the
// SDK's server, testdata/jailserver), in the workspace jail and on the host.
func BenchmarkUpstreamStdio(b *testing.B) {
	bin := jailServer(b)
	for _, jailed := range []bool{false, true} {
		name := "host"
		if jailed {
			name = "jail"
		}
		b.Run(name, func(b *testing.B) {
			ws := b.TempDir()
			o := &ClientOptions{Pins: OpenPins(filepath.Join(b.TempDir(), PinsFile)), Dir: ws}
			if jailed {
				needJail(b)
				m := sandbox.NewManager(nil)
				defer m.Close()
				opts := &sandbox.Options{Workspace: ws, Sandbox: &config.Sandbox{Enabled: true, ROPaths: []string{filepath.Dir(bin)}}}
				o.Sandboxed = true
				o.Jail = func(ctx context.Context, argv []string) (*sandbox.Process, error) {
					return m.Spawn(ctx, opts, argv, "", nil)
				}
			}
			r, err := Connect(b.Context(), config.MCPServer{Name: "up", Command: bin}, o)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			f := newFixture(b, fixtureOpts{mode: config.ModeYolo, extra: r.Tools()})
			args := json.RawMessage(`{"text":"hello"}`)
			if res := f.eng.Call(b.Context(), "mcp__up__echo", args); !res.Success {
				b.Fatal(res.Error)
			}
			for b.Loop() {
				if res := f.eng.Call(b.Context(), "mcp__up__echo", args); !res.Success {
					b.Fatal(res.Error)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
