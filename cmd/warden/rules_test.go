package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// wardenIn runs warden in this process and returns its stdout.
func wardenIn(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		t.Logf("warden %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

// pendingIn waits for the one pending request and returns its id.
func pendingIn(t *testing.T, ws string) string {
	t.Helper()
	for range 200 {
		out, err := wardenIn(t, "--workspace", ws, "--json", "approvals", "list", "--status", "pending")
		if err != nil {
			t.Fatal(err)
		}
		var l []*store.Approval
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 {
			return l[0].ID
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no pending request")
	return ""
}

// "always" from another process, end to end: a one-shot `warden tool call`
// waits for a person; `warden approvals approve --always` approves it and
// writes the narrow rule into the user config (not the workspace file);
// the next `warden tool call` process runs the same call unasked, a longer
// one is still asked; `warden rules list` shows the rule and `warden rules
// remove` takes it back; creation and removal are audited.
func TestAlwaysAcrossProcesses(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(home, ".config", "warden")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	userCfg := filepath.Join(cfgDir, "config.toml")
	const base = "[security.approval]\nsupervisors = [{id = \"alice\", token_env = \"ALICE_TOKEN\"}]\nnotify_channel = \"api\"\ntimeout_secs = 60\n"
	if err := os.WriteFile(userCfg, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	wsFile := filepath.Join(ws, "warden.toml")
	if err := os.WriteFile(wsFile, []byte("[commands]\nmax_output_lines = 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	t.Setenv("HOME", home)
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789")
	t.Setenv("WARDEN_DB", "")

	bin := filepath.Join(t.TempDir(), "warden")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	call := func(ctx context.Context, command string) *exec.Cmd {
		c := exec.CommandContext(ctx, bin, "--workspace", ws, "tool", "call", "run_command", "--args", `{"command":"`+command+`"}`)
		c.Stdin = nil
		return c
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	waiting := call(ctx, "touch made.txt")
	var wout bytes.Buffer
	waiting.Stdout = &wout
	if err := waiting.Start(); err != nil {
		t.Fatal(err)
	}
	id := pendingIn(t, ws)
	out, err := wardenIn(t, "approvals", "approve", id, "--as", "alice", "--always")
	if err != nil || !strings.Contains(out, "rule always-") || !strings.Contains(out, "allow command touch made.txt (exactly)") {
		t.Fatalf("approve --always: %v\n%s", err, out)
	}
	if err := waiting.Wait(); err != nil || !strings.Contains(wout.String(), `"success":true`) {
		t.Fatalf("the waiting call: %v %s", err, wout.String())
	}

	rs, err := config.FileRules(userCfg)
	if err != nil || len(rs) != 1 || rs[0].Workspace != ws || rs[0].RequestID != id {
		t.Fatalf("user config rules %+v %v", rs, err)
	}
	if data, _ := os.ReadFile(wsFile); string(data) != "[commands]\nmax_output_lines = 100\n" {
		t.Fatalf("the workspace file changed:\n%s", data)
	}

	// A new process: the same call runs unasked (no person is reachable
	// quickly: a call that asked would wait the whole timeout).
	again := call(ctx, "touch made.txt")
	if out, err := again.Output(); err != nil || !strings.Contains(string(out), `"success":true`) {
		t.Fatalf("the same call in a new process: %v %s", err, out)
	}
	out, _ = wardenIn(t, "--workspace", ws, "--json", "explain", "--", "touch made.txt --no-create")
	if !strings.Contains(out, `"decision": "ask"`) {
		t.Fatalf("a longer call is not asked:\n%s", out)
	}
	out, _ = wardenIn(t, "--workspace", ws, "--json", "explain", "--", "touch made.txt")
	if !strings.Contains(out, `"decision": "allow"`) || !strings.Contains(out, `"decided_by": "rules:`+rs[0].ID+`"`) {
		t.Fatalf("explain does not show the rule:\n%s", out)
	}
	// In another workspace the rule does not hold.
	other := filepath.Join(home, "other")
	os.MkdirAll(other, 0o755)
	out, _ = wardenIn(t, "--workspace", other, "--json", "explain", "--", "touch made.txt")
	if !strings.Contains(out, `"decision": "ask"`) {
		t.Fatalf("the rule holds in another workspace:\n%s", out)
	}

	out, err = wardenIn(t, "--workspace", ws, "rules", "list")
	if err != nil || !strings.Contains(out, rs[0].ID) || !strings.Contains(out, "allow command touch made.txt (exactly)") {
		t.Fatalf("rules list: %v\n%s", err, out)
	}
	out, err = wardenIn(t, "--workspace", ws, "rules", "show", rs[0].ID)
	if err != nil || !strings.Contains(out, "request_id: "+id) {
		t.Fatalf("rules show: %v\n%s", err, out)
	}
	if out, err = wardenIn(t, "--workspace", ws, "rules", "remove", rs[0].ID); err != nil || !strings.Contains(out, "removed") {
		t.Fatalf("rules remove: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(userCfg); string(data) != base {
		t.Fatalf("the user config is not back to what it was:\n%s", data)
	}
	out, _ = wardenIn(t, "--workspace", ws, "--json", "explain", "--", "touch made.txt")
	if !strings.Contains(out, `"decision": "ask"`) {
		t.Fatalf("a removed rule still holds:\n%s", out)
	}
	// A grant for the workspace and agent holds across processes too
	// (each warden tool call is a session of its own).
	waiting = call(ctx, "touch granted.txt")
	wout.Reset()
	waiting.Stdout = &wout
	if err := waiting.Start(); err != nil {
		t.Fatal(err)
	}
	id = pendingIn(t, ws)
	out, err = wardenIn(t, "approvals", "approve", id, "--as", "alice", "--grant", "10m", "--grant-scope", "workspace")
	if err != nil || !strings.Contains(out, "by agent build in workspace "+ws+", in any session") {
		t.Fatalf("approve --grant-scope workspace: %v\n%s", err, out)
	}
	if err := waiting.Wait(); err != nil {
		t.Fatalf("the waiting call: %v %s", err, wout.String())
	}
	if out, err := call(ctx, "touch granted.txt").Output(); err != nil || !strings.Contains(string(out), `"success":true`) {
		t.Fatalf("the granted call in a new process: %v %s", err, out)
	}
	out, _ = wardenIn(t, "approvals", "grants")
	if !strings.Contains(out, "any (agent build)") {
		t.Fatalf("grants list:\n%s", out)
	}

	out, err = wardenIn(t, "audit", "tail", "-n", "50")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{`"event":"rule_created"`, `"event":"rule_removed"`, `"rule":"rules:` + rs[0].ID + `"`} {
		if !strings.Contains(out, ev) {
			t.Errorf("the audit trail lacks %s", ev)
		}
	}
}
