package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// envVars are the WARDEN_* variables and the keys they set.
var envVars = []struct {
	name, key string
	set       func(c *Config, v string) error
}{
	{"WARDEN_MODE", "security.confirm_mode", func(c *Config, v string) error {
		if _, ok := modeRank[v]; !ok {
			return fmt.Errorf("must be one of %s, %s, %s", ModeYolo, ModeConfirmSensitive, ModeConfirmAll)
		}
		c.Security.ConfirmMode = v
		return nil
	}},
	{"WARDEN_ALLOWED_ONLY", "commands.allowed_only", envBool(func(c *Config) *bool { return &c.Commands.AllowedOnly })},
	{"WARDEN_ALLOW_DELETE", "workspace.allow_delete", envBool(func(c *Config) *bool { return &c.Workspace.AllowDelete })},
	{"WARDEN_COMMANDS_ENABLED", "commands.enabled", envBool(func(c *Config) *bool { return &c.Commands.Enabled })},
	{"WARDEN_DEFAULT_TIMEOUT", "commands.default_timeout", envInt(1, 600, func(c *Config) *int { return &c.Commands.DefaultTimeout })},
	{"WARDEN_MAX_TIMEOUT", "commands.max_timeout", envInt(1, 600, func(c *Config) *int { return &c.Commands.MaxTimeout })},
	{"WARDEN_MAX_OUTPUT_LINES", "commands.max_output_lines", envInt(10, 5000, func(c *Config) *int { return &c.Commands.MaxOutputLines })},
}

// EnvVars lists the environment variables Load reads, with the key each sets.
func EnvVars() map[string]string {
	m := map[string]string{}
	for _, e := range envVars {
		m[e.name] = e.key
	}
	return m
}

func envBool(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			*field(c) = true
		case "0", "false", "no", "off":
			*field(c) = false
		default:
			return fmt.Errorf("must be true or false")
		}
		return nil
	}
}

func envInt(lo, hi int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer between %d and %d", lo, hi)
		}
		*field(c) = n
		return nil
	}
}

// env applies the WARDEN_* variables; an empty variable counts as unset.
func (ld *loader) env() {
	for _, e := range envVars {
		v, ok := ld.getenv(e.name)
		if !ok || v == "" {
			continue
		}
		if err := e.set(ld.cfg, v); err != nil {
			ld.errs = append(ld.errs, &Error{File: "environment", Key: e.name, Value: strconv.Quote(v), Msg: err.Error()})
			continue
		}
		if err := ld.ceilingForValue(e.key, "environment", e.name); err != nil {
			ld.errs = append(ld.errs, err)
			continue
		}
		ld.origin[e.key] = "env:" + e.name
	}
}

func (ld *loader) flags() {
	f := ld.opts.Flags
	if f.Mode != "" {
		if _, ok := modeRank[f.Mode]; !ok {
			ld.errs = append(ld.errs, &Error{File: "flags", Key: "--mode", Value: strconv.Quote(f.Mode),
				Msg: fmt.Sprintf("must be one of %s, %s, %s", ModeYolo, ModeConfirmSensitive, ModeConfirmAll)})
		} else {
			ld.cfg.Security.ConfirmMode = f.Mode
			if err := ld.ceilingForValue("security.confirm_mode", "flags", "--mode"); err != nil {
				ld.errs = append(ld.errs, err)
			} else {
				ld.origin["security.confirm_mode"] = "flag:--mode"
			}
		}
	}
	if f.NoCommands {
		ld.cfg.Commands.Enabled = false // only ever tightens: no ceiling check
		ld.origin["commands.enabled"] = "flag:--no-commands"
	}
	if f.DryRun {
		ld.cfg.DryRun = true
		ld.origin["dry_run"] = "flag:--dry-run"
	}
}

// final checks what only the merged configuration can show.
func (ld *loader) final() {
	c := &ld.cfg.Commands
	if c.DefaultTimeout > c.MaxTimeout {
		ld.errs = append(ld.errs, &Error{File: "effective configuration", Key: "commands.default_timeout",
			Value: strconv.Itoa(c.DefaultTimeout),
			Msg: fmt.Sprintf("exceeds commands.max_timeout = %d (default_timeout from %s, max_timeout from %s)",
				c.MaxTimeout, orDefault(ld.origin["commands.default_timeout"]), orDefault(ld.origin["commands.max_timeout"]))})
	}
	if s := ld.cfg.Sandbox; s != nil && s.Invalid != "" {
		s.Enabled, s.Lockdown = true, true
	}
	ld.finalNetwork()
}

func orDefault(o string) string {
	if o == "" {
		return "default"
	}
	return o
}

// Setting is one key of the effective configuration.
type Setting struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Origin string `json:"origin"`
	// Ceiling is the managed policy (file:line) that holds this setting:
	// no other source may loosen it.
	Ceiling string `json:"ceiling,omitempty"`
}

// Settings lists every key of the effective configuration in schema order,
// with its value and origin.
func (l *Loaded) Settings() []Setting {
	out := flatten(l.Config)
	for i := range out {
		out[i].Origin = orDefault(l.Origin[out[i].Key])
		out[i].Ceiling = l.ceiling[out[i].Key]
	}
	return out
}

func flatten(c *Config) []Setting {
	var out []Setting
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
				if tag == "-" {
					if tag, _, _ = strings.Cut(f.Tag.Get("json"), ","); tag == "-" || tag == "" {
						continue
					}
					if v.Field(i).IsZero() {
						continue
					}
				}
				walk(v.Field(i), joinKey(path, tag))
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case reflect.Map:
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				walk(v.MapIndex(k), joinKey(path, k.String()))
			}
		default:
			out = append(out, Setting{Key: path, Value: v.Interface()})
		}
	}
	walk(reflect.ValueOf(c).Elem(), "")
	return out
}

// FormatValue renders a setting's value for a table: strings quoted, lists
// and tables as JSON.
func FormatValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case int, int64, bool, float64:
		return fmt.Sprint(v)
	}
	if rv := reflect.ValueOf(v); (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && rv.Len() == 0 {
		return map[bool]string{true: "[]", false: "{}"}[rv.Kind() == reflect.Slice]
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// StateDir is where warden keeps its database and audit log:
// $XDG_STATE_HOME/warden, else ~/.local/state/warden. It is "" when neither
// variable gives an absolute path and the home directory is unknown.
func StateDir() string {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "warden")
	}
	h, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(h) {
		return ""
	}
	return filepath.Join(h, ".local", "state", "warden")
}
