package telemetry

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
)

// collector is the OpenTelemetry collector's own OTLP receiver, in this
// process, on loopback: what it decodes is what a real collector gets.
type collector struct {
	url    string
	traces *consumertest.TracesSink
	logs   *consumertest.LogsSink
}

func startCollector(t *testing.T) *collector {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	c := &collector{url: "http://" + addr, traces: new(consumertest.TracesSink), logs: new(consumertest.LogsSink)}
	ctx := context.Background()
	set := receivertest.NewNopSettings(f.Type())
	tr, err := f.CreateTraces(ctx, set, cfg, c.traces)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := f.CreateLogs(ctx, set, cfg, c.logs)
	if err != nil {
		t.Fatal(err)
	}
	host := componenttest.NewNopHost()
	if err := tr.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	if err := lr.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.Shutdown(context.Background())
		lr.Shutdown(context.Background())
	})
	return c
}

func (c *collector) spans() []ptrace.Span {
	var out []ptrace.Span
	for _, td := range c.traces.AllTraces() {
		for i := range td.ResourceSpans().Len() {
			rs := td.ResourceSpans().At(i)
			for j := range rs.ScopeSpans().Len() {
				ss := rs.ScopeSpans().At(j)
				for k := range ss.Spans().Len() {
					out = append(out, ss.Spans().At(k))
				}
			}
		}
	}
	return out
}

func (c *collector) logRecords() []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range c.logs.AllLogs() {
		for i := range ld.ResourceLogs().Len() {
			rl := ld.ResourceLogs().At(i)
			for j := range rl.ScopeLogs().Len() {
				sl := rl.ScopeLogs().At(j)
				for k := range sl.LogRecords().Len() {
					out = append(out, sl.LogRecords().At(k))
				}
			}
		}
	}
	return out
}

func attrs(m pcommon.Map) map[string]string {
	out := map[string]string{}
	m.Range(func(k string, v pcommon.Value) bool {
		out[k] = v.AsString()
		return true
	})
	return out
}

const secret = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"

func TestExportToCollector(t *testing.T) {
	t.Parallel()
	col := startCollector(t)
	ctx := context.Background()
	e, err := FromConfig(ctx, config.Telemetry{OTLPEndpoint: col.url, ServiceName: "warden-test"}, "v9", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	args, _ := json.Marshal(map[string]string{"command": "curl -H 'Authorization: Bearer " + secret + "' https://api.example.com/" + strings.Repeat("x", 500)})
	records := []*audit.Record{
		{Time: now, Event: "tool_call", Session: "s-1", Agent: "build", Workspace: "/w", Tool: "run_command", Args: args,
			Decision: "approved", RequestID: "req-1", DecidedBy: "alice", Duration: 12.5, Success: true, Result: "token=" + secret},
		{Time: now, Event: "tool_call", Tool: "read_file", Args: json.RawMessage(`{"path":"../../etc/passwd"}`),
			Decision: "deny", Rule: "workspace confinement", Error: "Path '../../etc/passwd' escapes the workspace"},
		{Time: now, Event: "approval", Tool: "run_command", RequestID: "req-1", Decision: "denied", DecidedBy: "bob",
			Reason: "no: password=" + secret},
		{Time: now, Event: "egress", Tool: "http_request", Decision: "deny", Rule: "sandbox.egress.deny", Reason: "host metadata.google.internal"},
	}
	for _, r := range records {
		if err := e.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	spans, logs := col.spans(), col.logRecords()
	if len(spans) != len(records) || len(logs) != len(records) {
		t.Fatalf("collector got %d spans and %d log records, want %d each", len(spans), len(logs), len(records))
	}
	byName := map[string]ptrace.Span{}
	for _, s := range spans {
		byName[s.Name()] = s
		for k, v := range attrs(s.Attributes()) {
			if strings.Contains(v, secret) || strings.Contains(v, "AbCdEfGhIjKlMnOp") {
				t.Errorf("span %s attribute %s carries the secret: %s", s.Name(), k, v)
			}
		}
	}
	run, ok := byName["execute_tool run_command"]
	if !ok {
		t.Fatalf("no execute_tool span; got %v", keys(byName))
	}
	a := attrs(run.Attributes())
	for k, want := range map[string]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_command", "gen_ai.tool.call.id": "req-1",
		"gen_ai.agent.name": "build", "gen_ai.conversation.id": "s-1", "warden.decision": "approved", "warden.decided_by": "alice",
	} {
		if a[k] != want {
			t.Errorf("%s = %q, want %q", k, a[k], want)
		}
	}
	if !strings.Contains(a["gen_ai.tool.call.arguments"], audit.Redacted) || len(a["gen_ai.tool.call.arguments"]) > 400 {
		t.Errorf("arguments not sanitised like the audit record: %s", a["gen_ai.tool.call.arguments"])
	}
	if want := string(audit.Sanitize(args, audit.DefaultMaxLen)); a["gen_ai.tool.call.arguments"] != want {
		t.Errorf("arguments %s, want exactly the audit record's %s", a["gen_ai.tool.call.arguments"], want)
	}
	if d := time.Duration(run.EndTimestamp() - run.StartTimestamp()); d != 12500*time.Microsecond {
		t.Errorf("span lasts %s, want the call's 12.5ms", d)
	}
	denied := byName["execute_tool read_file"]
	if denied.Status().Code() != ptrace.StatusCodeError || attrs(denied.Attributes())["warden.rule"] != "workspace confinement" {
		t.Errorf("refused call: status %v, attrs %v", denied.Status().Code(), attrs(denied.Attributes()))
	}
	if _, ok := byName["warden.approval run_command"]; !ok {
		t.Errorf("no approval span; got %v", keys(byName))
	}
	if eg, ok := byName["warden.egress http_request"]; !ok || attrs(eg.Attributes())["warden.decision"] != "deny" {
		t.Errorf("no egress span with its decision; got %v", keys(byName))
	}
	res := attrs(col.traces.AllTraces()[0].ResourceSpans().At(0).Resource().Attributes())
	if res["service.name"] != "warden-test" || res["service.version"] != "v9" {
		t.Errorf("resource %v", res)
	}
	// Each log record carries the same sanitised attributes and points at
	// its span.
	spanIDs := map[pcommon.SpanID]bool{}
	for _, s := range spans {
		spanIDs[s.SpanID()] = true
	}
	for _, l := range logs {
		la := attrs(l.Attributes())
		for k, v := range la {
			if strings.Contains(v, "AbCdEfGhIjKlMnOp") {
				t.Errorf("log attribute %s carries the secret", k)
			}
		}
		if !spanIDs[l.SpanID()] {
			t.Errorf("log record %q is not linked to one of the spans", l.Body().AsString())
		}
		if la["warden.event"] == "" || l.EventName() == "" {
			t.Errorf("log record without its event: %v", la)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A collector that is down or hangs never slows a Write, and Close gives up
// within its context.
func TestCollectorDown(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	for _, url := range []string{"http://127.0.0.1:1", hang.URL} {
		e, err := New(context.Background(), Options{Endpoint: url, BatchTimeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		for range 1000 {
			e.Write(context.Background(), &audit.Record{Event: "tool_call", Tool: "read_file", Success: true})
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("%s: 1000 writes took %s with the collector unreachable", url, d)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		t0 = time.Now()
		e.Close(ctx)
		cancel()
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%s: Close took %s past its 500ms context", url, d)
		}
	}
}

// Headers come from the variable headers_env names.
func TestHeadersFromEnv(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("X-Api-Key"))
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	env := map[string]string{"OTEL_KEY": "x-api-key=abc123, other=1"}
	e, err := FromConfig(context.Background(), config.Telemetry{OTLPEndpoint: srv.URL, HeadersEnv: "OTEL_KEY"}, "", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	e.Write(context.Background(), &audit.Record{Event: "tool_call", Tool: "read_file"})
	e.Close(context.Background())
	if got.Load() != "abc123" {
		t.Errorf("collector saw X-Api-Key %q", got.Load())
	}
	env["OTEL_KEY"] = "novalue-s3cret"
	if _, err := FromConfig(context.Background(), config.Telemetry{OTLPEndpoint: srv.URL, HeadersEnv: "OTEL_KEY"}, "", func(k string) string { return env[k] }); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad headers: %v", err)
	}
	if e, err := FromConfig(context.Background(), config.Telemetry{}, "", nil); e != nil || err != nil {
		t.Errorf("no endpoint: %v, %v; want export off", e, err)
	}
}
