//go:build notelemetry

package app

import (
	"context"
	"errors"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
)

// telemetrySink: this build has no OpenTelemetry export; a configuration
// that asks for it is refused rather than silently not exported.
func telemetrySink(_ context.Context, c config.Telemetry) (audit.Sink, func(context.Context) error, error) {
	if c.OTLPEndpoint != "" {
		return nil, nil, errors.New("telemetry.otlp_endpoint is set, but this warden was built with -tags notelemetry")
	}
	return nil, nil, nil
}
