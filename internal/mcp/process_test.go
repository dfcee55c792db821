package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/sandbox/jailworker"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/testenv"
)

var (
	wardenOnce sync.Once
	wardenBin  string
	wardenErr  error
)

// warden builds the warden binary once for the tests that run it.
func warden(t testing.TB) string {
	t.Helper()
	wardenOnce.Do(func() {
		dir, err := os.MkdirTemp("", "warden-mcp-test-")
		if err != nil {
			wardenErr = err
			return
		}
		wardenBin = filepath.Join(dir, "warden")
		out, err := exec.Command("go", "build", "-o", wardenBin, "github.com/wardenhq/warden/cmd/warden").CombinedOutput()
		if err != nil {
			wardenErr = err
			wardenBin = string(out)
		}
	})
	if wardenErr != nil {
		t.Fatalf("building warden: %v\n%s", wardenErr, wardenBin)
	}
	return wardenBin
}

// TestMain doubles as `warden worker` for the jails the tests start (they
// re-execute this test binary, bound at jail.JailExe).
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "worker" && os.Args[2] == "--spec" {
		if err := jailworker.Serve(context.Background(), os.Args[3], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if wardenBin != "" && wardenErr == nil {
		os.RemoveAll(filepath.Dir(wardenBin))
	}
	if jailServerPath != "" {
		os.RemoveAll(filepath.Dir(jailServerPath))
	}
	os.Exit(code)
}

// home is a private user config, state and workspace for a warden process.
type home struct {
	ws, db string
	env    []string
}

func newHome(t testing.TB, userConfig string) *home {
	t.Helper()
	d := t.TempDir()
	h := &home{ws: filepath.Join(d, "ws"), db: filepath.Join(d, "state", "warden", "warden.db")}
	for _, sub := range []string{"ws", "config/warden", "state", "home"} {
		os.MkdirAll(filepath.Join(d, sub), 0o700)
	}
	os.WriteFile(filepath.Join(d, "config/warden/config.toml"), []byte(userConfig), 0o600)
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("alpha\n"), 0o644)
	h.env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(d, "config"), "XDG_STATE_HOME="+filepath.Join(d, "state"),
		"HOME="+filepath.Join(d, "home"), "WARDEN_DB=", "WARDEN_SUPERVISOR=", "WARDEN_LOG=")
	return h
}

func (h *home) mcp(t *testing.T, co *sdk.ClientOptions, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(warden(t), append([]string{"mcp", "--workspace", h.ws}, args...)...)
	cmd.Env = h.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, co).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("warden mcp: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

const supervised = `
[security.approval]
notify_channel = "api"
supervisors = [{id = "alice", token_env = "ALICE_TOKEN"}]
`

// `warden mcp` as a subprocess: tools, calls, refusals, and a supervised
// call approved from another process through the store.
func TestProcessStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	t.Parallel()
	h := newHome(t, supervised)
	cs := h.mcp(t, nil)
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(lt.Tools) < 10 {
		t.Fatalf("tools: %v %v", lt, err)
	}
	if res := call(t, cs, "read_file", `{"path":"a.txt"}`); res.IsError || !strings.Contains(text(res), "alpha") {
		t.Fatalf("read_file: %q", text(res))
	}
	if res := call(t, cs, "read_file", `{"path":"../../etc/passwd"}`); !res.IsError || !strings.Contains(text(res), "escapes the workspace") {
		t.Fatalf("escape: %q", text(res))
	}

	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "b.txt", "content": "beta\n"}})
		done <- res
	}()
	st, err := store.OpenSQLite(h.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := waitPending(t, st)
	if a.Tool != "write_file" || !strings.HasPrefix(a.Session, "mcp-") {
		t.Fatalf("request %+v", a)
	}
	approve := exec.Command(warden(t), "approvals", "approve", a.ID, "--as", "alice")
	approve.Env = append(h.env, "ALICE_TOKEN=alice-token-0123456789") // deciding needs the supervisor's token
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("warden approvals approve: %v\n%s", err, out)
	}
	select {
	case res := <-done:
		if res == nil || res.IsError {
			t.Fatalf("approved call: %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call never returned")
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "b.txt")); string(b) != "beta\n" {
		t.Fatalf("b.txt = %q", b)
	}
	waitState(t, st, a.ID, store.Executed)
}

// Elicitation through a real `warden mcp`: decline refuses, accept runs.
func TestProcessElicitation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	t.Parallel()
	h := newHome(t, "")
	var mu sync.Mutex
	answer := "decline"
	co := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if answer == "decline" {
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve"}}, nil
	}}
	cs := h.mcp(t, co)
	if res := call(t, cs, "run_command", `{"command":"touch made"}`); !res.IsError || !strings.Contains(text(res), "declined") {
		t.Fatalf("declined: %q", text(res))
	}
	if _, err := os.Stat(filepath.Join(h.ws, "made")); err == nil {
		t.Fatal("declined command ran")
	}
	mu.Lock()
	answer = "accept"
	mu.Unlock()
	if res := call(t, cs, "run_command", `{"command":"touch made"}`); res.IsError {
		t.Fatalf("accepted: %q", text(res))
	}
	if _, err := os.Stat(filepath.Join(h.ws, "made")); err != nil {
		t.Fatal("accepted command did not run")
	}
	// --no-elicit: the same client is not asked, and nobody else can be.
	cs2 := h.mcp(t, co, "--no-elicit")
	if res := call(t, cs2, "run_command", `{"command":"touch other"}`); !res.IsError || !strings.Contains(text(res), "no channel can reach") {
		t.Fatalf("--no-elicit: %q", text(res))
	}
}

// Cancelling a waiting call through a real `warden mcp` (the client gave
// up) leaves its request pending; a person approves it with `warden
// approvals approve`, and the same call made again runs once.
func TestProcessCancelKeepsRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	t.Parallel()
	h := newHome(t, supervised)
	cs := h.mcp(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	args := map[string]any{"path": "c.txt", "content": "c"}
	go cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: args})
	st, err := store.OpenSQLite(h.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := waitPending(t, st)
	cancel()
	time.Sleep(300 * time.Millisecond)
	if cur, _ := st.Get(t.Context(), a.ID); cur.State != store.Pending || cur.Owner != store.Unowned {
		t.Fatalf("after the cancel: %s owned by %+v, want PENDING and unowned", cur.State, cur.Owner)
	}
	approve := exec.Command(warden(t), "approvals", "approve", a.ID, "--as", "alice")
	approve.Env = append(h.env, "ALICE_TOKEN=alice-token-0123456789") // deciding needs the supervisor's token
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("warden approvals approve: %v\n%s", err, out)
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "write_file", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("the same call again: %v %q", err, text(res))
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "c.txt")); string(b) != "c" {
		t.Fatalf("c.txt = %q", b)
	}
	waitState(t, st, a.ID, store.Executed)
}

// `warden mcp` with mcp_wait_secs: a call answers within the wait with
// the request id; approved from another process, the same call runs.
func TestProcessWaitAnswersBeforeClientTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	t.Parallel()
	h := newHome(t, supervised+"mcp_wait_secs = 1\n")
	cs := h.mcp(t, nil)
	args := `{"command":"echo x >> once.txt"}`
	res := call(t, cs, "run_command", args)
	st, err := store.OpenSQLite(h.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := waitPending(t, st)
	if !res.IsError || !strings.Contains(text(res), a.ID) || !strings.Contains(text(res), "same call again") {
		t.Fatalf("pending answer: %q", text(res))
	}
	approve := exec.Command(warden(t), "approvals", "approve", a.ID, "--as", "alice")
	approve.Env = append(h.env, "ALICE_TOKEN=alice-token-0123456789") // deciding needs the supervisor's token
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("warden approvals approve: %v\n%s", err, out)
	}
	if res := call(t, cs, "run_command", args); res.IsError {
		t.Fatalf("after approval: %q", text(res))
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "once.txt")); string(b) != "x\n" {
		t.Fatalf("once.txt = %q", b)
	}
}

// inspectorVersion is the MCP Inspector the interop test runs; it is
// installed by scripts/test-deps (npm install -g), so the test runs offline.
const inspectorVersion = "0.17.5"

// Interop with an MCP client warden did not write: the MCP Inspector CLI.
func TestInspectorCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MCP Inspector")
	}
	inspector := testenv.Look("mcp-inspector")
	if inspector == "" {
		testenv.Skip(t, "the MCP Inspector is not installed (scripts/test-deps: npm install -g @modelcontextprotocol/inspector@%s)", inspectorVersion)
	}
	if v := inspectorInstalled(inspector); v != inspectorVersion {
		t.Logf("testing against MCP Inspector %q; scripts/test-deps pins %s", v, inspectorVersion)
	}
	h := newHome(t, "")
	run := func(args ...string) (string, error) { return inspect(t, inspector, h, args...) }
	out, err := run("--method", "tools/list")
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			Annotations map[string]any `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tools) < 10 {
		t.Fatalf("tools/list output: %v\n%s", err, out)
	}
	out, err = run("--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=a.txt")
	if err != nil || !strings.Contains(out, "alpha") {
		t.Fatalf("tools/call read_file: %v\n%s", err, out)
	}
	out, _ = run("--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=../x")
	if !strings.Contains(out, `"isError": true`) || !strings.Contains(out, "escapes the workspace") {
		t.Fatalf("tools/call refusal:\n%s", out)
	}

	// A supervised call answers the Inspector within mcp_wait_secs, long
	// before the client's own timeout (it died at 62 s waiting for the
	// approval's 300 s), and the request outlives the process.
	hs := newHome(t, supervised+"mcp_wait_secs = 2\n")
	start := time.Now()
	out, _ = inspect(t, inspector, hs, "--method", "tools/call", "--tool-name", "write_file", "--tool-arg", "path=i.txt", "--tool-arg", "content=i")
	st, err := store.OpenSQLite(hs.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := waitPending(t, st)
	if !strings.Contains(out, a.ID) || !strings.Contains(out, "has been asked") || time.Since(start) > 50*time.Second {
		t.Fatalf("supervised call through the Inspector (%s):\n%s", time.Since(start), out)
	}
	if cur, _ := st.Get(t.Context(), a.ID); cur.State != store.Pending || cur.Owner != store.Unowned {
		t.Fatalf("after the Inspector exited: %s owned by %+v", cur.State, cur.Owner)
	}
}

// inspect runs the MCP Inspector CLI on `warden mcp` in h.
func inspect(t *testing.T, inspector string, h *home, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := []string{"--cli", warden(t), "mcp", "--workspace", h.ws}
	cmd := exec.CommandContext(ctx, inspector, append(base, args...)...)
	cmd.Env = h.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// inspectorInstalled is the version of the MCP Inspector whose command is
// at path (npm's bin link into its package), or "" when it cannot tell.
func inspectorInstalled(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	// .../node_modules/@modelcontextprotocol/inspector/cli/build/cli.js
	pkg := filepath.Join(filepath.Dir(real), "..", "..", "package.json")
	b, err := os.ReadFile(pkg)
	if err != nil {
		return ""
	}
	var p struct {
		Name, Version string
	}
	if json.Unmarshal(b, &p) != nil || p.Name != "@modelcontextprotocol/inspector" {
		return ""
	}
	return p.Version
}
