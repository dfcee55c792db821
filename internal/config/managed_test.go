package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenhq/warden/internal/testenv"
)

// managedFixture writes a managed policy, a user config, a --config file
// and a workspace, and loads them with env and flags.
type managedFixture struct {
	managed, user, extra, ws string
	env                      map[string]string
	flags                    Overrides
}

func (f managedFixture) load(t *testing.T) (*Loaded, error) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		if body == "" {
			return ""
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if f.ws != "" {
		write("ws/warden.toml", f.ws)
	}
	managed := write("managed.toml", f.managed)
	if managed == "" {
		managed = "-"
	}
	user := write("user.toml", f.user)
	if user == "" {
		user = "-"
	}
	env := f.env
	return Load(LoadOptions{
		WorkspaceDir: ws, UserFile: user, ExtraFile: write("extra.toml", f.extra), ManagedFile: managed,
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Flags: f.flags,
	})
}

// Every kind of loosening of a managed setting, from each other source,
// fails the load with the source's line (or variable, or flag) and the
// managed file; each row names what it tries.
func TestManagedCeilingRefusesLoosening(t *testing.T) {
	t.Parallel()
	const allMode = "[security]\nconfirm_mode = \"confirm-all\"\n"
	tests := []struct {
		name string
		f    managedFixture
		want string // a piece of the one expected error
	}{
		// The confirmation mode, from every source.
		{"user mode", managedFixture{managed: allMode, user: "[security]\nconfirm_mode = \"yolo\"\n"},
			`user.toml:2:16: security.confirm_mode = "yolo": looser than "confirm-all" from the managed policy`},
		{"--config mode", managedFixture{managed: allMode, extra: "[security]\nconfirm_mode = \"confirm-sensitive\"\n"},
			`extra.toml:2:16: security.confirm_mode = "confirm-sensitive": looser than "confirm-all" from the managed policy`},
		{"env mode", managedFixture{managed: allMode, env: map[string]string{"WARDEN_MODE": "yolo"}},
			`environment: WARDEN_MODE = "yolo": looser than "confirm-all" from the managed policy`},
		{"flag mode", managedFixture{managed: allMode, flags: Overrides{Mode: "yolo"}},
			`flags: --mode = "yolo": looser than "confirm-all" from the managed policy`},
		{"workspace mode", managedFixture{managed: allMode, ws: "[security]\nconfirm_mode = \"yolo\"\n"},
			`warden.toml:2:16: security.confirm_mode = "yolo": looser than "confirm-all"`},
		// What decides the same thing as the mode.
		{"user tool allow under managed mode", managedFixture{managed: allMode, user: "[security.tool_policy.tools]\nrun_command = \"allow\"\n"},
			`security.tool_policy.tools.run_command = "allow": looser than what the confirmation mode may decide ("supervised"); only the administrator may loosen it`},
		{"user default allow under managed default", managedFixture{managed: "[security.tool_policy]\ndefault = \"supervised\"\n", user: "[security.tool_policy.tools]\nread_file = \"allow\"\n"},
			`security.tool_policy.tools.read_file = "allow": looser than the managed policy's default ("supervised")`},
		{"user group allow", managedFixture{managed: "[security.tool_policy.groups]\nshell = \"deny\"\n", extra: "[security.tool_policy.groups]\nshell = \"supervised\"\n"},
			`security.tool_policy.groups.shell = "supervised": looser than the managed policy's policy for group shell ("deny")`},
		{"user auto-approve under managed mode", managedFixture{managed: allMode, user: "[[security.approval.auto_approve]]\ntool = \"run_command\"\ncommand_pattern = \".*\"\n"},
			`security.approval.auto_approve: adds an auto-approve rule for run_command; only the administrator may loosen it`},
		{"user tool group under managed policy", managedFixture{managed: "[security.tool_policy.groups]\nmine = \"deny\"\n[security.tool_groups]\nmine = [\"run_command\"]\n", user: "[security.tool_groups]\nmine = [\"read_file\"]\n"},
			`security.tool_groups.mine: fixed by the managed policy`},
		{"user agent mode", managedFixture{managed: allMode, user: "[agents.fast]\nconfirm_mode = \"yolo\"\nallowed_tools = [\"read_file\"]\n"},
			`agents.fast.confirm_mode = "yolo": looser than "confirm-all" from the managed policy`},
		// Commands.
		{"user allowed_only off", managedFixture{managed: "[commands]\nallowed_only = true\n", user: "[commands]\nallowed_only = false\n"},
			`commands.allowed_only = false: looser than true from the managed policy`},
		{"env allowed_only off", managedFixture{managed: "[commands]\nallowed_only = true\n", env: map[string]string{"WARDEN_ALLOWED_ONLY": "0"}},
			`environment: WARDEN_ALLOWED_ONLY = "false": looser than true from the managed policy`},
		{"env commands back on", managedFixture{managed: "[commands]\nenabled = false\n", env: map[string]string{"WARDEN_COMMANDS_ENABLED": "yes"}},
			`environment: WARDEN_COMMANDS_ENABLED = "true": looser than false from the managed policy`},
		{"user commands back on", managedFixture{managed: "[commands]\nenabled = false\n", user: "[commands]\nenabled = true\n"},
			`commands.enabled = true: looser than false from the managed policy`},
		{"env delete on", managedFixture{managed: "[workspace]\nallow_delete = false\n", env: map[string]string{"WARDEN_ALLOW_DELETE": "true"}},
			`environment: WARDEN_ALLOW_DELETE = "true": looser than false from the managed policy`},
		{"env max timeout up", managedFixture{managed: "[commands]\nmax_timeout = 60\n", env: map[string]string{"WARDEN_MAX_TIMEOUT": "120"}},
			`environment: WARDEN_MAX_TIMEOUT = "120": raises the managed policy's 60; only the administrator may loosen it`},
		{"env default timeout up", managedFixture{managed: "[commands]\ndefault_timeout = 10\n", env: map[string]string{"WARDEN_DEFAULT_TIMEOUT": "20"}},
			`environment: WARDEN_DEFAULT_TIMEOUT = "20": raises the managed policy's 10`},
		{"env output lines up", managedFixture{managed: "[commands]\nmax_output_lines = 100\n", env: map[string]string{"WARDEN_MAX_OUTPUT_LINES": "150"}},
			`environment: WARDEN_MAX_OUTPUT_LINES = "150": raises the managed policy's 100`},
		{"user safe command added", managedFixture{managed: "[commands]\nsafe_commands = [\"ls\"]\n", user: "[commands]\nsafe_commands = [\"ls\", \"curl\"]\n"},
			`commands.safe_commands: adds "curl", which the managed policy`},
		{"user env passed", managedFixture{managed: "[commands]\nenv_allowlist = [\"PATH\"]\n", user: "[commands]\nenv_allowlist = [\"AWS_*\"]\n"},
			`commands.env_allowlist: adds "AWS_*", which the managed policy`},
		// Network, approvals, supervisors.
		{"user host added", managedFixture{managed: "[security.http]\nallow_hosts = [\"api.example.com\"]\n", extra: "[security.http]\nallow_hosts = [\"169.254.169.254\"]\n"},
			`security.http.allow_hosts: adds "169.254.169.254", which the managed policy`},
		{"user on_timeout allow", managedFixture{managed: "[security.approval]\non_timeout = \"deny\"\n", user: "[security.approval]\non_timeout = \"allow\"\n"},
			`security.approval.on_timeout = "allow": looser than "deny" from the managed policy`},
		{"user supervisor added", managedFixture{managed: "[[security.approval.supervisors]]\nid = \"secops\"\ntoken_env = \"SECOPS_TOKEN\"\n",
			user: "[[security.approval.supervisors]]\nid = \"me\"\ntoken_env = \"MY_TOKEN\"\n"},
			`security.approval.supervisors: fixed by the managed policy`},
		{"user supervisor_id", managedFixture{managed: "[[security.approval.supervisors]]\nid = \"secops\"\ntoken_env = \"SECOPS_TOKEN\"\n",
			user: "[security.approval]\nsupervisor_id = \"me\"\n"},
			`security.approval.supervisor_id = "me": fixed by the managed policy`},
		// The jail.
		{"user sandbox off", managedFixture{managed: "[sandbox]\nenabled = true\nlockdown = true\n", user: "[sandbox]\nenabled = false\n"},
			`sandbox.enabled = false: looser than sandbox.enabled = true from the managed policy`},
		{"user lockdown off", managedFixture{managed: "[sandbox]\nlockdown = true\n", user: "[sandbox]\nlockdown = false\n"},
			`sandbox.lockdown = false: looser than sandbox.lockdown = true from the managed policy`},
		{"user network on", managedFixture{managed: "[sandbox]\nnetwork = false\n", user: "[sandbox]\nnetwork = true\n"},
			`sandbox.network = true: looser than sandbox.network = "none" from the managed policy`},
		{"user backend", managedFixture{managed: "[sandbox]\nbackend = \"local\"\n", user: "[sandbox]\nbackend = \"docker\"\n"},
			`sandbox.backend = "docker": the managed policy /`},
		{"user rw path outside", managedFixture{managed: "[sandbox]\nenabled = true\n", user: "[sandbox]\nrw_paths = [\"/etc\"]\n"},
			`sandbox.rw_paths: path "/etc" is outside the workspace; only the administrator may loosen it`},
		// Where the queue and the trail live, and their export.
		{"user store moved", managedFixture{managed: "[store]\nurl_env = \"TEAM_DB\"\n", user: "[store]\nurl_env = \"MY_DB\"\n"},
			`store.url_env = "MY_DB": fixed by the managed policy`},
		{"user lease stretched", managedFixture{managed: "[store]\nlease_secs = 10\n", user: "[store]\nlease_secs = 60\n"},
			`store.lease_secs = 60: raises the managed policy's 10`},
		{"user telemetry redirected", managedFixture{managed: "[telemetry]\notlp_endpoint = \"https://otel.corp:4318\"\n", extra: "[telemetry]\notlp_endpoint = \"\"\n"},
			`telemetry.otlp_endpoint = "": fixed by the managed policy`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.f.load(t)
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("loaded: %v; want a refusal containing %q", err, tt.want)
			}
			if len(errs.List) != 1 || !strings.Contains(errs.List[0].Error(), tt.want) {
				t.Fatalf("got:\n%v\nwant one error containing %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "only the administrator may loosen it") && tt.f.ws == "" {
				t.Errorf("the refusal does not say who may loosen it: %v", err)
			}
		})
	}
}

// Tightening below the ceiling, and restating it, are accepted; lists the
// managed file sets cannot be emptied by another source.
func TestManagedCeilingAllowsTightening(t *testing.T) {
	t.Parallel()
	f := managedFixture{
		managed: "[security]\nconfirm_mode = \"confirm-sensitive\"\nmask = [\"**/corp-secrets/**\"]\n[commands]\nmax_timeout = 120\n" +
			"[store]\nurl_env = \"TEAM_DB\"\n[telemetry]\notlp_endpoint = \"https://otel.corp:4318\"\n",
		user:  "[security]\nconfirm_mode = \"confirm-all\"\nmask = []\n[commands]\nmax_timeout = 60\n[store]\nurl_env = \"TEAM_DB\"\n",
		env:   map[string]string{"WARDEN_MAX_TIMEOUT": "90"},
		flags: Overrides{Mode: "confirm-all", NoCommands: true},
	}
	ld, err := f.load(t)
	if err != nil {
		t.Fatal(err)
	}
	c := ld.Config
	if c.Security.ConfirmMode != ModeConfirmAll || c.Commands.MaxTimeout != 90 || c.Commands.Enabled || c.Store.URLEnv != "TEAM_DB" {
		t.Errorf("effective: mode %s, max_timeout %d, commands %v, store %q", c.Security.ConfirmMode, c.Commands.MaxTimeout, c.Commands.Enabled, c.Store.URLEnv)
	}
	if !strings.Contains(strings.Join(c.Security.Mask, ","), "**/corp-secrets/**") {
		t.Errorf("the managed mask was dropped: %v", c.Security.Mask)
	}
	marked := map[string]string{}
	for _, s := range ld.Settings() {
		if s.Ceiling != "" {
			marked[s.Key] = s.Ceiling
		}
	}
	for key, line := range map[string]string{"security.confirm_mode": ":2", "commands.max_timeout": ":5", "store.url_env": ":7", "telemetry.otlp_endpoint": ":9"} {
		if !strings.HasSuffix(marked[key], "managed.toml"+line) {
			t.Errorf("config show marks %s with %q, want managed.toml%s", key, marked[key], line)
		}
	}
	// Held through its scope: a user's default could loosen the mode.
	if !strings.HasSuffix(marked["security.tool_policy.default"], "managed.toml") {
		t.Errorf("security.tool_policy.default is held by the managed mode but marked %q", marked["security.tool_policy.default"])
	}
	if marked["llm.model"] != "" || marked["commands.default_timeout"] != "" || marked["sandbox.enabled"] != "" {
		t.Errorf("keys the ceiling does not hold are marked: %v", marked)
	}
	if ld.Managed == "" || ld.CeilingOf("security.confirm_mode") == "" {
		t.Errorf("Loaded does not name the managed policy")
	}
	if got := ld.Origin["security.mask"]; !strings.Contains(got, "managed:") {
		t.Errorf("origin of the mask %q does not name the managed file", got)
	}
}

// A managed policy that someone other than root could write is refused
// loudly: the load fails, it is not ignored.
func TestManagedFileOwnerAndMode(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, mode os.FileMode) string {
		dir := t.TempDir()
		p := filepath.Join(dir, "managed.toml")
		if err := os.WriteFile(p, []byte("[security]\nconfirm_mode = \"confirm-all\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	load := func(p string) error {
		_, err := Load(LoadOptions{UserFile: "-", WorkspaceDir: t.TempDir(), ManagedFile: p})
		return err
	}
	for _, tt := range []struct {
		name string
		mode os.FileMode
		want string
	}{
		{"group-writable", 0o664, "writable by group or others (mode 0664)"},
		{"world-writable", 0o646, "writable by group or others (mode 0646)"},
	} {
		if err := load(write(t, tt.mode)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	// A writable directory above it lets anyone swap the file.
	p := write(t, 0o644)
	if err := os.Chmod(filepath.Dir(p), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := load(p); err == nil || !strings.Contains(err.Error(), "the directory") {
		t.Errorf("writable directory: %v", err)
	}
	// Not a regular file.
	fifo := filepath.Join(t.TempDir(), "managed.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := load(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: %v", err)
	}
	// Missing: no ceiling, no error.
	if err := load(filepath.Join(t.TempDir(), "none.toml")); err != nil {
		t.Errorf("no managed file: %v", err)
	}
	// Invalid: the load fails with the managed file's line.
	bad := write(t, 0o644)
	os.WriteFile(bad, []byte("[security]\nconfirm_mode = \"sometimes\"\n"), 0o644)
	if err := load(bad); err == nil || !strings.Contains(err.Error(), "managed.toml:2") {
		t.Errorf("invalid managed file: %v", err)
	}
}

// Owned by a user other than root (and than the one running the tests):
// refused, directly or through a symlink.
func TestManagedFileForeignOwner(t *testing.T) {
	testenv.Need(t, "root")
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "managed.toml")
	if err := os.WriteFile(p, []byte("[security]\nconfirm_mode = \"confirm-all\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{p, link} {
		_, err := Load(LoadOptions{UserFile: "-", WorkspaceDir: dir, ManagedFile: path})
		if err == nil || !strings.Contains(err.Error(), "owned by uid 65534, not root") {
			t.Errorf("%s: %v", path, err)
		}
	}
}

func TestManagedOverride(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		euid   int
		inTest bool
		want   bool
	}{{0, false, true}, {1000, true, true}, {1000, false, false}} {
		if got := overrideAllowed(tt.euid, tt.inTest); got != tt.want {
			t.Errorf("overrideAllowed(%d, %v) = %v", tt.euid, tt.inTest, got)
		}
	}
	getenv := func(k string) (string, bool) {
		if k == ManagedEnv {
			return "/tmp/x.toml", true
		}
		return "", false
	}
	if p, warn := ManagedPath(getenv); p != "/tmp/x.toml" || warn != "" { // a test binary
		t.Errorf("ManagedPath in a test = %q, %q", p, warn)
	}
	if p, _ := ManagedPath(func(string) (string, bool) { return "", false }); p != DefaultManagedFile {
		t.Errorf("default ManagedPath = %q", p)
	}
}

func TestCheckManaged(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "managed.toml")
	getenv := func(k string) (string, bool) {
		if k == ManagedEnv {
			return p, true
		}
		return "", false
	}
	if _, found, err := CheckManaged(getenv); found || err != nil {
		t.Errorf("no file: found %v, %v", found, err)
	}
	os.WriteFile(p, []byte("[commands]\nmax_timeout = 0\n"), 0o644)
	if _, found, err := CheckManaged(getenv); !found || err == nil || !strings.Contains(err.Error(), "managed.toml:2") {
		t.Errorf("bad value: found %v, %v", found, err)
	}
	os.WriteFile(p, []byte("[commands]\nmax_timeout = 60\n"), 0o644)
	if _, found, err := CheckManaged(getenv); !found || err != nil {
		t.Errorf("good file: found %v, %v", found, err)
	}
	os.Chmod(p, 0o666)
	if _, _, err := CheckManaged(getenv); err == nil {
		t.Error("world-writable file passed the check")
	}
}
