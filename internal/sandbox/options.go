package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// Options configure a worker. The zero value of every field but Workspace
// and Sandbox is a safe default.
type Options struct {
	// Workspace is the workspace directory.
	Workspace string
	// Sandbox is the workspace's [sandbox] section (see Resolve).
	Sandbox *config.Sandbox
	// Mask and Protected are security.mask and security.protected; the
	// workspace defaults and sandbox.mask are added to them.
	Mask, Protected []string
	// EnvAllowlist names host variables passed into the jail (commands.env_allowlist).
	EnvAllowlist []string
	// Executable is the warden binary re-executed as `warden worker`
	// (default os.Executable()).
	Executable string
	// Bwrap is the bubblewrap binary (default: "bwrap" on PATH).
	Bwrap string
	// HostEnv is the host environment the allowlist picks from (default os.Environ()).
	HostEnv []string
	// Logger receives the worker's stderr and lifecycle events (default: discard).
	Logger *slog.Logger
	// StartTimeout bounds the jail's start and handshake (default 15 s).
	StartTimeout time.Duration
	// RequestTimeout bounds a file request (default 60 s); exec requests
	// get their own timeout plus a grace period.
	RequestTimeout time.Duration
	// Egress is the host side of network = "allowlist" (nil: its zero
	// value; see EgressOptions). Runtime hooks, not settings: no part of
	// the fingerprint.
	Egress *EgressOptions `json:"-"`
	// MaskEvents, when set, is told each time a masked path replaced on
	// the host is masked again in the jail, or the jail is killed because
	// it cannot be (the audit's hook; the Logger is told too).
	MaskEvents func(jail.MaskEvent) `json:"-"`
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// launch is what the backend of s is given.
func (o *Options) launch(s Settings) *jail.Launch {
	return &jail.Launch{
		Workspace: o.Workspace, Sandbox: o.Sandbox, Settings: s,
		Mask: o.Mask, Protected: o.Protected, EnvAllowlist: o.EnvAllowlist,
		Executable: o.Executable, Bwrap: o.Bwrap, HostEnv: o.HostEnv,
		Logger: o.Logger, StartTimeout: o.StartTimeout, MaskEvents: o.MaskEvents,
	}
}

// The settings and description of a jail; see internal/sandbox/jail.
type (
	// Settings is a [sandbox] section made safe to act on.
	Settings = jail.Settings
	// Info describes a running worker (for `warden sandbox status`).
	Info = jail.Info
	// HintError is an error with a hint telling the user what to do.
	HintError = jail.HintError
)

// Backends.
const (
	BackendLocal  = jail.BackendLocal
	BackendDocker = jail.BackendDocker
	BackendSSH    = jail.BackendSSH
	BackendModal  = jail.BackendModal
)

// Enabled reports whether a workspace with this [sandbox] section is
// sandboxed (jail.Enabled).
func Enabled(sb *config.Sandbox) bool { return jail.Enabled(sb) }

// Resolve turns a [sandbox] section into Settings (jail.Resolve).
func Resolve(sb *config.Sandbox) (Settings, error) { return jail.Resolve(sb) }

// OptionsFingerprint identifies the jail opts describe (everything a worker
// is started with but the workspace): a served worker is used only by a
// caller whose options have the same fingerprint.
func OptionsFingerprint(o *Options) string {
	sum := sha256.Sum256([]byte(fingerprint(o)))
	return hex.EncodeToString(sum[:])
}

func fingerprint(o *Options) string {
	b, _ := json.Marshal(struct {
		S                any
		M, P, E          []string
		X, B             string
		StartT, RequestT time.Duration
	}{o.Sandbox, o.Mask, o.Protected, o.EnvAllowlist, o.Executable, o.Bwrap, o.StartTimeout, o.RequestTimeout})
	return string(b)
}
