//go:build !notelemetry

package app

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/telemetry"
)

// telemetrySink returns the OTLP exporter [telemetry] asks for (nil when
// otlp_endpoint is unset) and the func that flushes and stops it. Building
// with -tags notelemetry leaves the OpenTelemetry SDK out of the binary.
func telemetrySink(ctx context.Context, c config.Telemetry) (audit.Sink, func(context.Context) error, error) {
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
	}
	e, err := telemetry.FromConfig(ctx, c, version, os.Getenv)
	if err != nil || e == nil {
		return nil, nil, err
	}
	return e, e.Close, nil
}
