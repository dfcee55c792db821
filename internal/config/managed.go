package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The managed policy is an administrator's ceiling: a file that no other
// source can loosen. Every setting it writes, and every setting that
// decides the same thing (scopes below), is held by the tighten-only rules
// of the workspace file (tighten.go) in every other source: the user
// config, the --config file, the WARDEN_* environment and the flags. A
// source that loosens it fails the load, naming the line (or variable, or
// flag) and the managed file; nothing is silently ignored.

// DefaultManagedFile is where the managed policy lives.
const DefaultManagedFile = "/etc/warden/managed.toml"

// ManagedEnv moves the managed policy, for tests. It is honoured only when
// warden runs as root (who can write /etc/warden anyway) or inside a Go
// test binary (testing.Testing); otherwise it is ignored with a warning, so
// a user cannot point warden away from the administrator's file.
const ManagedEnv = "WARDEN_MANAGED_CONFIG"

// ManagedPath returns the managed policy's path, and a warning when
// ManagedEnv was set but not honoured.
func ManagedPath(getenv func(string) (string, bool)) (path, warning string) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	v, ok := getenv(ManagedEnv)
	if !ok || v == "" {
		return DefaultManagedFile, ""
	}
	if overrideAllowed(os.Geteuid(), testing.Testing()) {
		return v, ""
	}
	return DefaultManagedFile, fmt.Sprintf("warning: %s is ignored: only root may move the managed policy (using %s)", ManagedEnv, DefaultManagedFile)
}

// overrideAllowed says whether ManagedEnv is honoured: for root, and in
// test binaries.
func overrideAllowed(euid int, inTest bool) bool { return euid == 0 || inTest }

// readManaged reads the managed policy at path. It returns nil data and no
// error when there is none. The file, and every directory above it, must
// be owned by root and writable by nobody else (a directory may be
// world-writable only with the sticky bit, like /tmp); otherwise whoever
// can write it could lift the ceiling, and the load fails. Inside a Go test
// binary the user running it counts as root.
func readManaged(path string) ([]byte, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("the managed policy's path must be absolute")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open the managed policy: %w (refusing to run without it)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("failed to stat: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("the managed policy is not a regular file (%s)", st.Mode().Type())
	}
	if err := trustedOwner(path, st, false); err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve the managed policy's path: %w", err)
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		dst, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("failed to stat %s: %w", dir, err)
		}
		if err := trustedOwner(dir, dst, true); err != nil {
			return nil, err
		}
		if dir == "/" {
			break
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("failed to read: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	return data, nil
}

// trustedOwner refuses a managed file or directory that someone other than
// root can change.
func trustedOwner(path string, st fs.FileInfo, dir bool) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot read the owner of %s", path)
	}
	owner := int(sys.Uid)
	trusted := owner == 0 || (testing.Testing() && owner == os.Geteuid())
	what := "the managed policy"
	if dir {
		what = "the directory " + path + " that holds the managed policy"
	}
	if !trusted {
		return fmt.Errorf("refusing %s: it is owned by uid %d, not root, so that user could lift the administrator's ceiling (chown root)", what, owner)
	}
	perm := st.Mode().Perm()
	if perm&0o022 != 0 && !(dir && st.Mode()&fs.ModeSticky != 0) {
		return fmt.Errorf("refusing %s: it is writable by group or others (mode %04o), who could lift the administrator's ceiling (chmod go-w)", what, perm)
	}
	return nil
}

// ceiling holds the managed policy for the checks of the other sources.
type ceiling struct {
	file  string
	layer *layer  // what the managed file writes
	cfg   *Config // defaults + the managed file
	dir   string  // the workspace directory (sandbox paths)
}

// scopes are settings that decide one thing together: where the managed
// file writes any of a scope's keys, every key of the scope is held to it.
// A user's tool policy "allow" loosens a managed confirm_mode =
// "confirm-all" as surely as a user's confirm_mode would.
var scopes = [][]string{
	{"security.confirm_mode", "security.tool_policy.*", "security.tool_groups.*", "security.approval.auto_approve", "agents.*.confirm_mode"},
	{"security.approval.on_timeout", "security.approval.timeout_secs"},
	{"security.approval.supervisors", "security.approval.supervisor_id"},
	{"sandbox.*"},
	{"telemetry.*"},
	{"store.*"},
}

// ceilingRules are the rules for settings the workspace file may not set
// at all (tighten.go refuses them outright) but other sources may, within
// the ceiling. A constrained setting with no rule here or in wsRules is
// fixed: only the managed value is accepted.
var ceilingRules = map[string]func(c *wsCheck, lf leaf) string{
	"store.lease_secs": notAbove(func(b *Config) int64 { return int64(b.Store.LeaseSecs) }),
}

// matches reports whether a key pattern (map keys as *) falls under p,
// where p's trailing ".*" stands for any keys below.
func matches(p, pattern string) bool {
	if rest, ok := strings.CutSuffix(p, ".*"); ok && !strings.Contains(rest, "*") {
		return pattern == rest || strings.HasPrefix(pattern, rest+".")
	}
	return p == pattern
}

// constrains reports whether the managed file holds the setting lf.
func (c *ceiling) constrains(path, pattern string) bool {
	if c.layer.has(path) {
		return true
	}
	for _, scope := range scopes {
		if !slices.ContainsFunc(scope, func(p string) bool { return matches(p, pattern) }) {
			continue
		}
		for _, mlf := range c.layer.leaves {
			if slices.ContainsFunc(scope, func(p string) bool { return matches(p, mlf.pattern) }) {
				return true
			}
		}
		if strings.HasPrefix(pattern, "sandbox.") && c.layer.has("sandbox") {
			return true
		}
	}
	return false
}

// managedAt names the managed line that set path, or the file.
func (c *ceiling) managedAt(path string) string {
	if p := c.layer.at(path); p.line > 0 && c.layer.has(path) {
		return fmt.Sprintf("%s:%d", c.file, p.line)
	}
	return c.file
}

// check returns the settings of a source (a file's layer, or the
// environment's and flags' single values) that loosen the ceiling.
func (c *ceiling) check(src *layer, leaves []leaf, file string) []*Error {
	chk := &wsCheck{ceiling: c.file, base: c.cfg, ws: src.cfg, layer: src, dir: c.dir}
	var errs errList
	errs.file = file
	for _, lf := range leaves {
		if !c.constrains(lf.path, lf.pattern) {
			continue
		}
		rule, ok := ceilingRules[lf.pattern]
		if !ok {
			rule, ok = wsRules[lf.pattern]
		}
		if !ok {
			if cur, ok := valueAt(c.cfg, lf.path); ok && leafEquals(lf.n, cur) {
				continue // restating the managed value is not loosening it
			}
			errs.add(lf.p, lf.written, lf.n.display(), "fixed by the managed policy %s; %s", c.managedAt(lf.path), onlyAdmin)
			continue
		}
		if msg := rule(chk, lf); msg != "" {
			errs.add(lf.p, lf.written, lf.n.display(), "%s", msg)
		}
	}
	return errs.list
}

// valueAt returns the value of the setting at path in cfg.
func valueAt(cfg *Config, path string) (any, bool) {
	for _, s := range flatten(cfg) {
		if s.Key == path {
			return s.Value, true
		}
	}
	return nil, false
}

// leafEquals compares a written scalar with a configuration value.
func leafEquals(n *node, v any) bool {
	switch n.kind {
	case kString:
		s, ok := v.(string)
		return ok && s == n.s
	case kBool:
		b, ok := v.(bool)
		return ok && b == n.b
	case kInt:
		rv := reflect.ValueOf(v)
		return rv.CanInt() && rv.Int() == n.i
	}
	return false
}

// scalarLeaf is the setting key = v from the environment or a flag, as a
// leaf the rules can judge.
func scalarLeaf(key, written string, v any) leaf {
	n := &node{}
	switch v := v.(type) {
	case string:
		n.kind, n.s = kString, v
	case bool:
		n.kind, n.b = kBool, v
	case int:
		n.kind, n.i = kInt, int64(v)
	}
	return leaf{path: key, written: written, pattern: key, n: n}
}

// managed loads the managed policy, if there is one, as the first source
// above the defaults, and keeps it as the ceiling of the others.
func (ld *loader) managed() {
	path := ld.opts.ManagedFile
	if path == "-" {
		return
	}
	if path == "" {
		var warn string
		path, warn = ManagedPath(ld.getenv)
		if warn != "" {
			ld.warnings = append(ld.warnings, warn)
		}
	}
	data, err := readManaged(path)
	if err != nil {
		ld.errs = append(ld.errs, &Error{File: path, Msg: err.Error()})
		return
	}
	if data == nil {
		return
	}
	l := ld.parse(path, data, "managed")
	if l == nil || len(l.errs.list) > 0 {
		// Errors are recorded; the load fails rather than run without
		// the ceiling the administrator meant.
		if l == nil {
			ld.errs = append(ld.errs, &Error{File: path, Msg: "the managed policy could not be read; refusing to run without it"})
		}
		return
	}
	ld.apply(l, "managed")
	ceil := Default()
	merge(reflect.ValueOf(ceil).Elem(), reflect.ValueOf(l.cfg).Elem(), l, "", "")
	if l.cfg.Sandbox != nil && l.cfg.Sandbox.Invalid != "" {
		ceil.Sandbox = ld.cfg.Sandbox
	}
	ld.ceil = &ceiling{file: path, layer: l, cfg: ceil}
	ld.managedFile = path
}

// ceilingFor checks a file's layer against the managed policy.
func (ld *loader) ceilingFor(l *layer) []*Error {
	if ld.ceil == nil {
		return nil
	}
	ld.ceil.dir = ld.opts.WorkspaceDir
	return ld.ceil.check(l, l.leaves, l.file)
}

// ceilingForValue checks one setting made by a variable or a flag.
func (ld *loader) ceilingForValue(key, source, written string) *Error {
	if ld.ceil == nil {
		return nil
	}
	v, ok := valueAt(ld.cfg, key)
	if !ok {
		return nil
	}
	lf := scalarLeaf(key, written, v)
	errs := ld.ceil.check(&layer{cfg: ld.cfg, set: map[string]pos{}}, []leaf{lf}, source)
	if len(errs) == 0 {
		return nil
	}
	errs[0].Key, errs[0].Value = written, strconv.Quote(fmt.Sprint(v))
	return errs[0]
}

// CeilingOf returns the managed policy (file, and line when it writes the
// key itself) that holds setting key, or "" when it does not: what `config
// show` marks and `explain` names.
func (l *Loaded) CeilingOf(key string) string {
	return l.ceiling[key]
}

// CheckManaged validates the managed policy alone: its owner and mode, its
// syntax and values. It returns the path checked and whether a file was
// there.
func CheckManaged(getenv func(string) (string, bool)) (path string, found bool, err error) {
	path, warn := ManagedPath(getenv)
	data, err := readManaged(path)
	if err != nil {
		return path, true, &Errors{List: []*Error{{File: path, Msg: err.Error()}}}
	}
	if data == nil {
		if warn != "" {
			return path, false, errors.New(warn)
		}
		return path, false, nil
	}
	ld := &loader{getenv: getenv, cfg: Default(), origin: map[string]string{}}
	l := ld.parse(path, data, "managed")
	errs := append([]*Error{}, ld.errs...)
	if l != nil {
		errs = append(errs, l.sandboxErrs.list...)
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return path, true, &Errors{List: errs}
	}
	return path, true, nil
}

// ceilingMap lists, for `config show`, every setting of the effective
// configuration the managed policy holds.
func (ld *loader) ceilingMap() map[string]string {
	if ld.ceil == nil {
		return nil
	}
	out := map[string]string{}
	for key, pattern := range keyPatterns(ld.cfg) {
		if ld.ceil.constrains(key, pattern) {
			out[key] = ld.ceil.managedAt(key)
		}
	}
	return out
}

// keyPatterns maps every key of c to its pattern (map keys as *), like
// the leaves of a layer.
func keyPatterns(c *Config) map[string]string {
	out := map[string]string{}
	var walk func(v reflect.Value, path, pattern string)
	walk = func(v reflect.Value, path, pattern string) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
				if tag == "-" || tag == "" {
					continue
				}
				walk(v.Field(i), joinKey(path, tag), joinKey(pattern, tag))
			}
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path, pattern)
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k), joinKey(path, k.String()), pattern+".*")
			}
		default:
			out[path] = pattern
		}
	}
	walk(reflect.ValueOf(c).Elem(), "", "")
	return out
}
