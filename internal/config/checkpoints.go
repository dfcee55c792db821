package config

import (
	"strings"
)

// Checkpoints is the [checkpoints] section: what warden records before a
// call that may change the workspace, so that `warden undo` can take the
// change back.
//
// The section is read from the user config (or a --config file) only. A
// workspace file may not set any of it: fewer checkpoints, a smaller size
// cap or more ignored paths would hide changes from undo, and more or
// bigger ones would spend the user's disk; neither is the workspace's call.
type Checkpoints struct {
	Enabled bool `toml:"enabled" yaml:"enabled" json:"enabled"`
	// Keep is how many checkpoints of a workspace are kept (1..10000).
	Keep int `toml:"keep" yaml:"keep" json:"keep"`
	// MaxBytes bounds the disk a workspace's checkpoints use; the oldest go
	// first, the newest always stays.
	MaxBytes int64 `toml:"max_bytes" yaml:"max_bytes" json:"max_bytes"`
	// MaxFileBytes: a larger file is not recorded (the checkpoint notes it).
	MaxFileBytes int64 `toml:"max_file_bytes" yaml:"max_file_bytes" json:"max_file_bytes"`
	// Ignore adds gitignore-syntax patterns (relative to the workspace) to
	// the built-in ignored trees; a "!pattern" takes one back.
	Ignore []string `toml:"ignore" yaml:"ignore" json:"ignore"`
	// Gitignore skips what the workspace's .gitignore files and
	// .git/info/exclude ignore.
	Gitignore bool `toml:"gitignore" yaml:"gitignore" json:"gitignore"`
}

// Defaults and limits of [checkpoints].
const (
	DefaultCheckpointKeep         = 100
	DefaultCheckpointMaxBytes     = 2 << 30
	DefaultCheckpointMaxFileBytes = 16 << 20
	maxCheckpointKeep             = 10000
	maxCheckpointFileBytes        = 1 << 30
)

func defaultCheckpoints() Checkpoints {
	return Checkpoints{
		Enabled:      true,
		Keep:         DefaultCheckpointKeep,
		MaxBytes:     DefaultCheckpointMaxBytes,
		MaxFileBytes: DefaultCheckpointMaxFileBytes,
		Gitignore:    true,
	}
}

func (l *layer) validateCheckpoints() {
	c := &l.cfg.Checkpoints
	l.intRange("checkpoints.keep", c.Keep, 1, maxCheckpointKeep)
	if l.has("checkpoints.max_bytes") && c.MaxBytes < 1<<20 {
		l.bad("checkpoints.max_bytes", c.MaxBytes, "must be at least %d (1 MiB)", 1<<20)
	}
	if l.has("checkpoints.max_file_bytes") && (c.MaxFileBytes < 1 || c.MaxFileBytes > maxCheckpointFileBytes) {
		l.bad("checkpoints.max_file_bytes", c.MaxFileBytes, "must be between 1 and %d", maxCheckpointFileBytes)
	}
	for i, p := range c.Ignore {
		switch t := strings.TrimSpace(strings.TrimPrefix(p, "!")); {
		case t == "" || t == "/":
			l.bad(idx("checkpoints.ignore", i), p, "must name something to ignore")
		case strings.HasPrefix(p, "#"):
			l.bad(idx("checkpoints.ignore", i), p, "a pattern cannot start with '#' (it would be a comment in a .gitignore)")
		case strings.ContainsAny(p, "\x00\n\r"):
			l.bad(idx("checkpoints.ignore", i), p, "must be one line")
		}
	}
}
