package config

// Config is warden's effective configuration. Field names and their toml/yaml
// keys are a contract: other packages and users' files depend on them.
type Config struct {
	Workspace Workspace        `toml:"workspace" yaml:"workspace" json:"workspace"`
	Commands  Commands         `toml:"commands" yaml:"commands" json:"commands"`
	Security  Security         `toml:"security" yaml:"security" json:"security"`
	Hooks     Hooks            `toml:"hooks" yaml:"hooks" json:"hooks"`
	Sandbox   *Sandbox         `toml:"sandbox" yaml:"sandbox" json:"sandbox,omitempty"`
	LLM       LLM              `toml:"llm" yaml:"llm" json:"llm"`
	MCP       MCP              `toml:"mcp" yaml:"mcp" json:"mcp"`
	Agents    map[string]Agent `toml:"agents" yaml:"agents" json:"agents,omitempty"`
	Store     Store            `toml:"store" yaml:"store" json:"store"`
	Telemetry Telemetry        `toml:"telemetry" yaml:"telemetry" json:"telemetry"`
	// Checkpoints is [checkpoints] (checkpoints.go).
	Checkpoints Checkpoints `toml:"checkpoints" yaml:"checkpoints" json:"checkpoints"`

	// DryRun is set by --dry-run only: nothing is executed.
	DryRun bool `toml:"-" yaml:"-" json:"dry_run,omitempty"`
}

// Workspace is the [workspace] section.
type Workspace struct {
	// Root is the workspace directory; default the current directory.
	Root        string `toml:"root" yaml:"root" json:"root"`
	AllowDelete bool   `toml:"allow_delete" yaml:"allow_delete" json:"allow_delete"`
}

// Commands is the [commands] section (run_command).
type Commands struct {
	Enabled        bool `toml:"enabled" yaml:"enabled" json:"enabled"`
	AllowedOnly    bool `toml:"allowed_only" yaml:"allowed_only" json:"allowed_only"`
	DefaultTimeout int  `toml:"default_timeout" yaml:"default_timeout" json:"default_timeout"` // seconds, 1..600
	// MaxTimeout caps the per-call timeout a model may ask for (seconds, 1..600).
	MaxTimeout      int      `toml:"max_timeout" yaml:"max_timeout" json:"max_timeout"`
	MaxOutputLines  int      `toml:"max_output_lines" yaml:"max_output_lines" json:"max_output_lines"` // 10..5000
	BlockedPatterns []string `toml:"blocked_patterns" yaml:"blocked_patterns" json:"blocked_patterns"`
	SafeCommands    []string `toml:"safe_commands" yaml:"safe_commands" json:"safe_commands"`
	DevCommands     []string `toml:"dev_commands" yaml:"dev_commands" json:"dev_commands"`
	EnvAllowlist    []string `toml:"env_allowlist" yaml:"env_allowlist" json:"env_allowlist"`
}

// Confirmation modes.
const (
	ModeYolo             = "yolo"
	ModeConfirmSensitive = "confirm-sensitive"
	ModeConfirmAll       = "confirm-all"
)

// Policies.
const (
	PolicyAllow      = "allow"
	PolicyDeny       = "deny"
	PolicySupervised = "supervised"
)

// Security is the [security] section.
type Security struct {
	ConfirmMode string              `toml:"confirm_mode" yaml:"confirm_mode" json:"confirm_mode"`
	Mask        []string            `toml:"mask" yaml:"mask" json:"mask"`
	Protected   []string            `toml:"protected" yaml:"protected" json:"protected"`
	ToolPolicy  ToolPolicy          `toml:"tool_policy" yaml:"tool_policy" json:"tool_policy"`
	ToolGroups  map[string][]string `toml:"tool_groups" yaml:"tool_groups" json:"tool_groups,omitempty"`
	Approval    Approval            `toml:"approval" yaml:"approval" json:"approval"`
	HTTP        HTTP                `toml:"http" yaml:"http" json:"http"`
}

// ToolPolicy is [security.tool_policy]: allow | deny | supervised.
type ToolPolicy struct {
	Default string            `toml:"default" yaml:"default" json:"default,omitempty"`
	Tools   map[string]string `toml:"tools" yaml:"tools" json:"tools,omitempty"`
	Groups  map[string]string `toml:"groups" yaml:"groups" json:"groups,omitempty"`
}

// Approval is [security.approval].
type Approval struct {
	TimeoutSecs    int           `toml:"timeout_secs" yaml:"timeout_secs" json:"timeout_secs"`
	OnTimeout      string        `toml:"on_timeout" yaml:"on_timeout" json:"on_timeout"` // deny | allow
	NotifyChannel  string        `toml:"notify_channel" yaml:"notify_channel" json:"notify_channel,omitempty"`
	NotifyChannels []string      `toml:"notify_channels" yaml:"notify_channels" json:"notify_channels,omitempty"`
	SupervisorID   string        `toml:"supervisor_id" yaml:"supervisor_id" json:"supervisor_id,omitempty"`
	Supervisors    []Supervisor  `toml:"supervisors" yaml:"supervisors" json:"supervisors,omitempty"`
	Webhook        Webhook       `toml:"webhook" yaml:"webhook" json:"webhook"`
	AutoApprove    []AutoApprove `toml:"auto_approve" yaml:"auto_approve" json:"auto_approve,omitempty"`
	// PageURL is where supervisors reach `warden serve`'s page; channels
	// put links to requests under it (e.g. "https://warden.example:8443").
	PageURL string `toml:"page_url" yaml:"page_url" json:"page_url,omitempty"`
	// GrantMaxMinutes caps "approve and allow this exact call for this
	// session for N minutes" (default 60, 1..1440).
	GrantMaxMinutes int `toml:"grant_max_minutes" yaml:"grant_max_minutes" json:"grant_max_minutes"`
	// MCPWaitSecs is how long a supervised MCP call waits for a person
	// before it answers the model that a person has been asked and that the
	// same call can be made again (the request stays pending); below the
	// 60 s after which MCP clients give up (default 50, 1..86400).
	MCPWaitSecs int         `toml:"mcp_wait_secs" yaml:"mcp_wait_secs" json:"mcp_wait_secs"`
	Slack       ChatWebhook `toml:"slack" yaml:"slack" json:"slack"`
	Discord     ChatWebhook `toml:"discord" yaml:"discord" json:"discord"`
	Telegram    Telegram    `toml:"telegram" yaml:"telegram" json:"telegram"`
	Email       Email       `toml:"email" yaml:"email" json:"email"`
}

// ChatWebhook is an incoming-webhook channel (Slack, Discord). The webhook
// URL is itself the secret, so it is read from the variable URLEnv names.
type ChatWebhook struct {
	URLEnv string `toml:"url_env" yaml:"url_env" json:"url_env,omitempty"`
}

// Telegram is the Telegram Bot API channel.
type Telegram struct {
	// APIURL is the Bot API base URL (default https://api.telegram.org).
	APIURL      string `toml:"api_url" yaml:"api_url" json:"api_url,omitempty"`
	BotTokenEnv string `toml:"bot_token_env" yaml:"bot_token_env" json:"bot_token_env,omitempty"`
	// ChatIDs are the supervisors' chats: only updates from these decide.
	ChatIDs []int64 `toml:"chat_ids" yaml:"chat_ids" json:"chat_ids,omitempty"`
}

// Email is the SMTP channel (STARTTLS required).
type Email struct {
	SMTPAddr    string   `toml:"smtp_addr" yaml:"smtp_addr" json:"smtp_addr,omitempty"` // host:port
	From        string   `toml:"from" yaml:"from" json:"from,omitempty"`
	To          []string `toml:"to" yaml:"to" json:"to,omitempty"`
	UsernameEnv string   `toml:"username_env" yaml:"username_env" json:"username_env,omitempty"`
	PasswordEnv string   `toml:"password_env" yaml:"password_env" json:"password_env,omitempty"`
	// CAFile adds a CA for the SMTP server's certificate (PEM).
	CAFile string `toml:"ca_file" yaml:"ca_file" json:"ca_file,omitempty"`
}

// Supervisor may decide approval requests with its token: from the file
// TokenFile names (which only its owner may read), else from the
// environment variable TokenEnv names. `warden approvals` takes the
// supervisor's token from TokenEnv or asks for it on the terminal.
type Supervisor struct {
	ID        string `toml:"id" yaml:"id" json:"id"`
	TokenEnv  string `toml:"token_env" yaml:"token_env" json:"token_env"`
	TokenFile string `toml:"token_file" yaml:"token_file" json:"token_file,omitempty"`
}

// Webhook is the webhook approval channel.
type Webhook struct {
	URL       string `toml:"url" yaml:"url" json:"url,omitempty"`
	SecretEnv string `toml:"secret_env" yaml:"secret_env" json:"secret_env,omitempty"`
}

// AutoApprove is one [[security.approval.auto_approve]] rule (RE2 patterns).
type AutoApprove struct {
	Tool           string `toml:"tool" yaml:"tool" json:"tool"`
	CommandPattern string `toml:"command_pattern" yaml:"command_pattern" json:"command_pattern,omitempty"`
	PathPattern    string `toml:"path_pattern" yaml:"path_pattern" json:"path_pattern,omitempty"`
	URLPattern     string `toml:"url_pattern" yaml:"url_pattern" json:"url_pattern,omitempty"`
	ArgsPattern    string `toml:"args_pattern" yaml:"args_pattern" json:"args_pattern,omitempty"`
	// File and Line are where the rule was written, for error messages
	// and for explain.
	File string `toml:"-" yaml:"-" json:"-"`
	Line int    `toml:"-" yaml:"-" json:"-"`
}

// HTTP is [security.http], for http_request.
type HTTP struct {
	// AllowHosts lists host names, IPs or CIDRs that may be reached even
	// though they are loopback, private, link-local or metadata addresses.
	AllowHosts   []string `toml:"allow_hosts" yaml:"allow_hosts" json:"allow_hosts"`
	TimeoutSecs  int      `toml:"timeout_secs" yaml:"timeout_secs" json:"timeout_secs"`       // 1..300
	MaxBodyBytes int64    `toml:"max_body_bytes" yaml:"max_body_bytes" json:"max_body_bytes"` // response cap
}

// Hooks is the [hooks] section.
type Hooks struct {
	PostEdit []Hook `toml:"post_edit" yaml:"post_edit" json:"post_edit,omitempty"`
	// Approval is how `warden hook HOST` answers a supervised call of an
	// agent host: "warden" (default) puts it to warden's approval flow and
	// waits up to WaitSecs; "host" leaves it to the host's own prompt where
	// the host has one that holds (Claude Code), else acts as "warden".
	Approval string `toml:"approval" yaml:"approval" json:"approval"`
	// WaitSecs is how long a hook waits for a person before it denies the
	// call with the request id (the request stays pending: the same call
	// made again runs once approved); keep it below the host's hook
	// timeout (default 50, 0..3600).
	WaitSecs int `toml:"wait_secs" yaml:"wait_secs" json:"wait_secs"`
}

// Hook approval modes.
const (
	HookApprovalWarden = "warden"
	HookApprovalHost   = "host"
)

// Hook is one [[hooks.post_edit]] command.
type Hook struct {
	Name         string   `toml:"name" yaml:"name" json:"name"`
	Command      string   `toml:"command" yaml:"command" json:"command"`
	FilePatterns []string `toml:"file_patterns" yaml:"file_patterns" json:"file_patterns"`
	Timeout      int      `toml:"timeout" yaml:"timeout" json:"timeout"` // seconds, 1..300, default 15
}

// Sandbox is the [sandbox] section; nil when absent.
type Sandbox struct {
	Enabled     bool     `toml:"enabled" yaml:"enabled" json:"enabled"`
	Backend     string   `toml:"backend" yaml:"backend" json:"backend"` // local | docker | ssh | modal
	RWPaths     []string `toml:"rw_paths" yaml:"rw_paths" json:"rw_paths"`
	ROPaths     []string `toml:"ro_paths" yaml:"ro_paths" json:"ro_paths"`
	Mask        []string `toml:"mask" yaml:"mask" json:"mask"`
	NoGPU       bool     `toml:"no_gpu" yaml:"no_gpu" json:"no_gpu"`
	Lockdown    bool     `toml:"lockdown" yaml:"lockdown" json:"lockdown"`
	Network     bool     `toml:"-" yaml:"-" json:"host_network,omitempty"`             // the host's network: NetworkMode == "host"
	Landlock    string   `toml:"landlock" yaml:"landlock" json:"landlock"`             // auto | on | off
	IdleTimeout int      `toml:"idle_timeout" yaml:"idle_timeout" json:"idle_timeout"` // seconds

	// network = "none" | "allowlist" | "host", and [sandbox.egress]
	// (egress.go).
	NetworkMode NetworkMode `toml:"network" yaml:"network" json:"network"`
	Egress      Egress      `toml:"egress" yaml:"egress" json:"egress"`

	// docker backend: the image the workspace's container runs, and its
	// memory limit in MiB (default 2048).
	DockerImage string `toml:"docker_image" yaml:"docker_image" json:"docker_image,omitempty"`
	MemoryMB    int    `toml:"memory_mb" yaml:"memory_mb" json:"memory_mb,omitempty"`

	// ssh backend. IdentityFile empty: the ssh agent (SSH_AUTH_SOCK).
	// KnownHosts default ~/.ssh/known_hosts; an unknown host key is refused.
	// RemotePath is the workspace on the remote host (default: the same
	// path); RemoteWarden the warden binary there (default "warden").
	RemoteHost   string `toml:"remote_host" yaml:"remote_host" json:"remote_host,omitempty"`
	RemotePort   int    `toml:"remote_port" yaml:"remote_port" json:"remote_port,omitempty"`
	RemoteUser   string `toml:"remote_user" yaml:"remote_user" json:"remote_user,omitempty"`
	IdentityFile string `toml:"identity_file" yaml:"identity_file" json:"identity_file,omitempty"`
	KnownHosts   string `toml:"known_hosts" yaml:"known_hosts" json:"known_hosts,omitempty"`
	RemotePath   string `toml:"remote_path" yaml:"remote_path" json:"remote_path,omitempty"`
	RemoteWarden string `toml:"remote_warden" yaml:"remote_warden" json:"remote_warden,omitempty"`
	// Invalid is set when the [sandbox] section could not be used as written:
	// the sandbox then runs in lockdown (fail closed), never unsandboxed.
	Invalid string `toml:"-" yaml:"-" json:"invalid,omitempty"`
}

// LLM is the [llm] section.
type LLM struct {
	BaseURL   string           `toml:"base_url" yaml:"base_url" json:"base_url,omitempty"`
	Model     string           `toml:"model" yaml:"model" json:"model,omitempty"`
	APIKeyEnv string           `toml:"api_key_env" yaml:"api_key_env" json:"api_key_env,omitempty"`
	Timeout   int              `toml:"timeout" yaml:"timeout" json:"timeout"`
	Retries   int              `toml:"retries" yaml:"retries" json:"retries"`
	Prices    map[string]Price `toml:"prices" yaml:"prices" json:"prices,omitempty"`
}

// Price is USD per million tokens.
type Price struct {
	Input  float64 `toml:"input" yaml:"input" json:"input"`
	Output float64 `toml:"output" yaml:"output" json:"output"`
}

// MCP is the [mcp] section.
type MCP struct {
	Servers []MCPServer `toml:"servers" yaml:"servers" json:"servers,omitempty"`
}

// MCPServer is one [[mcp.servers]] entry: url for HTTP, command for stdio.
type MCPServer struct {
	Name     string   `toml:"name" yaml:"name" json:"name"`
	URL      string   `toml:"url" yaml:"url" json:"url,omitempty"`
	Token    string   `toml:"token" yaml:"token" json:"-"`
	TokenEnv string   `toml:"token_env" yaml:"token_env" json:"token_env,omitempty"`
	Timeout  int      `toml:"timeout" yaml:"timeout" json:"timeout"`
	Command  string   `toml:"command" yaml:"command" json:"command,omitempty"`
	Args     []string `toml:"args" yaml:"args" json:"args,omitempty"`
}

// Agent is one [agents.NAME] section.
type Agent struct {
	AllowedTools []string `toml:"allowed_tools" yaml:"allowed_tools" json:"allowed_tools"`
	ConfirmMode  string   `toml:"confirm_mode" yaml:"confirm_mode" json:"confirm_mode,omitempty"`
	MaxSteps     int      `toml:"max_steps" yaml:"max_steps" json:"max_steps,omitempty"`
}

// Default returns the built-in defaults.
func Default() *Config {
	return &Config{
		Commands: Commands{
			Enabled:        true,
			DefaultTimeout: 30,
			MaxTimeout:     600,
			MaxOutputLines: 200,
		},
		Security: Security{
			ConfirmMode: ModeConfirmSensitive,
			Approval:    Approval{TimeoutSecs: 300, OnTimeout: PolicyDeny, MCPWaitSecs: 50},
			HTTP:        HTTP{TimeoutSecs: 30, MaxBodyBytes: 1 << 20},
		},
		Hooks:       Hooks{Approval: HookApprovalWarden, WaitSecs: 50},
		LLM:         LLM{Timeout: 120, Retries: 2},
		Store:       Store{LeaseSecs: 15},
		Telemetry:   Telemetry{ServiceName: "warden"},
		Checkpoints: defaultCheckpoints(),
	}
}
