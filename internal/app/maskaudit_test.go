package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/testenv"
)

// A masked file the host replaces through a rename while the workspace's
// jail runs is masked again there, and the audit trail says so: which
// path, and for how long the jail could see the new file.
func TestMaskRestoredIsAudited(t *testing.T) {
	testenv.Need(t, "bwrap", "nsenter")
	t.Parallel()
	cfg := config.Default()
	cfg.Sandbox = &config.Sandbox{Enabled: true, Backend: "local", Landlock: "auto", IdleTimeout: 60}
	a, _ := testApp(t, cfg, nil)
	ws := a.root.Dir()
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("OLD=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The jail starts with the first call.
	if res := a.Engine().Call(t.Context(), "run_command", json.RawMessage(`{"command":"ls -a"}`)); !res.Success {
		t.Fatalf("ls: %+v", res)
	}
	// An editor's save: a new file renamed over the masked one.
	tmp := filepath.Join(ws, ".env.tmp")
	if err := os.WriteFile(tmp, []byte("NEW_SECRET=2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(ws, ".env")); err != nil {
		t.Fatal(err)
	}
	var rows []*store.AuditRow
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if rows, err = a.store.Audit(t.Context(), store.AuditFilter{Event: "sandbox_mask"}); err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			break
		}
	}
	if len(rows) == 0 {
		t.Fatal("no sandbox_mask row after the host replaced .env")
	}
	r := rows[0].Record
	t.Logf("audit: %s %s %.2f ms", r.Args, r.Reason, r.Duration)
	if r.Workspace != ws || !strings.Contains(string(r.Args), `"path":".env"`) || r.Reason != "remasked" || !r.Success {
		t.Errorf("row %+v", r)
	}
	// And the jail does not see the new secret (asked of the worker
	// directly: the judge would refuse a command naming .env).
	res, err := a.jail.Runner(a.jailOpts).Run(t.Context(), command.Spec{Argv: []string{"cat", ".env"}, Timeout: 10 * time.Second})
	t.Logf("cat .env in the jail: exit %d %q", res.ExitCode, res.Output)
	if err != nil || strings.Contains(res.Output, "NEW_SECRET") || strings.Contains(res.Output, "OLD") {
		t.Errorf("the jail reads .env: %q %v", res.Output, err)
	}
}
