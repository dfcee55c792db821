package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runConfigCmd runs warden with args through the cobra tree, with a user
// config home of its own.
func runConfigCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	root.SetArgs(args)
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.code
	case isUsage(err):
		code = exitUsage
	default:
		t.Fatalf("warden %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func writeConfigFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConfigCmdCheckAndShow(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("WARDEN_MODE", "")
	writeConfigFile(t, filepath.Join(home, "config", "warden", "config.toml"), "[commands]\nmax_output_lines = 100\n")
	ws := filepath.Join(home, "ws")
	writeConfigFile(t, filepath.Join(ws, "warden.toml"), "[commands]\nmax_output_lines = 50\n")

	out, _, code := runConfigCmd(t, "config", "check", "--workspace", ws)
	if code != 0 || out != "ok\n" {
		t.Errorf("check: code %d, out %q", code, out)
	}

	out, _, code = runConfigCmd(t, "config", "show", "--workspace", ws, "--mode", "confirm-all")
	if code != 0 {
		t.Fatalf("show: code %d", code)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			rows[f[0]] = f[1] + " " + f[2]
		}
	}
	for key, want := range map[string]string{
		"KEY":                       "VALUE SOURCE",
		"commands.max_output_lines": "50 workspace:" + filepath.Join(ws, "warden.toml") + ":2",
		"security.confirm_mode":     `"confirm-all" flag:--mode`,
		"commands.default_timeout":  "30 default",
		"security.mask":             "[] default",
		"workspace.root":            `"` + ws + `" flag:--workspace`,
	} {
		if rows[key] != want {
			t.Errorf("show: %s = %q, want %q\n%s", key, rows[key], want, out)
		}
	}

	out, _, code = runConfigCmd(t, "config", "show", "--json", "--workspace", ws)
	var got struct {
		Config struct {
			Commands struct {
				MaxOutputLines int `json:"max_output_lines"`
			} `json:"commands"`
		} `json:"config"`
		Origin   map[string]string `json:"origin"`
		Warnings []string          `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("show --json: code %d, %v\n%s", code, err, out)
	}
	if got.Config.Commands.MaxOutputLines != 50 || !strings.HasPrefix(got.Origin["commands.max_output_lines"], "workspace:") ||
		got.Origin["commands.default_timeout"] != "default" || got.Warnings == nil {
		t.Errorf("show --json: %+v", got)
	}

	// The workspace may not raise what the user set: check fails listing it,
	// and show refuses to print a configuration that would not load.
	writeConfigFile(t, filepath.Join(ws, "warden.toml"), "[commands]\nmax_output_lines = 500\nbogus = 1\n")
	out, errOut, code := runConfigCmd(t, "config", "check", "--workspace", ws)
	wsFile := filepath.Join(ws, "warden.toml")
	want := wsFile + ":2:20: commands.max_output_lines = 500: raises the user's 100; only the user config may loosen it\n" +
		wsFile + ":3:1: commands.bogus: unknown key\n"
	if code != 1 || out != want || !strings.Contains(errOut, "2 configuration problem(s)") {
		t.Errorf("check: code %d\nout %q\nwant %q\nstderr %q", code, out, want, errOut)
	}
	out, errOut, code = runConfigCmd(t, "config", "show", "--workspace", ws)
	if code != 1 || out != "" || !strings.Contains(errOut, "warden: error: "+wsFile+":3:1: commands.bogus: unknown key") {
		t.Errorf("show: code %d, out %q, stderr %q", code, out, errOut)
	}
}

func TestConfigCmdCheckFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	bad := filepath.Join(dir, "team.yaml")
	writeConfigFile(t, bad, "sandbox:\n  backend: qemu\nllm:\n  retries: 11\n")
	out, _, code := runConfigCmd(t, "config", "check", "--json", bad)
	var got struct {
		OK     bool `json:"ok"`
		Errors []struct {
			Line int    `json:"line"`
			Key  string `json:"key"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err, out)
	}
	if code != 1 || got.OK || len(got.Errors) != 2 || got.Errors[0].Key != "llm.retries" || got.Errors[1].Line != 2 {
		t.Errorf("code %d, %+v", code, got)
	}
	// A file named warden.toml is held to the workspace rules.
	ws := filepath.Join(dir, "warden.toml")
	writeConfigFile(t, ws, "[workspace]\nallow_delete = true\n")
	out, _, code = runConfigCmd(t, "config", "check", ws)
	if code != 1 || !strings.Contains(out, ws+":2:16: workspace.allow_delete = true: looser") {
		t.Errorf("code %d, out %q", code, out)
	}
	if _, _, code := runConfigCmd(t, "config", "check", "a", "b"); code != exitUsage {
		t.Errorf("two files: code %d, want %d", code, exitUsage)
	}
}
