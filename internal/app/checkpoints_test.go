package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/config"
)

func yolo() *config.Config {
	cfg := config.Default()
	cfg.Security.ConfirmMode = config.ModeYolo
	return cfg
}

// An App's engine checkpoints the workspace before a change; the store is
// in the state directory, and undoing takes the change back.
func TestAppCheckpoints(t *testing.T) {
	t.Parallel()
	a, dir := testApp(t, yolo(), nil)
	res := a.Engine().Call(t.Context(), "write_file", json.RawMessage(`{"path":"a.txt","content":"omega\n"}`))
	if !res.Success || !strings.Contains(res.Output, "the user can undo it") {
		t.Fatalf("write: %+v", res)
	}
	s := a.Checkpoints()
	if s == nil || !strings.HasPrefix(s.Dir(), filepath.Join(dir, "state")) {
		t.Fatalf("store %v", s)
	}
	c, err := s.Latest()
	if err != nil || c == nil {
		t.Fatalf("latest: %v %v", c, err)
	}
	if _, err := s.Undo(t.Context(), c, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(a.Workspace(), "a.txt")); string(b) != "alpha\n" {
		t.Errorf("a.txt = %q after undo", b)
	}
	// Turned off: no store, calls run as before.
	cfg := yolo()
	cfg.Checkpoints.Enabled = false
	off, _ := testApp(t, cfg, nil)
	if off.Checkpoints() != nil {
		t.Error("checkpoints turned off, but a store is open")
	}
	if res := off.Engine().Call(t.Context(), "write_file", json.RawMessage(`{"path":"a.txt","content":"x"}`)); !res.Success || strings.Contains(res.Output, "undo") {
		t.Errorf("write without checkpoints: %+v", res)
	}
}

// The ssh backend's workspace is remote: no checkpoints, calls are not
// refused for it.
func TestAppNoCheckpointsOverSSH(t *testing.T) {
	t.Parallel()
	cfg := yolo()
	cfg.Sandbox = &config.Sandbox{Enabled: true, Backend: "ssh", RemoteHost: "build.example"}
	if _, err := CheckpointOptions(cfg, "/ws", t.TempDir()); !errors.Is(err, ErrNoCheckpoints) {
		t.Fatalf("ssh backend: %v", err)
	}
	cfg.Sandbox = &config.Sandbox{Enabled: true, Backend: "local", RWPaths: []string{"../cache", "/var/cache/x"}, ROPaths: []string{"docs"}}
	o, err := CheckpointOptions(cfg, "/ws", "/state")
	if err != nil || strings.Join(o.Exposed, " ") != "/cache /var/cache/x /ws/docs" {
		t.Fatalf("exposed %v %v", o, err)
	}
}

// A store that cannot be opened (here: inside the workspace) leaves reads
// alone and refuses each call that needs a checkpoint, saying why.
func TestAppCheckpointStoreRefused(t *testing.T) {
	t.Parallel()
	a, _ := testApp(t, yolo(), func(o *Options) { o.StateDir = filepath.Join(o.Flags.Workspace, ".state") })
	if res := a.Engine().Call(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`)); !res.Success {
		t.Fatalf("read: %+v", res)
	}
	res := a.Engine().Call(t.Context(), "write_file", json.RawMessage(`{"path":"a.txt","content":"x"}`))
	if res.Success || !strings.Contains(res.Error, "reachable from the workspace") || !strings.Contains(res.Error, "enabled = false") {
		t.Fatalf("write with an exposed store: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(a.Workspace(), "a.txt")); string(b) != "alpha\n" {
		t.Error("the write ran without a checkpoint")
	}
}

// An interrupted undo is reported when warden starts, and blocks changes.
func TestAppReportsInterruptedUndo(t *testing.T) {
	t.Parallel()
	a, dir := testApp(t, yolo(), nil)
	a.Engine().Call(t.Context(), "write_file", json.RawMessage(`{"path":"a.txt","content":"x"}`))
	c, _ := a.Checkpoints().Latest()
	journal := `{"version":1,"target":"` + c.ID + `","before":"` + c.ID + `","digest":"d","ops":1,"started":"2026-01-02T03:04:05Z","pid":1}`
	if err := os.WriteFile(filepath.Join(a.Checkpoints().Dir(), "undo.json"), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	again, err := New(context.Background(), Options{Config: yolo(), Flags: Flags{Workspace: a.Workspace()}, DB: filepath.Join(dir, "warden.db"),
		StateDir: filepath.Join(dir, "state"), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !strings.Contains(log.String(), "an undo to checkpoint "+c.ID+" was interrupted") || !strings.Contains(log.String(), "warden undo --resume") {
		t.Errorf("start log:\n%s", log.String())
	}
	res := again.Engine().Call(t.Context(), "write_file", json.RawMessage(`{"path":"a.txt","content":"y"}`))
	if res.Success || !strings.Contains(res.Error, "warden undo --resume") {
		t.Errorf("write with an undo pending: %+v", res)
	}
	if _, err := again.Checkpoints().Checkpoint(t.Context(), checkpoint.Call{}); !errors.Is(err, checkpoint.ErrUndoPending) {
		t.Errorf("checkpoint with an undo pending: %v", err)
	}
}
