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

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
)

// testApp is an App on a fresh workspace holding a.txt, its database and
// --log-file in the test's temporary directory.
func testApp(t *testing.T, cfg *config.Config, mod func(*Options)) (*App, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	o := Options{Config: cfg, Flags: Flags{Workspace: ws, LogFile: filepath.Join(dir, "log.jsonl")}, DB: filepath.Join(dir, "warden.db"), StateDir: filepath.Join(dir, "state")}
	if mod != nil {
		mod(&o)
	}
	a, err := New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, dir
}

// An App runs calls through the engine, confined to the workspace, and
// records each one in the store's chain and the --log-file, under its
// session; EngineFor records under another.
func TestAppRunsCallsAndAudits(t *testing.T) {
	t.Parallel()
	a, dir := testApp(t, config.Default(), func(o *Options) { o.Session = "s-main" })
	if res := a.Engine().Call(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`)); !res.Success || !strings.Contains(res.Output, "alpha") {
		t.Fatalf("read_file: %+v", res)
	}
	if res := a.Engine().Call(t.Context(), "read_file", json.RawMessage(`{"path":"../x"}`)); res.Success || !strings.Contains(res.Error, "escapes the workspace") {
		t.Fatalf("escape: %+v", res)
	}
	other, err := a.EngineFor("s-other")
	if err != nil {
		t.Fatal(err)
	}
	other.Call(t.Context(), "list_files", json.RawMessage(`{}`))
	rows, err := a.Store().Audit(t.Context(), store.AuditFilter{Event: "tool_call"})
	if err != nil {
		t.Fatal(err)
	}
	var sessions []string
	for _, r := range rows {
		sessions = append(sessions, r.Record.Session)
	}
	if strings.Join(sessions, ",") != "s-main,s-main,s-other" {
		t.Errorf("audited sessions %v", sessions)
	}
	log, err := os.ReadFile(filepath.Join(dir, "log.jsonl"))
	if err != nil || bytes.Count(log, []byte("\n")) < 3 || !bytes.Contains(log, []byte(`"s-other"`)) {
		t.Errorf("--log-file: %v\n%s", err, log)
	}
	if a.Sandboxed() || a.Workspace() != filepath.Join(dir, "ws") {
		t.Errorf("sandboxed %v, workspace %s", a.Sandboxed(), a.Workspace())
	}
}

// A supervised call with no terminal and no remote channel fails safe.
func TestAppNoChannelFailsSafe(t *testing.T) {
	t.Parallel()
	a, _ := testApp(t, config.Default(), nil)
	res := a.Engine().Call(t.Context(), "write_file", json.RawMessage(`{"path":"b.txt","content":"b"}`))
	if res.Success || !strings.Contains(res.Error, "no channel can reach") {
		t.Fatalf("write_file without a channel: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(a.Workspace(), "b.txt")); err == nil {
		t.Error("the refused write happened")
	}
}

// The options shape the engine: --no-commands, an agent's tool set, a
// registry of one's own, dry-run.
func TestAppOptions(t *testing.T) {
	t.Parallel()
	names := func(a *App) string {
		var n []string
		for _, t := range a.Engine().Tools() {
			n = append(n, t.Name)
		}
		return strings.Join(n, " ")
	}
	cfg := config.Default()
	cfg.Commands.Enabled = false // what --no-commands leaves after LoadConfig
	a, _ := testApp(t, cfg, nil)
	if strings.Contains(names(a), "run_command") {
		t.Errorf("commands disabled, tools: %s", names(a))
	}
	plan, _ := testApp(t, config.Default(), func(o *Options) { o.Agent = "plan" })
	if strings.Contains(names(plan), "write_file") || !strings.Contains(names(plan), "read_file") {
		t.Errorf("plan agent tools: %s", names(plan))
	}
	var closed bool
	own, _ := testApp(t, config.Default(), func(o *Options) {
		o.Registry = func(ctx context.Context, a *App) (*tools.Registry, func(), error) {
			if a.Workspace() == "" || a.Config() == nil {
				t.Error("the registry is built before the workspace")
			}
			r := tools.NewRegistry()
			r.Add(tools.ReadFile())
			return r, func() { closed = true }, nil
		}
	})
	if names(own) != "read_file" {
		t.Errorf("own registry: %s", names(own))
	}
	own.Close()
	if !closed {
		t.Error("the registry was not closed with the App")
	}
	dry, _ := testApp(t, config.Default(), func(o *Options) { o.DryRun = true; o.Config.Security.ConfirmMode = config.ModeYolo })
	if res := dry.Engine().Call(t.Context(), "write_file", json.RawMessage(`{"path":"c.txt","content":"c"}`)); !res.Success || !strings.Contains(res.Output, "DRY-RUN") {
		t.Errorf("dry run: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dry.Workspace(), "c.txt")); err == nil {
		t.Error("a dry run wrote the file")
	}
}

func TestAppErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := New(t.Context(), Options{Config: config.Default(), Agent: "nosuch", Flags: Flags{Workspace: dir}, DB: filepath.Join(dir, "db")})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "--agent: ") {
		t.Errorf("unknown agent: %v", err)
	}
	_, err = New(t.Context(), Options{Config: config.Default(), Flags: Flags{Workspace: filepath.Join(dir, "none")}, DB: filepath.Join(dir, "db")})
	if err == nil {
		t.Error("a missing workspace opened")
	}
	boom := errors.New("boom")
	_, err = New(t.Context(), Options{Config: config.Default(), Flags: Flags{Workspace: dir}, DB: filepath.Join(dir, "db"),
		Registry: func(context.Context, *App) (*tools.Registry, func(), error) { return nil, nil, boom }})
	if !errors.Is(err, boom) {
		t.Errorf("registry failure: %v", err)
	}
}

func TestJailOptions(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Security.Mask = []string{"secret/**"}
	cfg.Security.Protected = []string{"keep/**"}
	cfg.Commands.EnvAllowlist = []string{"LANG"}
	cfg.Sandbox = &config.Sandbox{Enabled: true, Invalid: `backend "nope" is unknown`}
	var logged bytes.Buffer
	o := JailOptions(cfg, "/w", slog.New(slog.NewTextHandler(&logged, nil)))
	if o.Workspace != "/w" || o.Mask[0] != "secret/**" || o.Protected[0] != "keep/**" || o.EnvAllowlist[0] != "LANG" || o.Sandbox.Invalid == "" {
		t.Errorf("options %+v", o)
	}
	if !strings.Contains(logged.String(), "running in lockdown") || !strings.Contains(logged.String(), "nope") {
		t.Errorf("an invalid [sandbox] section was not said loudly: %q", logged.String())
	}
}
