package hooktest

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

	"github.com/wardenhq/warden/internal/testenv"
)

// Prefix is where scripts/test-deps installs the pinned hosts.
const Prefix = "/opt/warden-test/npm"

// Pinned are the host versions the end-to-end tests run.
var Pinned = map[string]string{"claude": "2.1.328", "codex": "0.169.0", "gemini": "0.61.0"}

// Bin returns the pinned host program name ("claude", "codex", "gemini"),
// skipping the test (failing it under WARDEN_REQUIRE_SANDBOX=1) when it is
// not installed at Prefix in the pinned version.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Prefix, "bin", name)
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil {
		testenv.Skip(t, "%s is not installed in %s (scripts/test-deps installs it from npm): %v", name, Prefix, err)
	}
	if !strings.Contains(string(out), Pinned[name]) {
		testenv.Skip(t, "%s in %s is %q, not the pinned %s (scripts/test-deps)", name, Prefix, strings.TrimSpace(string(out)), Pinned[name])
	}
	return p
}

// Host is one run of an agent host: its program, arguments, working
// directory (the workspace) and the environment it starts with.
type Host struct {
	Name string
	Cmd  *exec.Cmd
	// Home is the host's private home (its config lives there).
	Home string
}

// baseEnv is the environment every host starts with: nothing of the
// test's own but a PATH with node, and a private HOME.
func baseEnv(home string) []string {
	return []string{
		"PATH=" + filepath.Join(Prefix, "bin") + ":/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home, "LANG=C.UTF-8", "TERM=dumb", "USER=root", "LOGNAME=root", "SHELL=/bin/bash",
	}
}

// StateDir returns a fresh directory for a host's own state that is not
// under /tmp (Codex refuses a CODEX_HOME there) and is removed after the test.
func StateDir(t testing.TB) string {
	t.Helper()
	base := "/var/tmp"
	if h, err := os.UserHomeDir(); err == nil && !strings.HasPrefix(h, "/tmp") {
		base = h
	}
	d, err := os.MkdirTemp(base, "warden-host-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ClaudeCode prepares `claude -p PROMPT` in ws against model, offline:
// ANTHROPIC_BASE_URL, no nonessential traffic, permissions skipped
// (IS_SANDBOX=1 lets root do it), the settings written to a file passed
// with --settings. mcp, when not nil, is passed with --mcp-config and its
// tools allowed with --allowedTools 'mcp__warden__*'.
func ClaudeCode(t testing.TB, model *Server, ws, home string, settings, mcp map[string]any, env []string) *Host {
	t.Helper()
	bin := Bin(t, "claude")
	sf := filepath.Join(home, "warden-settings.json")
	writeJSON(t, sf, settings)
	args := []string{"-p", "do the task", "--dangerously-skip-permissions", "--settings", sf, "--model", "claude-sonnet-4-5"}
	if mcp != nil {
		mf := filepath.Join(home, "warden-mcp.json")
		writeJSON(t, mf, mcp)
		args = append(args, "--mcp-config", mf, "--strict-mcp-config", "--allowedTools", "mcp__warden__*")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = ws
	cmd.Env = append(append(baseEnv(home), "ANTHROPIC_BASE_URL="+model.URL, "ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1", "DISABLE_AUTOUPDATER=1"), env...)
	return &Host{Name: "claude-code", Cmd: cmd, Home: home}
}

// CodexConfig is the offline config.toml of Codex against model: a model
// provider speaking the Responses API, update checks, analytics, feedback
// and the networked features off. extra is appended (hooks, MCP servers).
// The model is gpt-5.5, whose built-in metadata gives Codex its apply_patch
// tool; with deferMCP false it is a model Codex has no metadata for, which
// offers MCP tools directly instead of behind tool_search.
func CodexConfig(model *Server, deferMCP bool, extra string) string {
	name := "gpt-5.5"
	if !deferMCP {
		name = "warden-test-model"
	}
	return `model = "` + name + `"
model_provider = "warden-test"
check_for_update_on_startup = false

[model_providers.warden-test]
name = "warden-test"
base_url = "` + model.URL + `/v1"
wire_api = "responses"
env_key = "WARDEN_TEST_OPENAI_KEY"

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
in_app_updates = false
# What warden setup codex writes: a command with a terminal keeps its stdin
# open for write_stdin, which Codex does not pass to hooks.
unified_exec_tty = false
` + extra
}

// Codex prepares `codex exec PROMPT` in ws with CODEX_HOME codexHome
// (holding config.toml and hooks.json, written by the caller), sandbox and
// approvals bypassed so that only warden's hook stands between the model
// and the machine. trustHooks passes --dangerously-bypass-hook-trust.
func Codex(t testing.TB, ws, home, codexHome string, trustHooks bool, env []string) *Host {
	t.Helper()
	bin := Bin(t, "codex")
	args := []string{"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}
	if trustHooks {
		args = append(args, "--dangerously-bypass-hook-trust")
	}
	cmd := exec.Command(bin, append(args, "do the task")...)
	cmd.Dir = ws
	cmd.Env = append(append(baseEnv(home), "CODEX_HOME="+codexHome, "WARDEN_TEST_OPENAI_KEY=sk-test-not-a-key"), env...)
	return &Host{Name: "codex", Cmd: cmd, Home: home}
}

// GeminiCLI prepares `gemini -p PROMPT --yolo` in ws against model with
// the settings written to HOME/.gemini/settings.json (usage statistics,
// telemetry and updates off are added).
func GeminiCLI(t testing.TB, model *Server, ws, home string, settings map[string]any, env []string) *Host {
	t.Helper()
	bin := Bin(t, "gemini")
	s := map[string]any{
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	}
	for k, v := range settings {
		s[k] = v
	}
	writeJSON(t, filepath.Join(home, ".gemini", "settings.json"), s)
	cmd := exec.Command(bin, "-p", "do the task", "--yolo", "-m", "gemini-2.5-flash")
	cmd.Dir = ws
	cmd.Env = append(append(baseEnv(home), "GEMINI_API_KEY=test-not-a-key", "GOOGLE_GEMINI_BASE_URL="+model.URL,
		"GEMINI_CLI_TRUST_WORKSPACE=true"), env...)
	return &Host{Name: "gemini-cli", Cmd: cmd, Home: home}
}

// Run runs the host to its end (at most timeout) and returns its output.
func (h *Host) Run(t testing.TB, timeout time.Duration) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Cmd.Path, h.Cmd.Args[1:]...)
	cmd.Dir, cmd.Env = h.Cmd.Dir, h.Cmd.Env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
