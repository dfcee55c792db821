package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// maskAudit records in the audit trail each time a running jail's mask of a
// path the host replaced is put back, or the jail is killed because it
// could not be (event "sandbox_mask"): a person reading the trail sees
// that a secret was exposed to the jail for that long, and where.
func maskAudit(sink audit.Sink, workspace string, log *slog.Logger) func(jail.MaskEvent) {
	return func(ev jail.MaskEvent) {
		rel, err := filepath.Rel(workspace, ev.Path)
		if err != nil || !filepath.IsLocal(rel) {
			rel = ev.Path
		}
		args, _ := json.Marshal(map[string]string{"path": rel, "action": ev.Action})
		rec := &audit.Record{Time: ev.At.UTC(), Event: "sandbox_mask", Workspace: workspace, Args: args,
			Reason: ev.Action, Duration: float64(ev.Exposed) / float64(time.Millisecond), Success: ev.Action == "remasked"}
		if ev.Err != nil {
			rec.Error = ev.Err.Error()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sink.Write(ctx, rec); err != nil {
			log.Warn("could not audit a mask restored in the jail", "path", ev.Path, "action", ev.Action, "err", err)
		}
	}
}
