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
	"strings"
	"syscall"
)

// LoadOptions say where configuration comes from. The zero value loads the
// user config from its default location and the workspace file of the
// current directory.
type LoadOptions struct {
	// WorkspaceDir is the workspace; "" means the user config's
	// workspace.root, else the current directory.
	WorkspaceDir string
	// UserFile is the user config: "" for the default location
	// ($XDG_CONFIG_HOME/warden/config.toml or .yaml), "-" for none.
	UserFile string
	// ExtraFile is a file named with --config; it has the trust of the user
	// config and is applied right after it.
	ExtraFile string
	// Getenv reads the environment; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// Flags are the command-line overrides; they beat every other source.
	Flags Overrides
	// ManagedFile is the administrator's managed policy: "" for
	// ManagedPath (/etc/warden/managed.toml), "-" for none.
	ManagedFile string

	wsFile string // CheckFile: this file is the workspace file
}

// Overrides are the settings given as command-line flags.
type Overrides struct {
	Mode       string // --mode
	NoCommands bool   // --no-commands
	DryRun     bool   // --dry-run
}

// Loaded is the effective configuration and where each value came from.
type Loaded struct {
	Config *Config
	// Origin maps every key path of Config to "default",
	// "user:/path:line", "workspace:/path:line", "env:WARDEN_X" or
	// "flag:--name". Lists that several sources extend name each of them,
	// comma-separated.
	Origin   map[string]string
	Warnings []string
	Files    []string // the files read, in the order they were applied
	// Managed is the managed policy applied as the ceiling ("" for none).
	Managed string
	// ceiling maps the settings the managed policy holds to the managed
	// file (and line) that holds them.
	ceiling map[string]string
}

// MaxFileSize bounds a configuration file.
const MaxFileSize = 1 << 20

// Workspace file names; both present in one workspace is an error.
var workspaceFiles = []string{"warden.toml", "warden.yaml"}

// Load reads every source in precedence order (defaults < user config <
// --config file < workspace file < WARDEN_* environment < flags), refusing
// any workspace setting that would loosen the user's. The error, when not
// nil, is an *Errors listing every problem of every source.
func Load(opts LoadOptions) (*Loaded, error) {
	ld, _, err := load(opts)
	return ld, err
}

// Check is Load for `warden config check`: a [sandbox] section that Load
// would run in lockdown is reported as an error too.
func Check(opts LoadOptions) error {
	_, sb, err := load(opts)
	var all []*Error
	var errs *Errors
	if errors.As(err, &errs) {
		all = errs.List
	} else if err != nil {
		return err
	}
	all = append(all, sb...)
	if len(all) > 0 {
		return &Errors{List: all}
	}
	return nil
}

// CheckFile validates one file. A workspace file is also held to the
// tighten-only rules, against the defaults and the user config at its
// default location.
func CheckFile(path string, workspace bool) error {
	opts := LoadOptions{UserFile: "-", ExtraFile: path}
	if workspace {
		dir, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return err
		}
		opts = LoadOptions{WorkspaceDir: dir, wsFile: path}
	}
	return Check(opts)
}

type loader struct {
	opts     LoadOptions
	getenv   func(string) (string, bool)
	cfg      *Config
	origin   map[string]string
	warnings []string
	files    []string
	errs     []*Error
	sandbox  []*Error
	// ceil is the managed policy, once loaded.
	ceil        *ceiling
	managedFile string
}

func load(opts LoadOptions) (*Loaded, []*Error, error) {
	ld := &loader{opts: opts, getenv: opts.Getenv, cfg: Default(), origin: map[string]string{}}
	if ld.getenv == nil {
		ld.getenv = os.LookupEnv
	}
	ld.managed()
	ld.trusted()
	dir, err := ld.workspaceDir()
	if err != nil {
		return nil, nil, err
	}
	wsFile := opts.wsFile
	if wsFile == "" {
		wsFile, err = findOne(dir, workspaceFiles)
		if err != nil {
			ld.errs = append(ld.errs, err.(*Error))
		}
	}
	if wsFile != "" {
		if l := ld.file(wsFile, "workspace", true); l != nil {
			if errs := checkWorkspace(l, ld.cfg, dir); len(errs) > 0 {
				ld.errs = append(ld.errs, errs...)
			} else if len(l.errs.list) == 0 {
				ld.apply(l, "workspace")
			}
		}
	}
	ld.env()
	ld.flags()
	ld.final()
	if len(ld.errs) > 0 {
		sortErrors(ld.errs)
		return nil, ld.sandbox, &Errors{List: ld.errs}
	}
	if ld.ceil != nil && ld.ceil.layer.has("store.url_env") {
		ld.cfg.Store.Pinned = ld.ceil.managedAt("store.url_env")
	}
	out := &Loaded{Config: ld.cfg, Origin: map[string]string{}, Warnings: ld.warnings, Files: ld.files,
		Managed: ld.managedFile, ceiling: ld.ceilingMap()}
	for _, s := range flatten(ld.cfg) {
		o := ld.origin[s.Key]
		if o == "" {
			o = "default"
		}
		out.Origin[s.Key] = o
	}
	return out, ld.sandbox, nil
}

// trusted loads the user config and the --config file.
func (ld *loader) trusted() {
	user := ld.opts.UserFile
	if user == "" {
		dir := ""
		if x, ok := ld.getenv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
			dir = filepath.Join(x, "warden")
		} else if h, ok := ld.getenv("HOME"); ok && filepath.IsAbs(h) {
			dir = filepath.Join(h, ".config", "warden")
		}
		if dir != "" {
			f, err := findOne(dir, []string{"config.toml", "config.yaml"})
			if err != nil {
				ld.errs = append(ld.errs, err.(*Error))
			}
			user = f
		}
	} else if user == "-" {
		user = ""
	}
	for _, f := range []string{user, ld.opts.ExtraFile} {
		if f == "" {
			continue
		}
		if l := ld.file(f, "user", false); l != nil && len(l.errs.list) == 0 {
			if errs := ld.ceilingFor(l); len(errs) > 0 {
				ld.errs = append(ld.errs, errs...)
				continue
			}
			ld.apply(l, "user")
		}
	}
}

func (ld *loader) workspaceDir() (string, error) {
	dir, from := ld.opts.WorkspaceDir, "flag:--workspace"
	if dir == "" && ld.cfg.Workspace.Root != "" {
		dir, from = ld.cfg.Workspace.Root, ld.origin["workspace.root"]
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("failed to find the current directory: %w", err)
		}
		dir, from = wd, "default"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("failed to resolve workspace %q: %w", dir, err)
	}
	ld.cfg.Workspace.Root, ld.origin["workspace.root"] = abs, from
	return abs, nil
}

// findOne returns the one of names present in dir ("" if none). An empty
// regular file counts as absent: it sets nothing, and the sandbox mounts
// empty placeholders over missing config files so a jailed command cannot
// create one.
func findOne(dir string, names []string) (string, error) {
	var found []string
	for _, n := range names {
		if st, err := os.Lstat(filepath.Join(dir, n)); err == nil && !(st.Mode().IsRegular() && st.Size() == 0) {
			found = append(found, filepath.Join(dir, n))
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return found[0], &Error{File: dir, Msg: fmt.Sprintf("both %s and %s exist; keep one", filepath.Base(found[0]), filepath.Base(found[1]))}
}

// file reads, parses, decodes and validates one file, recording its errors.
// It returns nil when the file could not be parsed at all.
func (ld *loader) file(path, kind string, workspace bool) *layer {
	data, err := readFile(path, workspace)
	if err != nil {
		ld.errs = append(ld.errs, &Error{File: path, Msg: err.Error()})
		return nil
	}
	return ld.parse(path, data, kind)
}

// parse decodes and validates the contents of one file.
func (ld *loader) parse(path string, data []byte, kind string) *layer {
	var root *node
	var err error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".toml":
		root, err = parseTOML(path, data)
	case ".yaml", ".yml":
		root, err = parseYAML(path, data)
	default:
		err = &Errors{List: []*Error{{File: path, Msg: "unknown configuration format (use .toml, .yaml or .yml)"}}}
	}
	if err != nil {
		ld.errs = append(ld.errs, err.(*Errors).List...)
		return nil
	}
	l := decodeLayer(path, root)
	l.validate(ld.cfg.Security.ToolGroups)
	if kind == "user" {
		ld.uniqueAcross(l)
	}
	sortErrors(l.errs.list)
	sortErrors(l.sandboxErrs.list)
	ld.errs = append(ld.errs, l.errs.list...)
	ld.warnings = append(ld.warnings, l.warnings...)
	if len(l.sandboxErrs.list) > 0 {
		ld.sandbox = append(ld.sandbox, l.sandboxErrs.list...)
		msgs := make([]string, len(l.sandboxErrs.list))
		for i, e := range l.sandboxErrs.list {
			msgs[i] = e.Error()
		}
		inv := strings.Join(msgs, "; ")
		ld.warnings = append(ld.warnings, "warning: [sandbox] is unusable, running it in LOCKDOWN: "+inv)
		l.cfg.Sandbox = &Sandbox{Invalid: inv}
	}
	ld.files = append(ld.files, path)
	return l
}

// readFile reads a configuration file of at most MaxFileSize bytes. A
// workspace file must be a regular file, not a symlink (the agent can write
// the workspace), and a FIFO put in its place cannot block the open.
func readFile(path string, workspace bool) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if workspace {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		if workspace && errors.Is(err, syscall.ELOOP) {
			return nil, errors.New("the workspace config file must not be a symlink")
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return nil, fmt.Errorf("failed to open: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("failed to stat: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
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

// uniqueAcross refuses MCP servers and supervisors that an earlier trusted
// source already defined.
func (ld *loader) uniqueAcross(l *layer) {
	for i, s := range l.cfg.MCP.Servers {
		if slices.ContainsFunc(ld.cfg.MCP.Servers, func(o MCPServer) bool { return o.Name == s.Name }) {
			l.bad(idx("mcp.servers", i)+".name", s.Name, "already defined by %s", ld.origin["mcp.servers"])
		}
	}
	for i, s := range l.cfg.Security.Approval.Supervisors {
		if slices.ContainsFunc(ld.cfg.Security.Approval.Supervisors, func(o Supervisor) bool { return o.ID == s.ID }) {
			l.bad(idx("security.approval.supervisors", i)+".id", s.ID, "already defined by %s", ld.origin["security.approval.supervisors"])
		}
	}
}

// sortErrors orders errors by file (in order of first appearance), line
// and column.
func sortErrors(list []*Error) {
	files := map[string]int{}
	for _, e := range list {
		if _, ok := files[e.File]; !ok {
			files[e.File] = len(files)
		}
	}
	slices.SortStableFunc(list, func(a, b *Error) int {
		if a.File != b.File {
			return files[a.File] - files[b.File]
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
}

// replaceLists are the lists a later source replaces instead of extending.
var replaceLists = map[string]bool{
	"security.approval.notify_channels": true,
	"security.tool_groups.*":            true,
	"agents.*.allowed_tools":            true,
	"sandbox.egress.allow":              true, // a workspace narrows it (egressAllowNarrows)
}

// apply merges a checked layer into the effective configuration.
func (ld *loader) apply(l *layer, kind string) {
	merge(reflect.ValueOf(ld.cfg).Elem(), reflect.ValueOf(l.cfg).Elem(), l, "", "")
	for _, lf := range l.leaves {
		o := fmt.Sprintf("%s:%s:%d", kind, l.file, lf.p.line)
		if prev := ld.origin[lf.path]; prev != "" && prev != "default" && isList(lf) && !replaceLists[lf.pattern] {
			o = prev + ", " + o
		}
		ld.origin[lf.path] = o
	}
	if l.cfg.Sandbox != nil && l.cfg.Sandbox.Invalid != "" {
		ld.cfg.Sandbox = &Sandbox{Enabled: true, Lockdown: true, Invalid: l.cfg.Sandbox.Invalid,
			Backend: "local", Landlock: "auto", IdleTimeout: defaultIdleTimeout}
		ld.origin["sandbox"] = fmt.Sprintf("%s:%s:%d", kind, l.file, l.at("sandbox").line)
	}
}

func isList(lf leaf) bool { return lf.n.kind == kArray || lf.n.kind == kNull }

func merge(dst, src reflect.Value, l *layer, path, pattern string) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			tag, _, _ := strings.Cut(src.Type().Field(i).Tag.Get("toml"), ",")
			if tag == "-" || tag == "" {
				continue
			}
			if p := joinKey(path, tag); l.has(p) {
				merge(dst.Field(i), src.Field(i), l, p, joinKey(pattern, tag))
			}
		}
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if s, ok := src.Interface().(*Sandbox); ok && s.Invalid != "" {
			return // apply puts the sandbox in lockdown
		}
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
			if s, ok := dst.Interface().(*Sandbox); ok {
				*s = Sandbox{Enabled: true, Backend: "local", Landlock: "auto", IdleTimeout: defaultIdleTimeout}
			}
		} else if s, ok := dst.Interface().(*Sandbox); ok && s.Invalid != "" {
			return // stays in lockdown
		}
		merge(dst.Elem(), src.Elem(), l, path, pattern)
	case reflect.Map:
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(dst.Type()))
		}
		iter := src.MapRange()
		for iter.Next() {
			k := iter.Key().String()
			p := joinKey(path, k)
			if !l.has(p) {
				continue
			}
			cur := reflect.New(dst.Type().Elem()).Elem()
			if old := dst.MapIndex(iter.Key()); old.IsValid() {
				cur.Set(old)
			}
			merge(cur, iter.Value(), l, p, pattern+".*")
			dst.SetMapIndex(iter.Key(), cur)
		}
	case reflect.Slice:
		if replaceLists[pattern] || dst.Len() == 0 {
			dst.Set(reflect.AppendSlice(reflect.MakeSlice(src.Type(), 0, src.Len()), src))
			return
		}
		out := reflect.AppendSlice(reflect.MakeSlice(dst.Type(), 0, dst.Len()+src.Len()), dst)
		for i := range src.Len() {
			e := src.Index(i)
			if e.Kind() == reflect.String && slices.Contains(out.Interface().([]string), e.String()) {
				continue
			}
			out = reflect.Append(out, e)
		}
		dst.Set(out)
	default:
		dst.Set(src)
	}
}
