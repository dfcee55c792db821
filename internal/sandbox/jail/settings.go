package jail

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/config"
)

// Backends.
const (
	BackendLocal  = "local"
	BackendDocker = "docker"
	BackendSSH    = "ssh"
	BackendModal  = "modal"
)

// Landlock modes.
const (
	LandlockAuto = "auto"
	LandlockOn   = "on"
	LandlockOff  = "off"
)

// DefaultIdleTimeout is how long an unused worker lives (idle_timeout).
const DefaultIdleTimeout = 600 * time.Second

// Process limits of a jail (a pids cgroup or the container's pids limit,
// and RLIMIT_NPROC inside).
const (
	PidsMax         = 2048
	PidsMaxLockdown = 256
)

// Settings is a [sandbox] section made safe to act on.
type Settings struct {
	Backend  string `json:"backend"`
	Lockdown bool   `json:"lockdown"`
	// Network shares the host network; always false under Lockdown.
	Network bool `json:"network"`
	// Egress is network = "allowlist": the jail keeps a network of its own
	// with only loopback, where a relay hands every connection to warden's
	// egress proxy on the host (internal/egress). Never under Lockdown.
	Egress   bool          `json:"egress,omitempty"`
	NoGPU    bool          `json:"no_gpu"`
	Landlock string        `json:"landlock"`
	RWPaths  []string      `json:"rw_paths"`
	ROPaths  []string      `json:"ro_paths"`
	Mask     []string      `json:"mask"`
	Idle     time.Duration `json:"idle_timeout_ns"`
	// Forced says why Lockdown was imposed rather than asked for ("" if it
	// was not): the section was invalid, or named something unknown.
	Forced string `json:"lockdown_forced_by,omitempty"`
}

// Enabled reports whether a workspace with this [sandbox] section is
// sandboxed. No section: not sandboxed. A section that could not be read as
// written (Invalid set) is sandboxed whatever it says: fail closed.
func Enabled(sb *config.Sandbox) bool {
	return sb != nil && (sb.Enabled || sb.Invalid != "")
}

// Resolve turns a [sandbox] section into Settings. Anything invalid or
// unknown forces lockdown; a backend this build cannot run is an error
// wrapping ErrBackendUnavailable, never a fallback to no sandbox.
func Resolve(sb *config.Sandbox) (Settings, error) {
	if sb == nil {
		return Settings{}, fmt.Errorf("no [sandbox] section: %w", ErrBackendUnavailable)
	}
	s := Settings{
		Backend:  sb.Backend,
		Lockdown: sb.Lockdown,
		Network:  sb.Network,
		Egress:   sb.NetworkMode == config.NetworkAllowlist,
		NoGPU:    sb.NoGPU,
		Landlock: sb.Landlock,
		RWPaths:  slices.Clone(sb.RWPaths),
		ROPaths:  slices.Clone(sb.ROPaths),
		Mask:     slices.Clone(sb.Mask),
		Idle:     time.Duration(sb.IdleTimeout) * time.Second,
	}
	var why []string
	if sb.Invalid != "" {
		why = append(why, "the [sandbox] section is invalid ("+sb.Invalid+")")
		// Nothing of an invalid section loosens the jail.
		s.Network, s.Egress, s.NoGPU = false, false, true
	}
	switch s.Backend {
	case "", BackendLocal:
		s.Backend = BackendLocal
	case BackendDocker, BackendSSH:
		// Each backend checks what it needs when it starts (Start).
	case BackendModal:
		return s, &HintError{
			Err:     fmt.Errorf("backend modal is a hosted service this build cannot use; warden never runs a sandboxed workspace unsandboxed: %w", ErrBackendUnavailable),
			HintMsg: `set backend = "local" (bubblewrap), "docker" or "ssh" in [sandbox]`,
		}
	default:
		why = append(why, fmt.Sprintf("backend %q is unknown", s.Backend))
		s.Backend = BackendLocal
	}
	switch s.Landlock {
	case "":
		s.Landlock = LandlockAuto
	case LandlockAuto, LandlockOn, LandlockOff:
	default:
		why = append(why, fmt.Sprintf("landlock = %q is not auto, on or off", s.Landlock))
		s.Landlock = LandlockAuto
	}
	if s.Idle <= 0 {
		s.Idle = DefaultIdleTimeout
	}
	if len(why) > 0 {
		s.Lockdown = true
		s.Forced = strings.Join(why, "; ")
	}
	if s.Lockdown {
		s.Network, s.Egress = false, false
	}
	return s, nil
}
