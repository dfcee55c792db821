package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/testenv"
)

var (
	jailServerOnce sync.Once
	jailServerPath string
	jailServerErr  error
)

// jailServer builds testdata/jailserver, a stdio MCP server made with the
// SDK, once; it lives outside every workspace (jails bind it read-only).
func jailServer(t testing.TB) string {
	t.Helper()
	jailServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "warden-jailserver-")
		if err != nil {
			jailServerErr = err
			return
		}
		jailServerPath = filepath.Join(dir, "jailserver")
		out, err := exec.Command("go", "build", "-o", jailServerPath, "./testdata/jailserver").CombinedOutput()
		if err != nil {
			jailServerErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if jailServerErr != nil {
		t.Fatalf("building the test MCP server: %v", jailServerErr)
	}
	return jailServerPath
}

// needJail skips without bubblewrap, or fails under WARDEN_REQUIRE_SANDBOX=1.
func needJail(t testing.TB) {
	t.Helper()
	testenv.Need(t, "bwrap")
}

// marker is a random argument the test finds the server's processes by.
func marker() string {
	var b [8]byte
	rand.Read(b[:])
	return "marker-" + hex.EncodeToString(b[:])
}

// markerPIDs lists the host processes whose command line holds m.
func markerPIDs(m string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(m)) {
			out = append(out, e.Name())
		}
	}
	return out
}

func waitNoMarker(t *testing.T, m string, within time.Duration) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = markerPIDs(m); len(left) == 0 {
			return
		}
	}
	t.Fatalf("the MCP server outlived warden: processes %v still run", left)
}

// jailFor returns the Jail of ClientOptions over a fresh Manager for ws.
func jailFor(t *testing.T, ws string, sb *config.Sandbox) func(ctx context.Context, argv []string) (*sandbox.Process, error) {
	t.Helper()
	needJail(t)
	m := sandbox.NewManager(nil)
	t.Cleanup(func() { m.Close() })
	opts := &sandbox.Options{Workspace: ws, Sandbox: sb, StartTimeout: 20 * time.Second}
	return func(ctx context.Context, argv []string) (*sandbox.Process, error) {
		return m.Spawn(ctx, opts, argv, "", nil)
	}
}

// A stdio MCP server upstream of a sandboxed workspace runs in the jail:
// its tools work through warden's engine, and what it can reach is the
// jail's, not the host's. The host run is the control: the same probes
// succeed there, so the test can fail.
func TestJailedStdioServer(t *testing.T) {
	t.Parallel()
	bin := jailServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	const secret = "SECRET_TOKEN=hunter2-do-not-leak"
	for _, tc := range []struct {
		name      string
		sb        *config.Sandbox // nil: on the host
		reachable bool            // host secrets and loopback reachable
	}{
		{"host", nil, true},
		{"jail", &config.Sandbox{Enabled: true, ROPaths: []string{filepath.Dir(bin)}}, false},
		{"lockdown", &config.Sandbox{Enabled: true, Lockdown: true, ROPaths: []string{filepath.Dir(bin)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			os.WriteFile(filepath.Join(ws, ".env"), []byte(secret+"\n"), 0o600)
			os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("plain notes\n"), 0o644)
			ws, _ = filepath.EvalSymlinks(ws)
			logs := &logBuf{}
			o := clientOpts(t, OpenPins(filepath.Join(t.TempDir(), PinsFile)), logs, nil)
			o.Dir = ws
			if tc.sb != nil {
				o.Sandboxed, o.Jail = true, jailFor(t, ws, tc.sb)
			}
			m := marker()
			r, err := Connect(t.Context(), config.MCPServer{Name: "up", Command: bin, Args: []string{m}}, o)
			if err != nil {
				t.Fatalf("Connect: %v\n%s", err, logs)
			}
			defer r.Close()
			var names []string
			for _, tl := range r.Tools() {
				names = append(names, tl.Name)
			}
			if got := strings.Join(names, ","); got != "mcp__up__dial,mcp__up__echo,mcp__up__mutate,mcp__up__read,mcp__up__whoami" {
				t.Fatalf("tools: %s", got)
			}
			f := newFixture(t, fixtureOpts{mode: config.ModeYolo, extra: r.Tools()})
			callOK := func(tool, args string) string {
				t.Helper()
				res := f.eng.Call(t.Context(), "mcp__up__"+tool, json.RawMessage(args))
				if !res.Success {
					t.Fatalf("%s %s: %s", tool, args, res.Error)
				}
				return res.Output
			}
			if out := callOK("echo", `{"text":"hi there"}`); !strings.Contains(out, "hi there") || !strings.Contains(out, "untrusted data") {
				t.Fatalf("echo: %q", out)
			}
			who := callOK("whoami", `{}`)
			if jailed := strings.Contains(who, "sandbox=1"); jailed == (tc.sb == nil) {
				t.Fatalf("whoami: %q (jailed %v)", who, tc.sb != nil)
			}
			if !strings.Contains(who, "cwd="+ws+"\n") {
				t.Errorf("the server does not run in the workspace: %q", who)
			}
			if out := callOK("read", `{"path":"`+filepath.Join(ws, "notes.txt")+`"}`); !strings.Contains(out, "plain notes") {
				t.Fatalf("workspace file: %q", out)
			}

			// The probes: a masked .env, /etc/shadow, a loopback port.
			env := f.eng.Call(t.Context(), "mcp__up__read", json.RawMessage(`{"path":"`+filepath.Join(ws, ".env")+`"}`))
			if leaked := strings.Contains(env.Output+env.Error, "hunter2"); leaked != tc.reachable {
				t.Errorf(".env read by the server: leaked=%v, want %v (%+v)", leaked, tc.reachable, env)
			}
			shadow := f.eng.Call(t.Context(), "mcp__up__read", json.RawMessage(`{"path":"/etc/shadow"}`))
			if shadow.Success != tc.reachable {
				t.Errorf("/etc/shadow read by the server: %v, want %v (%+v)", shadow.Success, tc.reachable, shadow)
			}
			dial := f.eng.Call(t.Context(), "mcp__up__dial", json.RawMessage(`{"addr":"`+ln.Addr().String()+`"}`))
			if dial.Success != tc.reachable {
				t.Errorf("host loopback port reached by the server: %v, want %v (%+v)", dial.Success, tc.reachable, dial)
			}

			if len(markerPIDs(m)) == 0 {
				t.Fatal("no server process found by its marker")
			}
			r.Close()
			waitNoMarker(t, m, 5*time.Second)
		})
	}
}

// A server that changes a tool after connect (tools/list_changed): the
// changed tool is refused, before any approval, until trusted; a tool added
// later is never offered; the others keep working.
func TestToolListChanged(t *testing.T) {
	t.Parallel()
	bin := jailServer(t)
	for _, jailed := range []bool{false, true} {
		t.Run(fmt.Sprintf("jailed=%v", jailed), func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			logs := &logBuf{}
			pinsPath := filepath.Join(t.TempDir(), PinsFile)
			o := clientOpts(t, OpenPins(pinsPath), logs, nil)
			o.Dir = ws
			if jailed {
				o.Sandboxed, o.Jail = true, jailFor(t, ws, &config.Sandbox{Enabled: true, ROPaths: []string{filepath.Dir(bin)}})
			}
			srv := config.MCPServer{Name: "up", Command: bin}
			r, err := Connect(t.Context(), srv, o)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			pinned, _ := os.ReadFile(pinsPath)
			f := newFixture(t, fixtureOpts{mode: config.ModeConfirmSensitive, approver: brokers(false, false), extra: r.Tools()})
			yolo := newFixture(t, fixtureOpts{mode: config.ModeYolo, extra: r.Tools()})
			if res := yolo.eng.Call(t.Context(), "mcp__up__echo", json.RawMessage(`{"text":"a"}`)); !res.Success {
				t.Fatalf("echo before the change: %+v", res)
			}
			if res := yolo.eng.Call(t.Context(), "mcp__up__mutate", json.RawMessage(`{}`)); !res.Success {
				t.Fatalf("mutate: %+v", res)
			}
			var res = yolo.eng.Call(t.Context(), "mcp__up__echo", json.RawMessage(`{"text":"b"}`))
			for deadline := time.Now().Add(10 * time.Second); res.Success && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				res = yolo.eng.Call(t.Context(), "mcp__up__echo", json.RawMessage(`{"text":"b"}`))
			}
			if res.Success || !strings.Contains(res.Error, "changed since it was trusted") || !strings.Contains(res.Error, "warden mcp trust up") {
				t.Fatalf("echo after its definition changed: %+v\n%s", res, logs)
			}
			if strings.Contains(res.Output+res.Error, "changed: b") {
				t.Fatal("the changed tool was called")
			}
			recs := yolo.sink.all()
			if last := recs[len(recs)-1]; last.Rule != RuleDefinitionChanged {
				t.Fatalf("audit rule %q", last.Rule)
			}
			// Refused by the guard: a supervised workspace asks nobody.
			if res := f.eng.Call(t.Context(), "mcp__up__echo", json.RawMessage(`{"text":"c"}`)); res.Success || !strings.Contains(res.Error, "warden mcp trust up") {
				t.Fatalf("supervised call of the changed tool: %+v", res)
			}
			for _, tl := range yolo.eng.Tools() {
				if strings.Contains(tl.Name, "extra") || strings.Contains(tl.Description, "ignore previous") {
					t.Fatalf("a tool added or changed after connect reached the model: %s %q", tl.Name, tl.Description)
				}
			}
			if res := yolo.eng.Call(t.Context(), "mcp__up__whoami", json.RawMessage(`{}`)); !res.Success {
				t.Fatalf("an unchanged tool is refused: %+v", res)
			}
			if !strings.Contains(logs.String(), "tools=extra") || !strings.Contains(logs.String(), "tools=echo") {
				t.Errorf("the change is not logged:\n%s", logs)
			}
			// Nothing was pinned behind the user's back.
			if now, _ := os.ReadFile(pinsPath); !bytes.Equal(now, pinned) {
				t.Fatalf("the pins changed without trust:\n%s\n%s", pinned, now)
			}
		})
	}
}

// `warden mcp --upstream` for a sandboxed workspace: the stdio server runs
// in the jail, and it goes when warden goes — closed cleanly, or killed.
func TestProcessJailedUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	needJail(t)
	t.Parallel()
	bin := jailServer(t)
	for _, how := range []string{"close", "kill"} {
		t.Run(how, func(t *testing.T) {
			m := marker()
			h := newHome(t, fmt.Sprintf(`
[security]
confirm_mode = "yolo"

[sandbox]
enabled = true
ro_paths = [%q]

[[mcp.servers]]
name = "jailed"
command = %q
args = [%q]
`, filepath.Dir(bin), bin, m))
			os.WriteFile(filepath.Join(h.ws, ".env"), []byte("API_KEY=hunter2\n"), 0o600)
			if how == "close" {
				// warden mcp trust starts the server in the jail too (a
				// sandboxed workspace without a jail refuses stdio servers).
				trust := exec.Command(warden(t), "mcp", "trust", "jailed", "--workspace", h.ws)
				trust.Env = h.env
				out, err := trust.CombinedOutput()
				if err != nil || !strings.Contains(string(out), "mcp__jailed__whoami\ttrusted") {
					t.Fatalf("warden mcp trust: %v\n%s", err, out)
				}
				waitNoMarker(t, m, 10*time.Second)
			}
			cmd := exec.Command(warden(t), "mcp", "--workspace", h.ws, "--upstream", "jailed")
			cmd.Env = h.env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("warden mcp: %v\n%s", err, stderr.String())
			}
			defer cs.Close()
			if res := call(t, cs, "mcp__jailed__whoami", `{}`); res.IsError || !strings.Contains(text(res), "sandbox=1") {
				t.Fatalf("whoami: %q\n%s", text(res), stderr.String())
			}
			if res := call(t, cs, "mcp__jailed__read", `{"path":"`+filepath.Join(h.ws, ".env")+`"}`); strings.Contains(text(res), "hunter2") {
				t.Fatalf("the jailed server read the masked .env: %q", text(res))
			}
			if len(markerPIDs(m)) == 0 {
				t.Fatal("no server process found by its marker")
			}
			switch how {
			case "close":
				cs.Close()
			case "kill":
				cmd.Process.Kill()
			}
			waitNoMarker(t, m, 10*time.Second)
		})
	}
}
