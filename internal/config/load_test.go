package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Each source beats the one below it: defaults < user < --config <
// workspace < environment < flags.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	user := "[commands]\ndefault_timeout = 100\nmax_output_lines = 400\n[security]\nconfirm_mode = \"yolo\"\n"
	extra := "[commands]\ndefault_timeout = 50\n[security]\nconfirm_mode = \"confirm-sensitive\"\n"
	ws := "[commands]\ndefault_timeout = 40\n[security]\nconfirm_mode = \"confirm-all\"\n"
	type want struct{ timeout, mode, timeoutFrom, modeFrom string }
	for _, tc := range []struct {
		name            string
		user, extra, ws bool
		env             map[string]string
		flags           Overrides
		want            want
	}{
		{"defaults", false, false, false, nil, Overrides{}, want{"30", "confirm-sensitive", "default", "default"}},
		{"user beats defaults", true, false, false, nil, Overrides{}, want{"100", "yolo", "user:U:2", "user:U:5"}},
		{"extra beats user", true, true, false, nil, Overrides{}, want{"50", "confirm-sensitive", "user:X:2", "user:X:4"}},
		{"workspace beats extra", true, true, true, nil, Overrides{}, want{"40", "confirm-all", "workspace:W:2", "workspace:W:4"}},
		{"env beats workspace", true, true, true, map[string]string{"WARDEN_DEFAULT_TIMEOUT": "300", "WARDEN_MODE": "yolo"}, Overrides{},
			want{"300", "yolo", "env:WARDEN_DEFAULT_TIMEOUT", "env:WARDEN_MODE"}},
		{"flag beats env", true, true, true, map[string]string{"WARDEN_MODE": "yolo"}, Overrides{Mode: "confirm-sensitive"},
			want{"40", "confirm-sensitive", "workspace:W:2", "flag:--mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := setup{env: tc.env, flags: tc.flags}
			if tc.user {
				s.user = user
			}
			if tc.ws {
				s.ws = ws
			}
			opts, u, w := s.opts(t)
			x := ""
			if tc.extra {
				x = writeFile(t, filepath.Join(t.TempDir(), "extra.toml"), extra)
				opts.ExtraFile = x
			}
			ld, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			name := func(o string) string {
				for from, to := range map[string]string{u: "U", x: "X", w: "W"} {
					if from != "" {
						o = strings.ReplaceAll(o, from, to)
					}
				}
				return o
			}
			got := want{FormatValue(ld.Config.Commands.DefaultTimeout), ld.Config.Security.ConfirmMode,
				name(ld.Origin["commands.default_timeout"]), name(ld.Origin["security.confirm_mode"])}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.user && ld.Config.Commands.MaxOutputLines != 400 {
				t.Errorf("max_output_lines %d: a later source without the key must not reset it", ld.Config.Commands.MaxOutputLines)
			}
		})
	}
}

func TestFlagsAndEnv(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{
		env: map[string]string{"WARDEN_ALLOWED_ONLY": "true", "WARDEN_ALLOW_DELETE": "1", "WARDEN_MAX_OUTPUT_LINES": "20",
			"WARDEN_COMMANDS_ENABLED": "true", "WARDEN_MODE": ""},
		flags: Overrides{NoCommands: true, DryRun: true},
	}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	c := ld.Config
	if !c.Commands.AllowedOnly || !c.Workspace.AllowDelete || c.Commands.MaxOutputLines != 20 || c.Commands.Enabled || !c.DryRun {
		t.Errorf("config %+v", c)
	}
	for key, want := range map[string]string{"commands.enabled": "flag:--no-commands", "dry_run": "flag:--dry-run",
		"commands.allowed_only": "env:WARDEN_ALLOWED_ONLY", "security.confirm_mode": "default"} {
		if ld.Origin[key] != want {
			t.Errorf("origin %s = %q, want %q", key, ld.Origin[key], want)
		}
	}
}

func TestBadEnvAndFlags(t *testing.T) {
	t.Parallel()
	_, _, _, err := setup{
		env:   map[string]string{"WARDEN_MODE": "chaos", "WARDEN_DEFAULT_TIMEOUT": "0", "WARDEN_ALLOW_DELETE": "sure", "WARDEN_MAX_OUTPUT_LINES": "lots"},
		flags: Overrides{Mode: "loose"},
	}.load(t)
	want := []string{
		`environment: WARDEN_MODE = "chaos": must be one of yolo, auto, confirm-sensitive, confirm-all`,
		`environment: WARDEN_ALLOW_DELETE = "sure": must be true or false`,
		`environment: WARDEN_DEFAULT_TIMEOUT = "0": must be an integer between 1 and 600`,
		`environment: WARDEN_MAX_OUTPUT_LINES = "lots": must be an integer between 10 and 5000`,
		`flags: --mode = "loose": must be one of yolo, auto, confirm-sensitive, confirm-all`,
	}
	var got []string
	for _, e := range errorList(t, err) {
		got = append(got, e.Error())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Merged values can conflict even when each source is valid alone.
func TestEffectiveDefaultAboveMax(t *testing.T) {
	t.Parallel()
	_, u, _, err := setup{user: "[commands]\nmax_timeout = 60\n", env: map[string]string{"WARDEN_DEFAULT_TIMEOUT": "90"}}.load(t)
	got := shorts(t, err)
	want := "0: commands.default_timeout = 90: exceeds commands.max_timeout = 60 (default_timeout from env:WARDEN_DEFAULT_TIMEOUT, max_timeout from user:" + u + ":2)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// A [sandbox] that cannot be used as written runs in lockdown — never nil,
// never unsandboxed — and says why, loudly, with file:line.
func TestMalformedSandboxFailsClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, file string
		want            string
	}{
		{"unknown backend", "[sandbox]\nenabled = false\nbackend = \"qemu\"\n", "config.toml", `:3:11: sandbox.backend = "qemu": must be one of local, docker, ssh, modal`},
		{"wrong type", "[sandbox]\nenabled = \"yes\"\n", "config.toml", `:2:11: sandbox.enabled = "yes": expected boolean, got string`},
		{"unknown key", "[sandbox]\nenabeld = true\n", "config.toml", `:2:1: sandbox.enabeld: unknown key`},
		{"not a table", "sandbox = true\n", "config.toml", `:1:11: sandbox = true: expected table, got boolean`},
		{"bad landlock", "[sandbox]\nlandlock = \"maybe\"\n", "config.toml", `:2:12: sandbox.landlock = "maybe": must be one of auto, on, off`},
		{"yaml list", "sandbox: [local]\n", "config.yaml", `:1:10: sandbox: expected table, got array`},
		{"yaml bad idle", "sandbox:\n  idle_timeout: -5\n", "config.yaml", `:2:17: sandbox.idle_timeout = -5: must be at least 1 (seconds)`},
	} {
		for _, where := range []string{"user", "workspace"} {
			t.Run(tc.name+"/"+where, func(t *testing.T) {
				t.Parallel()
				s := setup{user: tc.doc, userName: tc.file}
				if where == "workspace" {
					s = setup{ws: tc.doc, wsName: "warden" + filepath.Ext(tc.file)}
				}
				ld, u, w, err := s.load(t)
				if err != nil {
					t.Fatalf("load failed: %v", err)
				}
				file := u + w
				sb := ld.Config.Sandbox
				if sb == nil {
					t.Fatal("Sandbox is nil: the workspace would run unsandboxed")
				}
				if !sb.Enabled || !sb.Lockdown {
					t.Errorf("sandbox %+v: want enabled and lockdown", sb)
				}
				want := file + tc.want
				if sb.Invalid != want {
					t.Errorf("Invalid = %q\nwant      %q", sb.Invalid, want)
				}
				if len(ld.Warnings) != 1 || !strings.Contains(ld.Warnings[0], "LOCKDOWN") || !strings.Contains(ld.Warnings[0], want) {
					t.Errorf("warnings %q", ld.Warnings)
				}
				// config check reports it as an error.
				if err := CheckFile(file, where == "workspace"); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("CheckFile: %v", err)
				}
			})
		}
	}
}

// A TOML syntax error anywhere is an ordinary load error, even in [sandbox].
func TestSandboxSyntaxErrorFailsLoad(t *testing.T) {
	t.Parallel()
	_, _, _, err := setup{ws: "[sandbox]\nbackend = local\n"}.load(t)
	if err == nil || !strings.Contains(err.Error(), "warden.toml:2:11:") {
		t.Errorf("err = %v", err)
	}
}

func TestNoSandboxSectionMeansNil(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{user: "[commands]\nenabled = true\n"}.load(t)
	if err != nil || ld.Config.Sandbox != nil {
		t.Errorf("sandbox %+v, err %v", ld.Config.Sandbox, err)
	}
}

func TestListsMergeAdditively(t *testing.T) {
	t.Parallel()
	ld, u, w, err := setup{user: "[security]\nmask = [\"a\", \"b\"]\n", ws: "[security]\nmask = [\"b\", \"c\"]\n"}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ld.Config.Security.Mask); diff != "" {
		t.Errorf("mask (-want +got):\n%s", diff)
	}
	if want := "user:" + u + ":2, workspace:" + w + ":2"; ld.Origin["security.mask"] != want {
		t.Errorf("origin %q, want %q", ld.Origin["security.mask"], want)
	}
}

func TestAliasesNormalised(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{user: `
[security.tool_policy.tools]
terminal = "deny"
file_write = "supervised"
[security.tool_groups]
edits = ["file_edit", "shell"]
[[security.approval.auto_approve]]
tool = "file_read"
path_pattern = '^docs/'
[agents.fix]
allowed_tools = ["file_read", "terminal"]
`}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	c := ld.Config
	got := []any{c.Security.ToolPolicy.Tools, c.Security.ToolGroups["edits"], c.Security.Approval.AutoApprove[0].Tool, c.Agents["fix"].AllowedTools}
	want := []any{map[string]string{"run_command": "deny", "write_file": "supervised"}, []string{"edit_file", "run_command"}, "read_file", []string{"read_file", "run_command"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if c.Security.Approval.AutoApprove[0].Line != 7 {
		t.Errorf("auto_approve Line = %d, want 7", c.Security.Approval.AutoApprove[0].Line)
	}
	if !strings.HasSuffix(ld.Origin["security.tool_policy.tools.run_command"], ":3") {
		t.Errorf("origin %q", ld.Origin["security.tool_policy.tools.run_command"])
	}
}

func TestDefaultsFilledPerEntry(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{user: "[[hooks.post_edit]]\ncommand = \"gofmt\"\n[[mcp.servers]]\nname = \"a\"\ncommand = \"srv\"\n"}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	if ld.Config.Hooks.PostEdit[0].Timeout != 15 || ld.Config.MCP.Servers[0].Timeout != 30 {
		t.Errorf("hook %+v, server %+v", ld.Config.Hooks.PostEdit[0], ld.Config.MCP.Servers[0])
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	ld, u, _, err := setup{user: "[security.approval]\non_timeout = \"allow\"\n[[mcp.servers]]\nname = \"a\"\nurl = \"https://x\"\ntoken = \"sk-123\"\n"}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"warning: " + u + `:2:14: security.approval.on_timeout = "allow": a request nobody answers in time will RUN; deny is the safe choice`,
		"warning: " + u + `:6:9: mcp.servers[0].token: a literal token in a config file; prefer token_env naming an environment variable`,
	}
	if diff := cmp.Diff(want, ld.Warnings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// MCP servers and supervisors are unique across the trusted sources.
func TestUniqueAcrossSources(t *testing.T) {
	t.Parallel()
	opts, u, _ := setup{user: "[[mcp.servers]]\nname = \"a\"\ncommand = \"srv\"\n"}.opts(t)
	opts.ExtraFile = writeFile(t, filepath.Join(t.TempDir(), "x.toml"), "[[mcp.servers]]\nname = \"a\"\nurl = \"https://x\"\n")
	_, err := Load(opts)
	got := shorts(t, err)
	if want := `2: mcp.servers[0].name = "a": already defined by user:` + u + `:1`; len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSourceFiles(t *testing.T) {
	t.Parallel()
	t.Run("user config at XDG location", func(t *testing.T) {
		t.Parallel()
		xdg := t.TempDir()
		writeFile(t, filepath.Join(xdg, "warden", "config.yaml"), "commands:\n  max_output_lines: 99\n")
		ld, err := Load(LoadOptions{WorkspaceDir: t.TempDir(), Getenv: envOf(map[string]string{"XDG_CONFIG_HOME": xdg})})
		if err != nil || ld.Config.Commands.MaxOutputLines != 99 || len(ld.Files) != 1 {
			t.Errorf("err %v, files %v", err, ld)
		}
	})
	t.Run("user config under HOME", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		writeFile(t, filepath.Join(home, ".config", "warden", "config.toml"), "[commands]\nmax_output_lines = 98\n")
		ld, err := Load(LoadOptions{WorkspaceDir: t.TempDir(), Getenv: envOf(map[string]string{"HOME": home})})
		if err != nil || ld.Config.Commands.MaxOutputLines != 98 {
			t.Errorf("err %v", err)
		}
	})
	t.Run("both user files", func(t *testing.T) {
		t.Parallel()
		xdg := t.TempDir()
		writeFile(t, filepath.Join(xdg, "warden", "config.yaml"), "security: {}\n")
		writeFile(t, filepath.Join(xdg, "warden", "config.toml"), "[security]\n")
		_, err := Load(LoadOptions{WorkspaceDir: t.TempDir(), Getenv: envOf(map[string]string{"XDG_CONFIG_HOME": xdg})})
		if err == nil || !strings.Contains(err.Error(), "both config.toml and config.yaml exist; keep one") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("both workspace files", func(t *testing.T) {
		t.Parallel()
		opts, _, _ := setup{ws: "[commands]\n"}.opts(t)
		writeFile(t, filepath.Join(opts.WorkspaceDir, "warden.yaml"), "commands: {}\n")
		_, err := Load(opts)
		if err == nil || !strings.Contains(err.Error(), "both warden.toml and warden.yaml exist; keep one") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("missing named files", func(t *testing.T) {
		t.Parallel()
		_, err := Load(LoadOptions{WorkspaceDir: t.TempDir(), UserFile: "/nonexistent/u.toml", ExtraFile: "/nonexistent/x.toml", Getenv: noEnv})
		want := []string{"0: no such file", "0: no such file"}
		if diff := cmp.Diff(want, shorts(t, err)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("unknown extension", func(t *testing.T) {
		t.Parallel()
		p := writeFile(t, filepath.Join(t.TempDir(), "x.ini"), "")
		if err := CheckFile(p, false); err == nil || !strings.Contains(err.Error(), "unknown configuration format") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("workspace root from user config", func(t *testing.T) {
		t.Parallel()
		ws := t.TempDir()
		writeFile(t, filepath.Join(ws, "warden.toml"), "[commands]\nmax_output_lines = 11\n")
		u := writeFile(t, filepath.Join(t.TempDir(), "c.toml"), "[workspace]\nroot = \""+ws+"\"\n")
		ld, err := Load(LoadOptions{UserFile: u, Getenv: noEnv})
		if err != nil || ld.Config.Workspace.Root != ws || ld.Config.Commands.MaxOutputLines != 11 {
			t.Errorf("err %v %+v", err, ld)
		}
	})
}

// The workspace file is written by the agent: it cannot be a symlink, a
// FIFO that blocks warden at start, or an endless file.
func TestWorkspaceFileAttacks(t *testing.T) {
	t.Parallel()
	t.Run("symlink", func(t *testing.T) {
		t.Parallel()
		opts, _, _ := setup{}.opts(t)
		target := writeFile(t, filepath.Join(t.TempDir(), "other.toml"), "[commands]\n")
		if err := os.Symlink(target, filepath.Join(opts.WorkspaceDir, "warden.toml")); err != nil {
			t.Fatal(err)
		}
		_, err := Load(opts)
		if err == nil || !strings.Contains(err.Error(), "warden.toml: the workspace config file must not be a symlink") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		t.Parallel()
		opts, _, _ := setup{}.opts(t)
		if err := syscall.Mkfifo(filepath.Join(opts.WorkspaceDir, "warden.toml"), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Load(opts); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("err %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Load blocked on a FIFO")
		}
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		opts, _, _ := setup{}.opts(t)
		if err := os.Mkdir(filepath.Join(opts.WorkspaceDir, "warden.yaml"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(opts); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		big := "# " + strings.Repeat("x", MaxFileSize) + "\n"
		_, _, _, err := setup{ws: big}.load(t)
		if err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
			t.Errorf("err %v", err)
		}
	})
}

func TestSettingsCoverOrigin(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{user: fullTOML}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	set := ld.Settings()
	if len(set) != len(ld.Origin) {
		t.Errorf("%d settings, %d origins", len(set), len(ld.Origin))
	}
	for _, s := range set {
		if s.Origin == "" || ld.Origin[s.Key] != s.Origin {
			t.Errorf("%s: origin %q vs %q", s.Key, s.Origin, ld.Origin[s.Key])
		}
	}
	if ld.Origin["commands.enabled"] == "default" || ld.Origin["security.approval.timeout_secs"] == "default" {
		t.Errorf("origins not recorded: %v", ld.Origin)
	}
}

func TestStateDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if got := StateDir(); got != "/x/state/warden" {
		t.Errorf("StateDir = %q", got)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/h")
	if got := StateDir(); got != "/h/.local/state/warden" {
		t.Errorf("StateDir = %q", got)
	}
}

// An empty workspace file is the sandbox's placeholder over a missing one:
// it is read as absent, not as "both files exist".
func TestEmptyWorkspaceFileIsAbsent(t *testing.T) {
	t.Parallel()
	opts, _, _ := setup{ws: "[commands]\nallowed_only = true\n"}.opts(t)
	writeFile(t, filepath.Join(opts.WorkspaceDir, "warden.yaml"), "")
	ld, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !ld.Config.Commands.AllowedOnly {
		t.Error("warden.toml was not read next to an empty warden.yaml")
	}
}
