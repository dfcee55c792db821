package hostsetup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"

	"github.com/wardenhq/warden/internal/config"
)

// Hosts are the hosts Plan knows.
var Hosts = []string{"claude-code", "codex", "gemini-cli", "cursor"}

// Options say what to set up.
type Options struct {
	Host string
	// Warden is the absolute path of the warden program the host runs.
	Warden string
	// Home is the user's home directory; the hosts' user-level files live
	// under it (Codex's under CodexHome when set).
	Home      string
	CodexHome string
	// Workspace, when set, is passed to `warden mcp --workspace`; else the
	// host starts warden in its own project directory.
	Workspace string
	// ConfigFile, when set, is passed as --config (a file the user named).
	ConfigFile string
	// DB, when set, is passed as --db.
	DB string
	// Config is the user's effective configuration: the secrets it names
	// and its waits.
	Config *config.Config
	// Getenv reads the user's environment, to pass through the variables
	// warden reads that are set (XDG_CONFIG_HOME, WARDEN_DB, ...).
	Getenv func(string) string
	// Exclusive denies the host's own file, shell and web tools, so that
	// warden's MCP tools are the only path (Claude Code, Gemini CLI).
	Exclusive bool
	// Managed writes Codex's hook into /etc/codex/requirements.toml, where
	// it needs no trust (root only), instead of ~/.codex/hooks.json.
	Managed bool
	// Now stamps backups; default time.Now.
	Now func() time.Time
}

// File is one planned file change.
type File struct {
	Path   string
	Before []byte // nil when the file does not exist
	After  []byte
	Mode   fs.FileMode
	// Why says what warden's entries there do.
	Why string
	// check reports what warden's entries lack in a content (Before).
	check func(content []byte) []string
}

// Changed reports whether the file changes.
func (f *File) Changed() bool { return !bytes.Equal(f.Before, f.After) }

// Diff is the change as a unified diff.
func (f *File) Diff() string {
	if !f.Changed() {
		return ""
	}
	return udiff.Unified(f.Path, f.Path, string(f.Before), string(f.After))
}

// Plan is what a host needs.
type Plan struct {
	Host  string
	Files []*File
	// Notes are steps warden cannot take for the user (Codex's hook trust).
	Notes []string
}

// Finding is one thing Check found missing or wrong.
type Finding struct {
	File string
	What string
}

func (f Finding) String() string { return f.File + ": " + f.What }

// ErrUnknownHost is Plan's error for a host it does not know.
var ErrUnknownHost = errors.New("unknown agent host")

// PlanFor reads the host's configuration files and plans warden's entries
// in them.
func PlanFor(o Options) (*Plan, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	switch o.Host {
	case "claude-code":
		return planClaude(o)
	case "codex":
		return planCodex(o)
	case "gemini-cli":
		return planGemini(o)
	case "cursor":
		return planCursor(o)
	}
	return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownHost, o.Host, strings.Join(Hosts, ", "))
}

// Check reads the host's configuration files and says what warden's
// entries lack there (none: the host is set up).
func Check(o Options) ([]Finding, *Plan, error) {
	p, err := PlanFor(o)
	if err != nil {
		return nil, nil, err
	}
	var out []Finding
	for _, f := range p.Files {
		for _, w := range f.missing(o) {
			out = append(out, Finding{File: f.Path, What: w})
		}
	}
	return out, p, nil
}

func (o *Options) check() error {
	switch {
	case !filepath.IsAbs(o.Warden):
		return fmt.Errorf("the warden program %q is not an absolute path", o.Warden)
	case !filepath.IsAbs(o.Home):
		return fmt.Errorf("the home directory %q is not an absolute path", o.Home)
	case o.Workspace != "" && !filepath.IsAbs(o.Workspace):
		return fmt.Errorf("--workspace %q is not an absolute path", o.Workspace)
	case o.Config == nil:
		return errors.New("no configuration")
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// mcpArgs are the arguments of `warden mcp` for the host.
func (o *Options) mcpArgs() []string {
	args := []string{"mcp"}
	if o.Workspace != "" {
		args = append(args, "--workspace", o.Workspace)
	}
	if o.ConfigFile != "" {
		args = append(args, "--config", o.ConfigFile)
	}
	if o.DB != "" {
		args = append(args, "--db", o.DB)
	}
	return args
}

// hookCommand is the hook's command line.
func (o *Options) hookCommand() string {
	c := shellQuote(o.Warden) + " hook " + o.Host
	if o.Workspace != "" {
		c += " --workspace " + shellQuote(o.Workspace)
	}
	if o.ConfigFile != "" {
		c += " --config " + shellQuote(o.ConfigFile)
	}
	if o.DB != "" {
		c += " --db " + shellQuote(o.DB)
	}
	return c
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '@' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// locationVars are the variables that say where warden's configuration
// and state are, and its environment overrides: passed on when set.
var locationVars = []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "WARDEN_DB", "WARDEN_MODE", "WARDEN_ALLOWED_ONLY",
	"WARDEN_ALLOW_DELETE", "WARDEN_COMMANDS_ENABLED", "WARDEN_LOG", "WARDEN_SUPERVISOR"}

// PassEnv lists the variables the MCP server needs from the user's
// environment, which a host strips (the MCP SDK keeps HOME, LOGNAME, PATH,
// SHELL, TERM and USER): where warden's configuration and state are (when
// set), every secret the configuration names (channels, upstream MCP
// servers), and the variables commands are allowed to see. Sorted.
func PassEnv(cfg *config.Config, getenv func(string) string) []string {
	set := map[string]bool{}
	for _, v := range locationVars {
		if getenv(v) != "" {
			set[v] = true
		}
	}
	a := &cfg.Security.Approval
	for _, v := range []string{a.Webhook.SecretEnv, a.Slack.URLEnv, a.Discord.URLEnv, a.Telegram.BotTokenEnv, a.Email.UsernameEnv, a.Email.PasswordEnv} {
		set[v] = v != ""
	}
	for _, s := range cfg.MCP.Servers {
		set[s.TokenEnv] = s.TokenEnv != ""
	}
	for _, v := range cfg.Commands.EnvAllowlist {
		if !strings.ContainsAny(v, "*?[") && getenv(v) != "" {
			set[v] = true
		}
	}
	for _, v := range []string{"HOME", "PATH", "USER", "LOGNAME", "SHELL", "TERM"} {
		delete(set, v)
	}
	var out []string
	for v, ok := range set {
		if ok && v != "" {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// hookTimeout is how long a host should give the hook: the wait for a
// person and a margin, so that warden answers before the host gives up.
func (o *Options) hookTimeout() int { return o.Config.Hooks.WaitSecs + 30 }

// mcpTimeout is the host's MCP tool timeout: above mcp_wait_secs, so that
// warden answers first.
func (o *Options) mcpTimeout() int { return o.Config.Security.Approval.MCPWaitSecs + 30 }

// readFile returns the file's content (nil when it does not exist) and mode.
func readFile(path string) ([]byte, fs.FileMode, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	return b, st.Mode().Perm(), nil
}

// Apply writes the plan's changed files: each existing one is copied to
// PATH.warden-backup-TIMESTAMP first, then replaced atomically. It returns
// the backups made.
func (p *Plan) Apply(now time.Time) ([]string, error) {
	var backups []string
	for _, f := range p.Files {
		if !f.Changed() {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			return backups, fmt.Errorf("create %s: %w", filepath.Dir(f.Path), err)
		}
		if f.Before != nil {
			b := f.Path + ".warden-backup-" + now.UTC().Format("20060102T150405Z")
			if err := writeAtomic(b, f.Before, f.Mode); err != nil {
				return backups, err
			}
			backups = append(backups, b)
		}
		if err := writeAtomic(f.Path, f.After, f.Mode); err != nil {
			return backups, err
		}
	}
	return backups, nil
}

func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// missing says what the file, as it is, lacks of warden's entries.
func (f *File) missing(Options) []string {
	if f.check == nil {
		return nil
	}
	return f.check(f.Before)
}
