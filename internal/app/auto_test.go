package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/testenv"
)

// The auto mode against real jails: each kind of call with the jail up,
// with no jail, with the jail configured but bubblewrap missing, with a
// jail that does not come up (the worker is not warden), with the jail's
// network shared with the host, and with checkpoints off. Without a
// working jail auto is exactly confirm-sensitive.
func TestAutoMode(t *testing.T) {
	testenv.Need(t, "bwrap")
	t.Parallel()
	calls := []struct{ name, tool, args string }{
		{"read", "read_file", `{"path":"a.txt"}`},
		{"write", "write_file", `{"path":"b.txt","content":"b"}`},
		{"edit", "edit_file", `{"path":"a.txt","old_str":"alpha","new_str":"beta"}`},
		{"masked write", "write_file", `{"path":".env","content":"x"}`},
		{"safe", "run_command", `{"command":"ls"}`},
		{"dev", "run_command", `{"command":"touch c.txt"}`},
		{"dangerous", "run_command", `{"command":"rm -rf build && sh ./script.sh"}`},
		{"blocked", "run_command", `{"command":"rm -rf /"}`},
		{"http", "http_request", `{"url":"https://example.com/"}`},
	}
	const A, Q, D = engine.Allow, engine.Ask, engine.Deny
	type state struct {
		name    string
		sandbox bool
		mod     func(cfg *config.Config)
		jail    func(a *App)
		want    map[string]string
		note    string
	}
	asSensitive := map[string]string{"read": A, "write": Q, "edit": Q, "masked write": D, "safe": A, "dev": Q, "dangerous": Q, "blocked": D, "http": Q}
	// A jail that cannot start also fails the file tools' guards, which
	// resolve paths in the jail: refused, never run on the host.
	brokenJail := map[string]string{"read": A, "write": D, "edit": D, "masked write": D, "safe": A, "dev": Q, "dangerous": Q, "blocked": D, "http": Q}
	states := []state{
		{"jail up", true, nil, nil,
			map[string]string{"read": A, "write": A, "edit": A, "masked write": D, "safe": A, "dev": A, "dangerous": A, "blocked": D, "http": Q},
			"jail healthy (local backend, seccomp filter"},
		{"no jail", false, nil, nil, asSensitive, "no working jail (the workspace has no [sandbox])"},
		{"bubblewrap missing", true, nil, func(a *App) { a.jailOpts.Bwrap = "/nonexistent/bwrap" }, brokenJail, "no working jail (the jail does not start"},
		{"jail does not come up", true, nil, func(a *App) { a.jailOpts.Executable = "/bin/true" }, brokenJail, "no working jail (the jail does not start"},
		{"network allowlist", true, func(c *config.Config) { c.Sandbox.NetworkMode = config.NetworkAllowlist }, nil,
			map[string]string{"read": A, "write": A, "edit": A, "masked write": D, "safe": A, "dev": A, "dangerous": A, "blocked": D, "http": Q},
			"jail healthy"},
		{"network shared", true, func(c *config.Config) { c.Sandbox.NetworkMode, c.Sandbox.Network = config.NetworkHost, true }, nil,
			map[string]string{"read": A, "write": A, "edit": A, "masked write": D, "safe": A, "dev": Q, "dangerous": Q, "blocked": D, "http": Q},
			"the jail shares the host network"},
		{"checkpoints off", true, func(c *config.Config) { c.Checkpoints.Enabled = false }, nil,
			map[string]string{"read": A, "write": A, "edit": A, "masked write": D, "safe": A, "dev": A, "dangerous": Q, "blocked": D, "http": Q},
			"runs unasked only with checkpoints on"},
	}
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Default()
			cfg.Security.ConfirmMode = config.ModeAuto
			if st.sandbox {
				cfg.Sandbox = &config.Sandbox{Enabled: true, Backend: "local", Landlock: "auto", IdleTimeout: 60}
			}
			if st.mod != nil {
				st.mod(cfg)
			}
			a, _ := testApp(t, cfg, nil)
			if st.jail != nil {
				st.jail(a)
			}
			notes := ""
			for _, c := range calls {
				d := a.Engine().Decide(t.Context(), c.tool, json.RawMessage(c.args))
				if d.Decision != st.want[c.name] {
					t.Errorf("%s: %s (%s; %s), want %s", c.name, d.Decision, d.Reason, d.Auto, st.want[c.name])
				}
				notes += d.Auto + "\n"
			}
			if !strings.Contains(notes, st.note) {
				t.Errorf("explain does not say %q:\n%s", st.note, notes)
			}
			rows, err := a.Store().Audit(t.Context(), store.AuditFilter{Event: "auto_mode"})
			if err != nil || len(rows) != 1 {
				for _, r := range rows {
					t.Log(r.Record.Reason)
				}
				t.Fatalf("auto_mode audit rows: %d %v", len(rows), err)
			}
			if st.want["dangerous"] == A {
				// It runs, in the jail, after a checkpoint.
				os.MkdirAll(filepath.Join(a.Workspace(), "build"), 0o755)
				os.WriteFile(filepath.Join(a.Workspace(), "script.sh"), []byte("echo ran-in-jail\n"), 0o644)
				res := a.Engine().Call(t.Context(), "run_command", json.RawMessage(`{"command":"rm -rf build && sh ./script.sh"}`))
				if !res.Success || !strings.Contains(res.Output, "ran-in-jail") || !strings.Contains(res.Output, "undo") {
					t.Fatalf("dangerous call: %+v", res)
				}
				if _, err := os.Stat(filepath.Join(a.Workspace(), "build")); err == nil {
					t.Error("build was not removed")
				}
			}
		})
	}
}
