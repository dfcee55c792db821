package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every validation error, in TOML and in YAML, with the exact line and
// message. want applies to both formats unless wantYAML is set.
var validationCases = []struct {
	name     string
	toml     string
	yaml     string
	want     []string
	wantYAML []string
}{
	{"default_timeout low", "[commands]\ndefault_timeout = 0\n", "commands:\n  default_timeout: 0\n",
		[]string{"2: commands.default_timeout = 0: must be between 1 and 600"}, nil},
	{"default_timeout high", "[commands]\nmax_timeout = 600\ndefault_timeout = 900\n", "commands:\n  max_timeout: 600\n  default_timeout: 900\n",
		[]string{"3: commands.default_timeout = 900: must be between 1 and 600"}, nil},
	{"default above max", "[commands]\nmax_timeout = 60\ndefault_timeout = 90\n", "commands:\n  max_timeout: 60\n  default_timeout: 90\n",
		[]string{"3: commands.default_timeout = 90: exceeds commands.max_timeout (60)"}, nil},
	{"max_timeout", "[commands]\nmax_timeout = 601\n", "commands:\n  max_timeout: 601\n",
		[]string{"2: commands.max_timeout = 601: must be between 1 and 600"}, nil},
	{"max_output_lines low", "[commands]\nmax_output_lines = 9\n", "commands:\n  max_output_lines: 9\n",
		[]string{"2: commands.max_output_lines = 9: must be between 10 and 5000"}, nil},
	{"max_output_lines high", "[commands]\nmax_output_lines = 5001\n", "commands:\n  max_output_lines: 5001\n",
		[]string{"2: commands.max_output_lines = 5001: must be between 10 and 5000"}, nil},
	{"blocked pattern", "[commands]\nblocked_patterns = [\"ok\", \"(\"]\n", "commands:\n  blocked_patterns: [ok, \"(\"]\n",
		[]string{"2: commands.blocked_patterns[1] = \"(\": invalid regular expression: missing closing ): `(`"}, nil},
	{"env allowlist", "[commands]\nenv_allowlist = [\"PATH\", \"A B\"]\n", "commands:\n  env_allowlist: [PATH, A B]\n",
		[]string{"2: commands.env_allowlist[1] = \"A B\": not an environment variable name (a trailing * is allowed)"}, nil},
	{"confirm_mode", "[security]\nconfirm_mode = \"sometimes\"\n", "security:\n  confirm_mode: sometimes\n",
		[]string{"2: security.confirm_mode = \"sometimes\": must be one of yolo, confirm-sensitive, confirm-all"}, nil},
	{"mask glob", "[security]\nmask = [\"a{b\"]\n", "security:\n  mask: [\"a{b\"]\n",
		[]string{"2: security.mask[0] = \"a{b\": invalid glob pattern"}, nil},
	{"protected empty", "[security]\nprotected = [\"\"]\n", "security:\n  protected: [\"\"]\n",
		[]string{"2: security.protected[0] = \"\": must not be empty"}, nil},
	{"tool policy value", "[security.tool_policy]\ndefault = \"maybe\"\n", "security:\n  tool_policy: {default: maybe}\n",
		[]string{"2: security.tool_policy.default = \"maybe\": must be one of allow, deny, supervised"}, nil},
	{"tool policy unknown tool", "[security.tool_policy.tools]\nrm_rf = \"deny\"\n", "security:\n  tool_policy:\n    tools: {rm_rf: deny}\n",
		[]string{"2: security.tool_policy.tools.rm_rf: unknown tool (built-in tools: read_file, write_file, edit_file, apply_patch, delete_file, list_files, search_code, grep, find_files, run_command, http_request; remote tools: mcp__<server>__<tool>)"},
		[]string{"3: security.tool_policy.tools.rm_rf: unknown tool (built-in tools: read_file, write_file, edit_file, apply_patch, delete_file, list_files, search_code, grep, find_files, run_command, http_request; remote tools: mcp__<server>__<tool>)"}},
	{"alias conflict", "[security.tool_policy.tools]\nrun_command = \"deny\"\nterminal = \"allow\"\n", "security:\n  tool_policy:\n    tools: {run_command: deny, terminal: allow}\n",
		[]string{"3: security.tool_policy.tools.terminal = \"allow\": conflicts with run_command = \"deny\" (both name run_command)"},
		[]string{"3: security.tool_policy.tools.terminal = \"allow\": conflicts with run_command = \"deny\" (both name run_command)"}},
	{"unknown group", "[security.tool_policy.groups]\nnope = \"deny\"\n", "security:\n  tool_policy:\n    groups: {nope: deny}\n",
		[]string{"2: security.tool_policy.groups.nope: unknown group (define it in [security.tool_groups])"},
		[]string{"3: security.tool_policy.groups.nope: unknown group (define it in [security.tool_groups])"}},
	{"redefine builtin group", "[security.tool_groups]\nshell = [\"read_file\"]\n", "security:\n  tool_groups: {shell: [read_file]}\n",
		[]string{"2: security.tool_groups.shell: \"shell\" is a built-in group and cannot be redefined"}, nil},
	{"approval timeout low", "[security.approval]\ntimeout_secs = 0\n", "security:\n  approval: {timeout_secs: 0}\n",
		[]string{"2: security.approval.timeout_secs = 0: must be between 1 and 86400"}, nil},
	{"approval timeout high", "[security.approval]\ntimeout_secs = 86401\n", "security:\n  approval: {timeout_secs: 86401}\n",
		[]string{"2: security.approval.timeout_secs = 86401: must be between 1 and 86400"}, nil},
	{"on_timeout", "[security.approval]\non_timeout = \"ask\"\n", "security:\n  approval: {on_timeout: ask}\n",
		[]string{"2: security.approval.on_timeout = \"ask\": must be one of deny, allow"}, nil},
	{"auto_approve regex", "[[security.approval.auto_approve]]\ntool = \"run_command\"\ncommand_pattern = \"^ls (\"\n",
		"security:\n  approval:\n    auto_approve:\n      - tool: run_command\n        command_pattern: \"^ls (\"\n",
		[]string{"3: security.approval.auto_approve[0].command_pattern = \"^ls (\": invalid regular expression: missing closing ): `^ls (`"},
		[]string{"5: security.approval.auto_approve[0].command_pattern = \"^ls (\": invalid regular expression: missing closing ): `^ls (`"}},
	{"auto_approve no pattern", "[[security.approval.auto_approve]]\ntool = \"read_file\"\n",
		"security:\n  approval:\n    auto_approve:\n      - tool: read_file\n",
		[]string{"1: security.approval.auto_approve[0]: needs command_pattern, path_pattern, url_pattern or args_pattern"},
		[]string{"4: security.approval.auto_approve[0]: needs command_pattern, path_pattern, url_pattern or args_pattern"}},
	{"supervisor token_env", "[[security.approval.supervisors]]\nid = \"ana\"\ntoken_env = \"not a var\"\n",
		"security:\n  approval:\n    supervisors:\n      - id: ana\n        token_env: not a var\n",
		[]string{"3: security.approval.supervisors[0].token_env = \"not a var\": must name the environment variable holding the supervisor's token (or set token_file)"},
		[]string{"5: security.approval.supervisors[0].token_env = \"not a var\": must name the environment variable holding the supervisor's token (or set token_file)"}},
	{"supervisor token_file relative", "[[security.approval.supervisors]]\nid = \"ana\"\ntoken_file = \"tok\"\n",
		"security:\n  approval:\n    supervisors:\n      - id: ana\n        token_file: tok\n",
		[]string{"3: security.approval.supervisors[0].token_file = \"tok\": must be an absolute path to a file only you can read (chmod 600)"},
		[]string{"5: security.approval.supervisors[0].token_file = \"tok\": must be an absolute path to a file only you can read (chmod 600)"}},
	{"unknown channel", "[security.approval]\nnotify_channels = [\"slack\", \"telegarm\"]\n", "security:\n  approval:\n    notify_channels: [slack, telegarm]\n",
		[]string{"2: security.approval.notify_channels[1] = \"telegarm\": must be one of api, cli, webhook, remote, page, slack, discord, telegram, email, terminal"},
		[]string{"3: security.approval.notify_channels[1] = \"telegarm\": must be one of api, cli, webhook, remote, page, slack, discord, telegram, email, terminal"}},
	{"webhook url", "[security.approval.webhook]\nurl = \"ftp://x\"\n", "security:\n  approval:\n    webhook: {url: \"ftp://x\"}\n",
		[]string{"2: security.approval.webhook.url = \"ftp://x\": must be an http:// or https:// URL"},
		[]string{"3: security.approval.webhook.url = \"ftp://x\": must be an http:// or https:// URL"}},
	{"http timeout", "[security.http]\ntimeout_secs = 301\n", "security:\n  http: {timeout_secs: 301}\n",
		[]string{"2: security.http.timeout_secs = 301: must be between 1 and 300"}, nil},
	{"http allow host", "[security.http]\nallow_hosts = [\"10.0.0.0/8\", \"::1\", \"a b\"]\n", "security:\n  http: {allow_hosts: [10.0.0.0/8, \"::1\", a b]}\n",
		[]string{"2: security.http.allow_hosts[2] = \"a b\": must be a host name, an IP address or a CIDR"}, nil},
	{"hook timeout high", "[[hooks.post_edit]]\ncommand = \"gofmt -l {file}\"\ntimeout = 301\n", "hooks:\n  post_edit:\n    - command: gofmt -l {file}\n      timeout: 301\n",
		[]string{"3: hooks.post_edit[0].timeout = 301: must be between 1 and 300"},
		[]string{"4: hooks.post_edit[0].timeout = 301: must be between 1 and 300"}},
	{"hook timeout zero", "[[hooks.post_edit]]\ncommand = \"x\"\ntimeout = 0\n", "hooks:\n  post_edit:\n    - command: x\n      timeout: 0\n",
		[]string{"3: hooks.post_edit[0].timeout = 0: must be between 1 and 300"},
		[]string{"4: hooks.post_edit[0].timeout = 0: must be between 1 and 300"}},
	{"hook without command", "[[hooks.post_edit]]\nname = \"lint\"\n", "hooks:\n  post_edit:\n    - name: lint\n",
		[]string{"1: hooks.post_edit[0].command: a hook needs a command"},
		[]string{"3: hooks.post_edit[0].command: a hook needs a command"}},
	{"sandbox backend", "[sandbox]\nbackend = \"qemu\"\n", "sandbox:\n  backend: qemu\n",
		[]string{"2: sandbox.backend = \"qemu\": must be one of local, docker, ssh, modal"}, nil},
	{"sandbox landlock", "[sandbox]\nlandlock = \"maybe\"\n", "sandbox:\n  landlock: maybe\n",
		[]string{"2: sandbox.landlock = \"maybe\": must be one of auto, on, off"}, nil},
	{"sandbox idle", "[sandbox]\nidle_timeout = 0\n", "sandbox:\n  idle_timeout: 0\n",
		[]string{"2: sandbox.idle_timeout = 0: must be at least 1 (seconds)"}, nil},
	{"llm retries high", "[llm]\nretries = 11\n", "llm:\n  retries: 11\n",
		[]string{"2: llm.retries = 11: must be between 0 and 10"}, nil},
	{"llm retries negative", "[llm]\nretries = -1\n", "llm:\n  retries: -1\n",
		[]string{"2: llm.retries = -1: must be between 0 and 10"}, nil},
	{"llm price", "[llm.prices.\"gpt-4.1\"]\ninput = -1\n", "llm:\n  prices:\n    gpt-4.1: {input: -1}\n",
		[]string{"2: llm.prices.\"gpt-4.1\".input = -1: must be a price of 0 or more (USD per million tokens)"},
		[]string{"3: llm.prices.\"gpt-4.1\".input = -1: must be a price of 0 or more (USD per million tokens)"}},
	{"mcp name", "[[mcp.servers]]\nname = \"a b\"\nurl = \"https://x\"\n", "mcp:\n  servers:\n    - name: a b\n      url: https://x\n",
		[]string{"2: mcp.servers[0].name = \"a b\": server names are made of letters, digits, _ and -"},
		[]string{"3: mcp.servers[0].name = \"a b\": server names are made of letters, digits, _ and -"}},
	{"mcp duplicate", "[[mcp.servers]]\nname = \"a\"\nurl = \"https://x\"\n[[mcp.servers]]\nname = \"a\"\ncommand = \"srv\"\n",
		"mcp:\n  servers:\n    - name: a\n      url: https://x\n    - name: a\n      command: srv\n",
		[]string{"5: mcp.servers[1].name = \"a\": duplicate server name (also mcp.servers[0])"},
		[]string{"5: mcp.servers[1].name = \"a\": duplicate server name (also mcp.servers[0])"}},
	{"mcp url and command", "[[mcp.servers]]\nname = \"a\"\nurl = \"https://x\"\ncommand = \"srv\"\n",
		"mcp:\n  servers:\n    - name: a\n      url: https://x\n      command: srv\n",
		[]string{"1: mcp.servers[0]: set either url (HTTP) or command (stdio), not both"},
		[]string{"3: mcp.servers[0]: set either url (HTTP) or command (stdio), not both"}},
	{"mcp neither", "[[mcp.servers]]\nname = \"a\"\n", "mcp:\n  servers:\n    - name: a\n",
		[]string{"1: mcp.servers[0]: needs url (HTTP) or command (stdio)"},
		[]string{"3: mcp.servers[0]: needs url (HTTP) or command (stdio)"}},
	{"agent mode", "[agents.fix]\nconfirm_mode = \"never\"\n", "agents:\n  fix: {confirm_mode: never}\n",
		[]string{"2: agents.fix.confirm_mode = \"never\": must be one of yolo, confirm-sensitive, confirm-all"}, nil},
	{"agent tool", "[agents.fix]\nallowed_tools = [\"read_file\", \"sudo\"]\n", "agents:\n  fix: {allowed_tools: [read_file, sudo]}\n",
		[]string{"2: agents.fix.allowed_tools[1] = \"sudo\": unknown tool (built-in tools: read_file, write_file, edit_file, apply_patch, delete_file, list_files, search_code, grep, find_files, run_command, http_request; remote tools: mcp__<server>__<tool>)"}, nil},
	{"unknown key", "[commands]\ndefault_timout = 30\n", "commands:\n  default_timout: 30\n",
		[]string{"2: commands.default_timout: unknown key"}, nil},
	{"unknown section", "[comands]\nenabled = true\n", "comands:\n  enabled: true\n",
		[]string{"1: comands: unknown key"}, nil},
	{"wrong type int", "[commands]\ndefault_timeout = \"30\"\n", "commands:\n  default_timeout: \"30\"\n",
		[]string{"2: commands.default_timeout = \"30\": expected integer, got string"}, nil},
	{"wrong type bool", "[workspace]\nallow_delete = \"yes\"\n", "workspace:\n  allow_delete: \"yes\"\n",
		[]string{"2: workspace.allow_delete = \"yes\": expected boolean, got string"}, nil},
	{"wrong type list", "[security]\nmask = \".env\"\n", "security:\n  mask: .env\n",
		[]string{"2: security.mask = \".env\": expected array, got string"}, nil},
	{"wrong type section", "commands = 5\n", "commands: 5\n",
		[]string{"1: commands = 5: expected table, got integer"}, nil},
	{"float into int", "[commands]\ndefault_timeout = 30.0\n", "commands:\n  default_timeout: 30.0\n",
		[]string{"2: commands.default_timeout = 30: expected integer, got float"}, nil},
	{"integer overflow", "[security.http]\ntimeout_secs = 9223372036854775807\n", "security:\n  http: {timeout_secs: 9223372036854775807}\n",
		[]string{"2: security.http.timeout_secs = 9223372036854775807: must be between 1 and 300"}, nil},
	{"store url_env", "[store]\nurl_env = \"postgres://u:pw@h/d\"\n", "store:\n  url_env: postgres://u:pw@h/d\n",
		[]string{"2: store.url_env = \"postgres://u:pw@h/d\": not an environment variable name"}, nil},
	{"store lease", "[store]\nlease_secs = 2\n", "store:\n  lease_secs: 2\n",
		[]string{"2: store.lease_secs = 2: must be between 3 and 600"}, nil},
	{"telemetry endpoint", "[telemetry]\notlp_endpoint = \"collector:4318\"\n", "telemetry:\n  otlp_endpoint: collector:4318\n",
		[]string{"2: telemetry.otlp_endpoint = \"collector:4318\": must be an http:// or https:// URL without credentials (put them in headers_env)"}, nil},
	{"telemetry credentials", "[telemetry]\notlp_endpoint = \"https://u:p@otel.corp\"\n", "telemetry:\n  otlp_endpoint: https://u:p@otel.corp\n",
		[]string{"2: telemetry.otlp_endpoint = \"https://u:p@otel.corp\": must be an http:// or https:// URL without credentials (put them in headers_env)"}, nil},
	{"telemetry clear text", "[telemetry]\notlp_endpoint = \"http://otel.corp:4318\"\n", "telemetry:\n  otlp_endpoint: http://otel.corp:4318\n",
		[]string{"2: telemetry.otlp_endpoint = \"http://otel.corp:4318\": plain http only to a loopback collector: audit events would cross the network in clear (use https)"}, nil},
	{"telemetry headers", "[telemetry]\nheaders_env = \"api-key=x\"\n", "telemetry:\n  headers_env: api-key=x\n",
		[]string{"2: telemetry.headers_env = \"api-key=x\": not an environment variable name"}, nil},
}

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range validationCases {
		for _, format := range []string{"toml", "yaml"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				doc, want := tc.toml, tc.want
				if format == "yaml" {
					doc = tc.yaml
					if tc.wantYAML != nil {
						want = tc.wantYAML
					}
				}
				path := writeFile(t, filepath.Join(t.TempDir(), "config."+format), doc)
				err := CheckFile(path, false)
				if diff := cmp.Diff(want, shorts(t, err)); diff != "" {
					t.Errorf("errors (-want +got):\n%s\nfile:\n%s", diff, doc)
				}
				for _, e := range errorList(t, err) {
					if e.File != path {
						t.Errorf("error names file %q, want %q", e.File, path)
					}
				}
			})
		}
	}
}

// The printed form: file:line:col: key = value: message, one per line.
func TestErrorFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, doc string
		want      string
	}{
		{"warden.toml", "# comment\n\n[commands]\nenabled = true\n\n\ndefault_timeout = 900\n",
			"/warden.toml:7:19: commands.default_timeout = 900: must be between 1 and 600"},
		{"config.yaml", "commands:\n  enabled: true\n  default_timeout: 900\n  max_output_lines: 1\n",
			"/config.yaml:3:20: commands.default_timeout = 900: must be between 1 and 600\n" +
				"/config.yaml:4:21: commands.max_output_lines = 1: must be between 10 and 5000"},
		{"dup.toml", "[commands]\nenabled = true\nenabled = false\n", "/dup.toml:3:1: enabled: key enabled is already defined"},
		{"dup.yaml", "commands:\n  enabled: true\n  enabled: false\n", "/dup.yaml:3:3: enabled: duplicate key (first defined at line 2)"},
		{"syntax.toml", "[commands\n", "/syntax.toml:1:10: expected ']' to close table name"},
		{"syntax.yaml", "commands:\n  a: [\n", "/syntax.yaml:2: did not find expected node content"},
		{"two.yaml", "commands: {}\n---\nllm: {}\n", "/two.yaml:2:1: more than one YAML document"},
		{"alias.yaml", "a: &x [1]\nsecurity:\n  mask: *x\n", "/alias.yaml:3:9: YAML aliases are not supported in warden configuration"},
		{"merge.yaml", "commands:\n  <<: {enabled: true}\n", "/merge.yaml:2:3: YAML merge keys (<<) are not supported in warden configuration"},
		{"tag.yaml", "commands:\n  enabled: !custom true\n", "/tag.yaml:2:12: custom YAML tag !custom is not supported"},
		{"list.yaml", "- a\n- b\n", "/list.yaml:1:1: the document must be a mapping of sections"},
	} {
		path := writeFile(t, filepath.Join(dir, tc.name), tc.doc)
		err := CheckFile(path, false)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if got := stripDir(err.Error(), dir); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// All the errors of a file are reported, not just the first.
func TestCollectsEveryError(t *testing.T) {
	t.Parallel()
	doc := `[commands]
default_timeout = "x"
max_output_lines = 1
bogus = true
[security]
confirm_mode = "sometimes"
mask = 3
[llm]
retries = 99
[nonsense]
`
	path := writeFile(t, filepath.Join(t.TempDir(), "config.toml"), doc)
	want := []string{
		`2: commands.default_timeout = "x": expected integer, got string`,
		`3: commands.max_output_lines = 1: must be between 10 and 5000`,
		`4: commands.bogus: unknown key`,
		`6: security.confirm_mode = "sometimes": must be one of yolo, confirm-sensitive, confirm-all`,
		`7: security.mask = 3: expected array, got integer`,
		`9: llm.retries = 99: must be between 0 and 10`,
		`10: nonsense: unknown key`,
	}
	if diff := cmp.Diff(want, shorts(t, CheckFile(path, false))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A valid file decodes to the same values in TOML, in YAML, and with the
// libraries' own strict decoders.
func TestFormatsAgree(t *testing.T) {
	t.Parallel()
	fromTOML := decodeOK(t, "toml", fullTOML)
	fromYAML := decodeOK(t, "yaml", fullYAML)
	if diff := cmp.Diff(fromTOML, fromYAML); diff != "" {
		t.Errorf("TOML and YAML disagree (-toml +yaml):\n%s", diff)
	}
	for _, format := range []string{"toml", "yaml"} {
		doc := map[string]string{"toml": fullTOML, "yaml": fullYAML}[format]
		lib, err := libDecode(format, []byte(doc))
		if err != nil {
			t.Fatalf("%s: library decoder: %v", format, err)
		}
		if diff := cmp.Diff(lib, decodeOK(t, format, doc)); diff != "" {
			t.Errorf("%s: library and warden decoders disagree (-lib +warden):\n%s", format, diff)
		}
	}
}

func decodeOK(t *testing.T, format, doc string) *Config {
	t.Helper()
	var root *node
	var err error
	if format == "toml" {
		root, err = parseTOML("f", []byte(doc))
	} else {
		root, err = parseYAML("f", []byte(doc))
	}
	if err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	l := decodeLayer("f", root)
	if len(l.errs.list)+len(l.sandboxErrs.list) > 0 {
		t.Fatalf("%s: %v %v", format, l.errs.err(), l.sandboxErrs.err())
	}
	return l.cfg
}

const fullTOML = `
[workspace]
allow_delete = false

[commands]
enabled = true
allowed_only = true
default_timeout = 0x1e
max_timeout = 1_20
max_output_lines = 300
blocked_patterns = ['^terraform\s+destroy']
safe_commands = ["make"]
dev_commands = ["cargo"]
env_allowlist = ["LANG", "LC_*"]

[security]
confirm_mode = "confirm-all"
mask = ["secrets/**"]
protected = ["go.mod"]

[security.tool_policy]
default = "supervised"
tools = { read_file = "allow" }
groups = { network = "deny" }

[security.tool_groups]
edits = ["write_file", "edit_file"]

[security.approval]
timeout_secs = 120
on_timeout = "deny"
notify_channels = ["terminal"]
supervisors = [{ id = "ana", token_env = "ANA_TOKEN" }]
webhook = { url = "https://hooks.example/warden", secret_env = "HOOK_SECRET" }

[[security.approval.auto_approve]]
tool = "run_command"
command_pattern = '^go test( |$)'

[security.http]
allow_hosts = ["127.0.0.1"]
timeout_secs = 10
max_body_bytes = 65536

[[hooks.post_edit]]
name = "fmt"
command = "gofmt -l {file}"
file_patterns = ["*.go"]
timeout = 10

[sandbox]
enabled = true
backend = "local"
rw_paths = ["."]
ro_paths = []
mask = [".env"]
no_gpu = true
lockdown = false
network = false
landlock = "on"
idle_timeout = 300

[llm]
base_url = "http://127.0.0.1:11434/v1"
model = "qwen"
api_key_env = "OPENAI_API_KEY"
timeout = 60
retries = 3
prices = { qwen = { input = 0.5, output = 1 } }

[[mcp.servers]]
name = "docs"
url = "https://mcp.example/mcp"
token_env = "DOCS_TOKEN"
timeout = 20

[agents.fix]
allowed_tools = ["read_file", "edit_file"]
confirm_mode = "confirm-all"
max_steps = 12
`

const fullYAML = `
workspace:
  allow_delete: false
commands:
  enabled: true
  allowed_only: true
  default_timeout: 0x1e
  max_timeout: 120
  max_output_lines: 300
  blocked_patterns: ['^terraform\s+destroy']
  safe_commands: [make]
  dev_commands: [cargo]
  env_allowlist: [LANG, LC_*]
security:
  confirm_mode: confirm-all
  mask: [secrets/**]
  protected: [go.mod]
  tool_policy:
    default: supervised
    tools: {read_file: allow}
    groups: {network: deny}
  tool_groups:
    edits: [write_file, edit_file]
  approval:
    timeout_secs: 120
    on_timeout: deny
    notify_channels: [terminal]
    supervisors: [{id: ana, token_env: ANA_TOKEN}]
    webhook: {url: "https://hooks.example/warden", secret_env: HOOK_SECRET}
    auto_approve:
      - tool: run_command
        command_pattern: '^go test( |$)'
  http:
    allow_hosts: [127.0.0.1]
    timeout_secs: 10
    max_body_bytes: 65536
hooks:
  post_edit:
    - name: fmt
      command: gofmt -l {file}
      file_patterns: ["*.go"]
      timeout: 10
sandbox:
  enabled: true
  backend: local
  rw_paths: [.]
  ro_paths: []
  mask: [.env]
  no_gpu: true
  lockdown: false
  network: false
  landlock: "on"
  idle_timeout: 300
llm:
  base_url: http://127.0.0.1:11434/v1
  model: qwen
  api_key_env: OPENAI_API_KEY
  timeout: 60
  retries: 3
  prices: {qwen: {input: 0.5, output: 1}}
mcp:
  servers:
    - name: docs
      url: https://mcp.example/mcp
      token_env: DOCS_TOKEN
      timeout: 20
agents:
  fix:
    allowed_tools: [read_file, edit_file]
    confirm_mode: confirm-all
    max_steps: 12
`

func TestFullExampleLoads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc string }{{"config.toml", fullTOML}, {"config.yaml", fullYAML}} {
		ld, err := setup{user: tc.doc, userName: tc.name}.loadNoErr(t)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c := ld.Config
		if c.Commands.DefaultTimeout != 30 || c.Sandbox == nil || c.Sandbox.Landlock != "on" || c.Security.Approval.AutoApprove[0].Line == 0 {
			t.Errorf("%s: unexpected config %+v", tc.name, c)
		}
		if len(ld.Warnings) != 0 {
			t.Errorf("%s: warnings %v", tc.name, ld.Warnings)
		}
		if !strings.HasPrefix(ld.Origin["commands.default_timeout"], "user:") {
			t.Errorf("%s: origin %q", tc.name, ld.Origin["commands.default_timeout"])
		}
	}
}

func (s setup) loadNoErr(t *testing.T) (*Loaded, error) {
	ld, _, _, err := s.load(t)
	return ld, err
}
