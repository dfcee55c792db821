package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

const approvalsChildEnv = "WARDEN_TEST_APPROVALS_CHILD_DB"

// TestApprovalsChild is the waiting process of TestApprovalsTwoProcesses:
// it asks through the broker the CLI builds and prints the outcome.
func TestApprovalsChild(t *testing.T) {
	db := os.Getenv(approvalsChildEnv)
	if db == "" {
		t.Skip("run by TestApprovalsTwoProcesses")
	}
	cfg := config.Default()
	cfg.Security.Approval.NotifyChannel = "api"
	cfg.Security.Approval.Supervisors = []config.Supervisor{{ID: "alice"}}
	st, err := app.OpenStore(db, config.Store{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, closeFn, err := app.TerminalApprover(context.Background(), cfg, st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	out, err := b.Ask(context.Background(), &approval.Request{Tool: "run_command", Args: json.RawMessage(`{"command":"make test"}`), Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

// One process waits for approval; another approves it through the CLI.
func TestApprovalsTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "warden.db")
	cfgFile := filepath.Join(dir, "warden.toml")
	os.WriteFile(cfgFile, []byte("[security.approval]\nsupervisors = [{id = \"alice\", token_env = \"ALICE_TOKEN\"}]\n"), 0o600)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("WARDEN_SUPERVISOR", "")
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789")

	var childOut bytes.Buffer
	child := exec.Command(os.Args[0], "-test.run=^TestApprovalsChild$", "-test.v")
	child.Env = append(os.Environ(), approvalsChildEnv+"="+db)
	child.Stdout = &childOut
	child.Stderr = &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()

	st, err := store.OpenSQLite(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var id string
	for deadline := time.Now().Add(30 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if l, _ := st.List(t.Context(), store.Filter{State: store.Pending}); len(l) == 1 {
			id = l[0].ID
		}
	}
	if id == "" {
		t.Fatalf("the child never asked:\n%s", childOut.String())
	}

	cli := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		root := newRootCmd(&stdout, &stderr)
		root.SetArgs(append([]string{"--config", cfgFile}, args...))
		err := root.Execute()
		return stdout.String(), stderr.String(), err
	}
	if _, _, err := cli("approvals", "approve", id, "--db", db, "--as", "mallory"); err == nil {
		t.Fatal("mallory approved")
	}
	start := time.Now()
	stdout, stderr, err := cli("approvals", "approve", id, "--db", db, "--as", "alice", "--reason", "ship it")
	if err != nil {
		t.Fatalf("approve: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, id+" APPROVED by alice") {
		t.Errorf("approve said %q", stdout)
	}
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, childOut.String())
	}
	t.Logf("the waiting process ended %s after the CLI approved", time.Since(start))
	if !strings.Contains(childOut.String(), `"Approved":true`) || !strings.Contains(childOut.String(), `"By":"alice"`) {
		t.Fatalf("child outcome:\n%s", childOut.String())
	}
	if _, _, err := cli("approvals", "deny", id, "--db", db, "--as", "alice", "--reason", "too late"); err == nil || !strings.Contains(err.Error(), "already APPROVED") {
		t.Errorf("late denial: %v", err)
	}
	stdout, _, err = cli("audit", "verify", "--db", db)
	if err != nil || !strings.Contains(stdout, "audit chain intact") {
		t.Errorf("audit verify: %v %s", err, stdout)
	}
	st.DB().Exec("UPDATE audit SET record = replace(record, 'alice', 'bob') WHERE event = 'approval'")
	if _, _, err := cli("audit", "verify", "--db", db); err == nil || !strings.Contains(err.Error(), "audit chain broken at row") {
		t.Errorf("tampered chain: %v", err)
	}
}

// A supervisor grants a call from the CLI; the identical call in that
// session then runs without asking, until the grant is revoked.
func TestApprovalsGrantCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "warden.db")
	cfgFile := filepath.Join(dir, "warden.toml")
	os.WriteFile(cfgFile, []byte("[security.approval]\ngrant_max_minutes = 30\n"+
		"supervisors = [{id = \"alice\", token_env = \"ALICE_TOKEN\"}, {id = \"bob\", token_env = \"BOB_TOKEN\"}]\n"), 0o600)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("WARDEN_SUPERVISOR", "")
	t.Setenv("ALICE_TOKEN", "alice-token-0123456789")
	t.Setenv("BOB_TOKEN", "bob-token-0123456789")
	st, err := app.OpenStore(db, config.Store{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := approval.New(t.Context(), approval.Options{Store: st, Supervisors: []string{"alice", "bob"}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	req := &approval.Request{Tool: "run_command", Args: json.RawMessage(`{"command":"make test"}`), Workspace: "/w", Session: "s1"}
	type result struct {
		out approval.Outcome
		err error
	}
	asked := func() (chan result, string) {
		ch := make(chan result, 1)
		go func() {
			out, err := b.Ask(context.Background(), req)
			ch <- result{out, err}
		}()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if l, _ := st.List(t.Context(), store.Filter{State: store.Pending}); len(l) == 1 {
				return ch, l[0].ID
			}
		}
		t.Fatal("no pending request")
		return nil, ""
	}
	cli := func(args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		root := newRootCmd(&stdout, &stderr)
		root.SetArgs(append([]string{"--config", cfgFile}, append(args, "--db", db)...))
		err := root.Execute()
		return stdout.String() + stderr.String(), err
	}

	ch, id := asked()
	var ee *exitError
	if out, err := cli("approvals", "approve", id, "--as", "alice", "--grant", "0s"); !errors.As(err, &ee) || ee.code != exitUsage {
		t.Errorf("--grant 0s: %v %s", err, out)
	}
	if out, err := cli("approvals", "approve", id, "--as", "mallory", "--grant", "10m"); err == nil || !strings.Contains(err.Error(), "not a configured supervisor") {
		t.Errorf("mallory's grant: %v %s", err, out)
	}
	out, err := cli("approvals", "approve", id, "--as", "alice", "--grant", "2h")
	if err != nil {
		t.Fatalf("approve --grant: %v %s", err, out)
	}
	if !strings.Contains(out, id+" APPROVED by alice") || !strings.Contains(out, "runs without asking until") {
		t.Errorf("approve --grant said %q", out)
	}
	if r := <-ch; r.err != nil || !r.out.Approved {
		t.Fatalf("granted request: %+v %v", r.out, r.err)
	}
	gs, _ := st.ListGrants(t.Context(), store.GrantFilter{})
	if len(gs) != 1 || gs[0].ExpiresAt.Sub(gs[0].CreatedAt) != 30*time.Minute {
		t.Fatalf("grants %+v (want one, capped at 30m)", gs)
	}
	gid := gs[0].ID

	out2, err := b.Ask(t.Context(), req)
	if err != nil || !out2.Approved || out2.Grant != gid || out2.By != "alice" {
		t.Fatalf("identical call under the grant: %+v %v", out2, err)
	}
	out, err = cli("approvals", "grants")
	if err != nil || !strings.Contains(out, gid) || !strings.Contains(out, "active") {
		t.Errorf("grants: %v %s", err, out)
	}
	out, err = cli("--json", "approvals", "grants")
	var listed []store.Grant
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].Uses != 1 {
		t.Errorf("grants --json: %v %s", err, out)
	}
	if out, err = cli("approvals", "revoke", gid, "--as", "bob"); err != nil || !strings.Contains(out, "revoked by bob") {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if out, err = cli("approvals", "revoke", gid, "--as", "alice"); err == nil || !strings.Contains(err.Error(), "already revoked (by bob)") {
		t.Errorf("second revoke: %v %s", err, out)
	}
	if out, err = cli("approvals", "grants", "--all"); err != nil || !strings.Contains(out, "revoked by bob") {
		t.Errorf("grants --all: %v %s", err, out)
	}

	// Revoked: the identical call is asked again.
	ch, id = asked()
	if out, err := cli("approvals", "deny", id, "--as", "bob", "--reason", "enough"); err != nil {
		t.Fatalf("deny: %v %s", err, out)
	}
	if r := <-ch; r.out.Approved || r.out.Reason != "enough" {
		t.Fatalf("after revoke: %+v %v", r.out, r.err)
	}
	if out, err := cli("audit", "verify"); err != nil || !strings.Contains(out, "audit chain intact") {
		t.Errorf("audit verify: %v %s", err, out)
	}
}
