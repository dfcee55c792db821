package sandbox_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/testenv"
)

// wardenBinary builds warden for a test that runs it whole (the build
// cache makes the second one quick).
func wardenBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "warden")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/wardenhq/warden/cmd/warden").CombinedOutput(); err != nil {
		t.Fatalf("building warden: %v\n%s", err, out)
	}
	return bin
}

// fdHome is a sandboxed workspace, a private user config, and host files
// outside the workspace for descriptors 20 and 21.
type fdHome struct {
	ws, secret, log string
	env             []string
}

func newFDHome(t *testing.T) *fdHome {
	t.Helper()
	testenv.Need(t, "bwrap", "bash")
	d := t.TempDir()
	h := &fdHome{ws: filepath.Join(d, "ws"), secret: filepath.Join(d, "secret"), log: filepath.Join(d, "log")}
	for _, sub := range []string{"ws", "config/warden", "state", "home"} {
		os.MkdirAll(filepath.Join(d, sub), 0o700)
	}
	os.WriteFile(filepath.Join(h.ws, "warden.toml"), []byte("[sandbox]\nenabled = true\n"), 0o644)
	os.WriteFile(h.secret, []byte("fd-secret-canary\n"), 0o600)
	os.WriteFile(h.log, []byte("log\n"), 0o600)
	h.env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(d, "config"), "XDG_STATE_HOME="+filepath.Join(d, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(d, "state"), "HOME="+filepath.Join(d, "home"), "WARDEN_DB=", "WARDEN_SUPERVISOR=", "WARDEN_LOG=")
	return h
}

// leaky runs argv with descriptors 20 (reading the secret) and 21
// (appending to the log) open and inheritable, as an agent host that
// leaks them would start warden.
func (h *fdHome) leaky(argv ...string) *exec.Cmd {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	cmd := exec.Command("bash", "-c", "exec 20<'"+h.secret+"' 21>>'"+h.log+"'; exec "+strings.Join(q, " "))
	cmd.Env = h.env
	return cmd
}

const fdProbe = "cat <&20; echo x >&21; ls -l /proc/self/fd"

func (h *fdHome) check(t *testing.T, out string) {
	t.Helper()
	if strings.Contains(out, "fd-secret-canary") || strings.Contains(out, h.secret) || strings.Contains(out, h.log) {
		t.Errorf("the jailed command reached a descriptor warden inherited:\n%s", out)
	}
	if b, _ := os.ReadFile(h.log); string(b) != "log\n" {
		t.Errorf("the jailed command appended to the log through descriptor 21: %q", b)
	}
	if !strings.Contains(out, "Bad file descriptor") {
		t.Errorf("the command's output does not show descriptors 20 and 21 closed:\n%s", out)
	}
}

// `warden exec` started with descriptors 20 and 21 open: the jailed
// command reaches neither.
func TestWardenExecInheritedFDs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	h := newFDHome(t)
	cmd := h.leaky(wardenBinary(t), "exec", "--workspace", h.ws, "--", "bash", "-c", fdProbe)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Run() // cat fails: the exit status is the probe's
	h.check(t, out.String())
	if !strings.Contains(out.String(), "total") {
		t.Errorf("the probe did not run in the jail (no ls output):\n%s", out.String())
	}
}

// `warden mcp` started with descriptors 20 and 21 open: run_command's
// jailed command reaches neither.
func TestWardenMCPInheritedFDs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	h := newFDHome(t)
	cmd := h.leaky(wardenBinary(t), "mcp", "--workspace", h.ws)
	cmd.Env = append(cmd.Env, "WARDEN_MODE=yolo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("warden mcp: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	args, _ := json.Marshal(map[string]string{"command": fdProbe})
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "run_command", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("run_command: %v\n%s", err, stderr.String())
	}
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	h.check(t, strings.Join(out, "\n"))
}
