package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/policy"
	"github.com/wardenhq/warden/internal/rules"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// Flags are the command line's choices that shape the configuration and
// where its effects go.
type Flags struct {
	Workspace  string // --workspace: default workspace.root, else the current directory
	ConfigFile string // --config: an extra file, trusted like the user config
	Mode       string // --mode: the confirmation mode
	NoCommands bool   // --no-commands: run_command is not served
	DryRun     bool   // --dry-run: execute nothing
	LogFile    string // --log-file: a JSON-lines mirror of the audit records
}

// ApproverFunc builds the approver of an App on its store. mirror gets the
// audit rows the approver writes (the --log-file, or nil); close releases
// what it started (channels), not the store.
type ApproverFunc func(ctx context.Context, cfg *config.Config, st *store.SQLite, mirror audit.Sink, log *slog.Logger) (approval.Approver, func(), error)

// RegistryFunc builds the tools of an App, which is complete but for its
// engine; close releases what it started (connections to MCP servers).
type RegistryFunc func(ctx context.Context, a *App) (*tools.Registry, func(), error)

// Options are one invocation's choices. The zero value builds what `warden
// tool call` runs: the built-in tools of the build agent, the terminal
// prompt when there is a terminal, the default database.
type Options struct {
	Flags
	// Config is the configuration, already loaded; nil means
	// LoadConfig(Flags).
	Config *config.Config
	// ConfigFiles are the files Config was read from, when the caller
	// loaded it (LoadConfigFiles); nil when unknown.
	ConfigFiles []string
	// Agent restricts the tools to an agent's set; "" is build.
	Agent string
	// Session names the session the audit trail records; "" means a new
	// one, NewSessionID("cli").
	Session string
	// DB is the approvals and audit database; "" means store.DefaultPath.
	DB string
	// Logger gets the human log; nil discards it.
	Logger *slog.Logger
	// Approver builds the approver; nil means TerminalApprover.
	Approver ApproverFunc
	// Registry builds the tools; nil means tools.Builtin.
	Registry RegistryFunc
	// LeaveStoreOpen leaves the store open at Close, for a process that
	// ends right after (a one-shot call, a hook): closing SQLite's last
	// connection checkpoints and deletes the WAL, for the next process to
	// create again. What was committed is in the WAL either way.
	LeaveStoreOpen bool
	// StateDir holds the checkpoint stores; "" means config.StateDir().
	StateDir string
}

// UsageError is a mistake in what the caller asked for (an unknown agent,
// a malformed --mcp-workspace), not a failure of the machine: the CLI exits
// with its usage status.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// App is everything one invocation needs to run tool calls: the
// configuration, the workspace, its jail when it has one, the approvals and
// audit store, the approver, the tools and the engine over them.
type App struct {
	cfg    *config.Config
	root   *workspace.Root
	engine *engine.Engine
	// engineOpts built engine; EngineFor copies them for each session.
	engineOpts engine.Options
	store      *store.SQLite
	audit      audit.Sink
	log        *slog.Logger
	// jail holds the workspace's worker when sandboxed, started with
	// jailOpts; nil otherwise.
	jail     *sandbox.Manager
	jailOpts *sandbox.Options
	// checkpoints is the workspace's checkpoint store; nil when it has
	// none (checkpoints.go).
	checkpoints *checkpoint.Store
	closers     closers
}

// New loads the configuration (unless o.Config is set), opens the
// workspace, the jail when the workspace has a [sandbox] section, the
// approvals and audit store, and builds the approver, the tools and the
// engine. Close releases all of it.
func New(ctx context.Context, o Options) (_ *App, err error) {
	a := &App{log: o.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	a.cfg = o.Config
	files := o.ConfigFiles // nil: not known
	if a.cfg == nil {
		if a.cfg, files, err = LoadConfigFiles(o.Flags, a.log); err != nil {
			return nil, err
		}
		if files == nil {
			files = []string{}
		}
	}
	cfg := a.cfg
	if _, err := policy.LookupAgent(cfg, o.Agent); err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--agent: %w", err)}
	}
	if a.root, err = workspace.Open(WorkspaceDir(o.Flags, cfg), &workspace.Options{Mask: cfg.Security.Mask, Protected: cfg.Security.Protected}); err != nil {
		return nil, err
	}
	a.closers.add(a.root.Close)

	// The file sink mirrors every record; the store holds approval requests
	// and the hash-chained audit trail shared by every warden process.
	var mirror audit.Multi
	if o.LogFile != "" {
		f, err := audit.OpenFile(o.LogFile)
		if err != nil {
			return nil, err
		}
		a.closers.add(f.Close)
		mirror = append(mirror, f)
	}
	// [telemetry] exports what the audit trail records (the engine's
	// calls and the approver's decisions) to an OTLP collector.
	if sink, stop, err := telemetrySink(ctx, cfg.Telemetry); err != nil {
		return nil, err
	} else if sink != nil {
		mirror = append(mirror, sink)
		a.closers.add(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return stop(ctx)
		})
	}
	if a.store, err = OpenStore(o.DB, cfg.Store); err != nil {
		return nil, err
	}
	if !o.LeaveStoreOpen {
		a.closers.add(a.store.Close)
	}
	sinks := append(append(audit.Multi{}, mirror...), a.store)
	a.audit = sinks

	if o.Session == "" {
		o.Session = NewSessionID("cli")
	}
	env := &tools.Env{Root: a.root, Config: cfg, Session: o.Session, Agent: o.Agent}
	env.FS, env.Runner = workspace.FS(a.root), command.Runner(&command.Local{Root: a.root.Dir()})
	var jail engine.JailCheck // the auto mode's jail check; none without a jail
	var je *jailEgress
	if sandbox.Enabled(cfg.Sandbox) {
		// Every effect goes through the jailed worker, started on first use;
		// it never falls back to the host. The egress audit closes after the
		// jails (closers run last first): their last connections reach it.
		je = newJailEgress(sinks, a.log)
		a.closers.add(func() error { je.audit.Close(); return nil })
		m := sandbox.NewManager(a.log)
		a.closers.add(m.Close)
		opts := JailOptions(cfg, a.root.Dir(), a.log)
		opts.Egress = je.opts
		opts.MaskEvents = maskAudit(sinks, a.root.Dir(), a.log)
		env.FS, env.Runner = m.FS(opts), m.Runner(opts)
		a.jail, a.jailOpts = m, opts
		jail = newJailCheck(m, opts)
	}

	newApprover := o.Approver
	if newApprover == nil {
		newApprover = TerminalApprover
	}
	approver, closeApprover, err := newApprover(ctx, cfg, a.store, mirror, a.log)
	if err != nil {
		return nil, err
	}
	a.closers.add(func() error { closeApprover(); return nil })
	if je != nil {
		// Before any jail starts (on the first call): unknown hosts are put
		// to the workspace's rules, then to the same approver as every
		// supervised call. The engine is built last, before any call.
		je.opts.Asker = &EgressAsker{Approver: approver, Agent: o.Agent, Rules: func(ws string) (*rules.Set, error) {
			if filepath.Clean(ws) != a.root.Dir() {
				return nil, nil
			}
			return a.engine.Rules(), nil
		}}
	}

	reg := tools.Builtin(cfg)
	if o.Registry != nil {
		// The registry may use the App but for its engine, built last.
		r, closeReg, err := o.Registry(ctx, a)
		if err != nil {
			return nil, err
		}
		a.closers.add(func() error { closeReg(); return nil })
		reg = r
	}

	var hooks engine.HookRunner
	if len(cfg.Hooks.PostEdit) > 0 {
		hooks = &engine.PostEditHooks{
			Hooks:  cfg.Hooks.PostEdit,
			Runner: env.Runner,
			Env:    command.Environ(cfg.Commands.EnvAllowlist, os.LookupEnv),
		}
	}
	a.engineOpts = engine.Options{
		Registry:   reg,
		Env:        env,
		AgentName:  o.Agent,
		Audit:      sinks,
		Approver:   approver,
		DryRun:     o.DryRun,
		Hooks:      hooks,
		Log:        a.log,
		Jail:       jail,
		ConfigNote: ConfigNote(files, os.Environ()),
	}
	if uf, err := config.UserFile(nil); err == nil {
		// "always" writes rules into the user config while this process
		// runs; they hold from the next call on.
		a.engineOpts.RulesFile = uf
		a.engineOpts.ReloadRules = func() ([]config.Rule, error) {
			c, err := LoadConfig(o.Flags, slog.New(slog.DiscardHandler))
			if err != nil {
				return nil, err
			}
			return c.Rules, nil
		}
	}
	var cps engineCheckpointer
	if a.checkpoints, cps = openCheckpoints(cfg, a.root.Dir(), o.StateDir, a.log, a.closers.add); cps != nil {
		a.engineOpts.Checkpoints = cps
	}
	if a.engine, err = engine.New(a.engineOpts); err != nil {
		return nil, err
	}
	return a, nil
}

// Close releases what New opened, last first.
func (a *App) Close() error { return a.closers.close() }

// Config is the effective configuration.
func (a *App) Config() *config.Config { return a.cfg }

// Engine runs the tool calls of the App's session.
func (a *App) Engine() *engine.Engine { return a.engine }

// EngineFor returns an engine like Engine whose calls are recorded under
// session: one per MCP session of a server.
func (a *App) EngineFor(session string) (*engine.Engine, error) {
	o := a.engineOpts
	env := *o.Env
	env.Session = session
	o.Env = &env
	return engine.New(o)
}

// Workspace is the workspace directory, absolute.
func (a *App) Workspace() string { return a.root.Dir() }

// Audit is where the engine's records go (the --log-file and the store);
// a command adds its own records (an agent's stop) to it.
func (a *App) Audit() audit.Sink { return a.audit }

// Store is the approvals and audit store.
func (a *App) Store() *store.SQLite { return a.store }

// Log is the human log.
func (a *App) Log() *slog.Logger { return a.log }

// Sandboxed reports whether the workspace's effects go through a jail.
func (a *App) Sandboxed() bool { return a.jail != nil }

// Checkpoints is the workspace's checkpoint store, or nil when it has none
// (turned off, the ssh backend, or a store that could not be opened).
func (a *App) Checkpoints() *checkpoint.Store { return a.checkpoints }

// WorkspaceDir is the workspace: --workspace, else workspace.root, else
// the current directory.
func WorkspaceDir(f Flags, cfg *config.Config) string {
	switch {
	case f.Workspace != "":
		return f.Workspace
	case cfg.Workspace.Root != "":
		return cfg.Workspace.Root
	}
	return "."
}

// LoadConfig returns the effective configuration for f: defaults < user
// config < --config file < workspace file (tighten only) < WARDEN_* <
// flags. Its warnings go to log.
func LoadConfig(f Flags, log *slog.Logger) (*config.Config, error) {
	cfg, _, err := LoadConfigFiles(f, log)
	return cfg, err
}

// LoadConfigFiles is LoadConfig, and the files it read.
func LoadConfigFiles(f Flags, log *slog.Logger) (*config.Config, []string, error) {
	ld, err := config.Load(config.LoadOptions{
		WorkspaceDir: f.Workspace,
		ExtraFile:    f.ConfigFile,
		Flags:        config.Overrides{Mode: f.Mode, NoCommands: f.NoCommands, DryRun: f.DryRun},
	})
	if err != nil {
		return nil, nil, err
	}
	for _, w := range ld.Warnings {
		log.Warn(w)
	}
	return ld.Config, ld.Files, nil
}

// hostEnvNames are the only variables MCP hosts commonly pass to the servers
// they start.
var hostEnvNames = []string{"HOME", "PATH", "SHELL", "TERM", "USER", "LOGNAME", "PWD", "SHLVL", "_", "LANG", "TMPDIR"}

// StrippedEnv reports whether environ holds nothing but what an MCP host
// passes to a server it starts: then XDG_CONFIG_HOME, WARDEN_* and the
// variables a channel reads, set in the user's shell, did not reach warden.
func StrippedEnv(environ []string) bool {
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(hostEnvNames, k) {
			return false
		}
	}
	return true
}

// ConfigNote says which configuration files were read, when that may
// explain why a call could not be approved: no user config was found, or
// the environment looks stripped. It is "" otherwise. files nil means
// they are not known.
func ConfigNote(files []string, environ []string) string {
	user := config.UserConfigPath()
	var note string
	switch {
	case files == nil:
	case len(files) == 0:
		note = fmt.Sprintf("warden read no configuration file (it looked for the user config at %s).", user)
	case !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, filepath.Dir(user)+string(filepath.Separator)) }):
		note = fmt.Sprintf("warden read %s, and no user config (it looked at %s).", strings.Join(files, ", "), user)
	}
	if StrippedEnv(environ) {
		note = strings.TrimSpace(note + " Its environment holds only " + strings.Join(envNames(environ), ", ") +
			", as an MCP host starts a server: variables set in the user's shell (XDG_CONFIG_HOME, WARDEN_*, a channel's token) did not reach it; set them in the host's server entry (env).")
	}
	return note
}

func envNames(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// NewSessionID returns prefix-<16 random hex digits>.
func NewSessionID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// closers closes what it was given, last first, once.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

func (c *closers) close() error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		errs = append(errs, (*c)[i]())
	}
	*c = nil
	return errors.Join(errs...)
}
