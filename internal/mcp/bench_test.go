package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

// benchWarden is the warden binary the benchmarks run: $WARDEN_BENCH_BIN
// (another build, to compare two in one run), or this tree's.
func benchWarden(b *testing.B) string {
	if bin := os.Getenv("WARDEN_BENCH_BIN"); bin != "" {
		return bin
	}
	return warden(b)
}

// benchSession starts `warden mcp` (closed when b ends) and returns its
// session and the call of tool, made once.
func benchSession(b *testing.B, tool string) (*sdk.ClientSession, *sdk.CallToolParams, *serverCPU) {
	h := newHome(b, benchConfig())
	cmd := exec.Command(benchWarden(b), "mcp", "--workspace", h.ws)
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
	return cs, p, &serverCPU{pid: cmd.Process.Pid}
}

// serverCPU measures the CPU time (user and system) the `warden mcp`
// process spends per call: the client shares the machine's cores, so calls
// per second alone do not say which side got faster.
type serverCPU struct {
	pid   int
	start time.Duration
}

// ticks is the CPU time of the process so far, from /proc/PID/stat (in
// clock ticks of 10 ms: measure over seconds).
func (s *serverCPU) ticks(b *testing.B) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses:
	// state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %q", s.pid, stat)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// Start marks the start of the measured calls.
func (s *serverCPU) Start(b *testing.B) { s.start = s.ticks(b) }

// Report reports the server's CPU time per call since Start.
func (s *serverCPU) Report(b *testing.B) {
	b.ReportMetric(float64((s.ticks(b)-s.start).Microseconds())/float64(b.N), "server-µs/call")
}

// Tool calls over one `warden mcp` stdio session.
func BenchmarkStdio(b *testing.B) {
	for _, tool := range []string{"read_file", "run_command"} {
		b.Run(tool, func(b *testing.B) {
			cs, p, cpu := benchSession(b, tool)
			b.ResetTimer()
			cpu.Start(b)
			for b.Loop() {
				if _, err := cs.CallTool(b.Context(), p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			cpu.Report(b)
		})
	}
}

// read_file calls over one `warden mcp` stdio session with 8 in flight at
// once (a client that pipelines): the SDK's server handles them
// concurrently, and their audit records share transactions.
func BenchmarkStdioInFlight(b *testing.B) {
	cs, p, cpu := benchSession(b, "read_file")
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.ResetTimer()
	cpu.Start(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cs.CallTool(b.Context(), p); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	cpu.Report(b)
}

// The same calls, one `warden tool call` process each.
func BenchmarkProcess(b *testing.B) {
	for _, tool := range []string{"read_file", "run_command"} {
		b.Run(tool, func(b *testing.B) {
			h := newHome(b, benchConfig())
			for b.Loop() {
				cmd := exec.Command(benchWarden(b), "tool", "call", tool, "--workspace", h.ws, "--args", benchCalls[tool])
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
