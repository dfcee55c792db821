package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
)

// Options configure an Exporter.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP base URL; signals go to
	// /v1/traces and /v1/logs below it.
	Endpoint string
	// Headers are sent with every export (an API key).
	Headers map[string]string
	// ServiceName is the service.name resource attribute; default "warden".
	ServiceName string
	// Version is the service.version resource attribute.
	Version string
	// BatchTimeout is how long records wait to be sent together; default 2 s.
	BatchTimeout time.Duration
}

// Exporter is an audit.Sink that exports each record as a span and a log
// record over OTLP.
type Exporter struct {
	tp     *sdktrace.TracerProvider
	lp     *sdklog.LoggerProvider
	tracer trace.Tracer
	logger otellog.Logger
}

var _ audit.Sink = (*Exporter)(nil)

// FromConfig returns the exporter [telemetry] asks for, or nil when
// otlp_endpoint is not set (export is off by default). getenv reads the
// variable named by headers_env.
func FromConfig(ctx context.Context, c config.Telemetry, version string, getenv func(string) string) (*Exporter, error) {
	if c.OTLPEndpoint == "" {
		return nil, nil
	}
	o := Options{Endpoint: c.OTLPEndpoint, ServiceName: c.ServiceName, Version: version}
	if c.HeadersEnv != "" {
		h, err := ParseHeaders(getenv(c.HeadersEnv))
		if err != nil {
			return nil, fmt.Errorf("telemetry.headers_env: the value of %s: %w", c.HeadersEnv, err)
		}
		o.Headers = h
	}
	return New(ctx, o)
}

// ParseHeaders reads k=v,k2=v2 (the OTEL_EXPORTER_OTLP_HEADERS format). An
// error never repeats a value, which may be a secret.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("header %d is not name=value", i+1)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}

// New starts the exporter. Nothing is sent until the first record.
func New(ctx context.Context, o Options) (*Exporter, error) {
	if o.Endpoint == "" {
		return nil, errors.New("telemetry: no OTLP endpoint")
	}
	if o.ServiceName == "" {
		o.ServiceName = "warden"
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = 2 * time.Second
	}
	base := strings.TrimRight(o.Endpoint, "/")
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(o.ServiceName), semconv.ServiceVersion(o.Version))
	te, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(base+"/v1/traces"), otlptracehttp.WithHeaders(o.Headers))
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter for %s: %w", base, err)
	}
	le, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(base+"/v1/logs"), otlploghttp.WithHeaders(o.Headers))
	if err != nil {
		te.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: log exporter for %s: %w", base, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(te, sdktrace.WithBatchTimeout(o.BatchTimeout)))
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(le, sdklog.WithExportInterval(o.BatchTimeout))))
	const scope = "github.com/wardenhq/warden"
	return &Exporter{tp: tp, lp: lp, tracer: tp.Tracer(scope), logger: lp.Logger(scope)}, nil
}

// Close sends what is still buffered (within ctx) and stops the exporter.
func (e *Exporter) Close(ctx context.Context) error {
	if e == nil {
		return nil
	}
	return errors.Join(e.tp.Shutdown(ctx), e.lp.Shutdown(ctx))
}

// sanitized is rec passed once more through the audit sanitiser: what the
// audit trail holds, never more.
func sanitized(rec *audit.Record) audit.Record {
	r := *rec
	r.Args = audit.Sanitize(r.Args, audit.DefaultMaxLen)
	clean := func(s string) string { return audit.Truncate(audit.Redact(s), audit.DefaultMaxLen) }
	r.Reason, r.Error, r.Result = clean(r.Reason), clean(r.Error), clean(r.Result)
	r.DecidedBy, r.Rule = clean(r.DecidedBy), clean(r.Rule)
	return r
}

// Write implements audit.Sink. It never blocks on the network: records are
// batched and sent in the background.
func (e *Exporter) Write(ctx context.Context, rec *audit.Record) error {
	if e == nil || rec == nil {
		return nil
	}
	r := sanitized(rec)
	end := r.Time
	if end.IsZero() {
		end = time.Now()
	}
	start := end.Add(-time.Duration(r.Duration * float64(time.Millisecond)))
	name, attrs := describe(&r)
	// The span stands alone: the caller's context carries no trace of ours.
	_, span := e.tracer.Start(context.WithoutCancel(context.Background()), name,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	failed := !r.Success && (r.Error != "" || r.Event == "tool_call")
	if failed {
		msg := r.Error
		if msg == "" {
			msg = string(r.Decision)
		}
		span.SetStatus(codes.Error, msg)
	}
	sctx := trace.ContextWithSpan(context.Background(), span)
	var lr otellog.Record
	lr.SetTimestamp(end)
	lr.SetObservedTimestamp(time.Now())
	lr.SetEventName("warden." + r.Event)
	lr.SetBody(attribute.StringValue(summary(&r)))
	lr.SetSeverity(otellog.SeverityInfo)
	lr.SetSeverityText("INFO")
	if failed || r.Decision == "deny" || r.Decision == "denied" {
		lr.SetSeverity(otellog.SeverityWarn)
		lr.SetSeverityText("WARN")
	}
	lr.AddAttributes(attrs...)
	e.logger.Emit(sctx, lr)
	span.End(trace.WithTimestamp(end))
	return nil
}

// describe names the span and lists its attributes: GenAI semantic
// conventions where they apply, warden.* for the rest.
func describe(r *audit.Record) (string, []attribute.KeyValue) {
	var a []attribute.KeyValue
	add := func(k attribute.Key, v string) {
		if v != "" {
			a = append(a, k.String(v))
		}
	}
	name := "warden." + r.Event
	switch r.Event {
	case "tool_call":
		name = "execute_tool " + r.Tool
		a = append(a, semconv.GenAIOperationNameExecuteTool)
		add(semconv.GenAIToolNameKey, r.Tool)
		add(semconv.GenAIToolCallIDKey, r.RequestID)
		add(semconv.GenAIToolCallArgumentsKey, string(r.Args))
		add(semconv.GenAIToolCallResultKey, r.Result)
	default:
		if r.Tool != "" {
			name += " " + r.Tool
		}
		add(semconv.GenAIToolNameKey, r.Tool)
		add("warden.request_id", r.RequestID)
		add("warden.arguments", string(r.Args))
		add("warden.execution_result", r.Result)
	}
	add(semconv.GenAIAgentNameKey, r.Agent)
	add(semconv.GenAIConversationIDKey, r.Session)
	add("warden.event", r.Event)
	add("warden.workspace", r.Workspace)
	add("warden.decision", string(r.Decision))
	add("warden.rule", r.Rule)
	add("warden.decided_by", r.DecidedBy)
	add("warden.reason", r.Reason)
	add("warden.error", r.Error)
	if r.Error != "" {
		add(semconv.ErrorTypeKey, "tool_error")
	}
	a = append(a, attribute.Bool("warden.success", r.Success))
	if r.Duration > 0 {
		a = append(a, attribute.Float64("warden.duration_ms", r.Duration))
	}
	return name, a
}

func summary(r *audit.Record) string {
	parts := []string{r.Event}
	for _, p := range []string{r.Tool, string(r.Decision)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " ")
}
