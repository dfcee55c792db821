package sandbox

import (
	"errors"
	"fmt"
	"github.com/wardenhq/warden/internal/command"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Fixed paths inside the jail.
const (
	// JailExe is where the warden binary is bound, read-only, in every jail.
	JailExe = "/run/warden/warden"
	// JailHome is the private (tmpfs) HOME of the jail.
	JailHome = "/home/warden"
	// JailPATH is the PATH inside the jail.
	JailPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// SystemDir is a top-level system directory of the host as the jail shows
// it: bound read-only, or recreated as a symbolic link (merged /usr).
type SystemDir struct {
	Path    string // e.g. /bin
	Symlink string // the link's target when the host path is a symlink
}

// Plan is everything the bubblewrap command line depends on, resolved from
// the configuration and the host. Plan.Args is a pure function of it.
type Plan struct {
	// Workspace is the absolute host path, bound at the same path.
	Workspace string
	// Exe is the host path of the warden binary, bound at JailExe.
	Exe string
	// Lockdown: no network, read-only workspace except RW.
	Lockdown bool
	// Network shares the host's network namespace (never under Lockdown).
	Network bool
	// System lists the read-only system directories (/usr, /bin, ...).
	System []SystemDir
	// Etc lists the /etc entries a toolchain needs (see EtcAllowlist).
	Etc []string
	// GPU lists host device nodes to expose (empty under no_gpu).
	GPU []string
	// RW and RO are absolute host paths bound read-write / read-only.
	RW, RO []string
	// Protect lists existing workspace paths bound read-only over the workspace.
	Protect []string
	// MaskDirs are mounted as empty read-only tmpfs; MaskFiles as empty
	// read-only files, MaskFiles[i] reading its (empty) data from file
	// descriptor DataFD+i.
	MaskDirs, MaskFiles []string
	DataFD              int
	// Env is the jail's complete environment (KEY=VALUE).
	Env []string
	// SeccompFD carries the seccomp program (0: none).
	SeccompFD int
	// BlockFD and InfoFD are bubblewrap's --block-fd and --info-fd (0: none).
	BlockFD, InfoFD int
	// Command is what runs in the jail (usually JailExe worker ...).
	Command []string
}

// EtcAllowlist is what of /etc the jail sees: name service, dynamic linker,
// certificates, time zone, shell defaults. Never shadow, gshadow, sudoers,
// ssh or ssl/private.
var EtcAllowlist = []string{
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf",
	"/etc/nsswitch.conf", "/etc/gai.conf", "/etc/protocols", "/etc/services",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/alternatives", "/etc/localtime", "/etc/timezone", "/etc/mime.types",
	"/etc/os-release", "/etc/debian_version", "/etc/bash.bashrc", "/etc/profile", "/etc/inputrc",
	"/etc/magic", "/etc/magic.mime",
}

// etcForbidden reports whether p is, or is above, a secret of /etc: the
// password hashes, sudo rules, ssh host keys, TLS private keys.
func etcForbidden(p string) bool {
	for _, bad := range []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/etc/ssl/private", "/etc/security"} {
		if p == bad || strings.HasPrefix(p, bad) || within(p, bad) {
			return true
		}
	}
	return false
}

// SystemDirs are the host directories a toolchain needs, read-only.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// forbiddenWorkspace lists directories that may not be a workspace: binding
// one read-write would hand the jail the host's system.
var forbiddenWorkspace = []string{"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var", "/home", "/tmp"}

// Args returns bubblewrap's argument list (without "bwrap" itself).
func (p *Plan) Args() ([]string, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	a := []string{
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--hostname", "warden",
	}
	if p.Network && !p.Lockdown {
		a = append(a, "--share-net")
	}
	// The environment: cleared, then exactly Env.
	a = append(a, "--clearenv")
	for _, kv := range p.Env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	for _, d := range p.System {
		if d.Symlink != "" {
			a = append(a, "--symlink", d.Symlink, d.Path)
		} else {
			a = append(a, "--ro-bind", d.Path, d.Path)
		}
	}
	for _, e := range p.Etc {
		a = append(a, "--ro-bind-try", e, e)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	for _, g := range p.GPU {
		a = append(a, "--dev-bind-try", g, g)
	}
	a = append(a,
		"--tmpfs", "/tmp",
		"--perms", "0700", "--tmpfs", JailHome,
		"--ro-bind", p.Exe, JailExe,
	)
	if p.Lockdown {
		a = append(a, "--ro-bind", p.Workspace, p.Workspace)
	} else {
		a = append(a, "--bind", p.Workspace, p.Workspace)
	}
	for _, r := range p.RO {
		a = append(a, "--ro-bind-try", r, r)
	}
	for _, r := range p.RW {
		a = append(a, "--bind-try", r, r)
	}
	for _, r := range p.Protect {
		a = append(a, "--ro-bind", r, r)
	}
	// Masks last, so that they cover every bind above them.
	for _, d := range p.MaskDirs {
		a = append(a, "--tmpfs", d, "--remount-ro", d)
	}
	for i, f := range p.MaskFiles {
		a = append(a, "--ro-bind-data", strconv.Itoa(p.DataFD+i), f)
	}
	// The jail's own root (a tmpfs bubblewrap builds) is read-only too:
	// nothing can be added to /etc, / or the mount points.
	a = append(a, "--remount-ro", "/", "--chdir", p.Workspace)
	if p.SeccompFD > 0 {
		a = append(a, "--seccomp", strconv.Itoa(p.SeccompFD))
	}
	if p.InfoFD > 0 {
		a = append(a, "--info-fd", strconv.Itoa(p.InfoFD))
	}
	if p.BlockFD > 0 {
		a = append(a, "--block-fd", strconv.Itoa(p.BlockFD))
	}
	a = append(a, "--")
	return append(a, p.Command...), nil
}

func (p *Plan) validate() error {
	if !filepath.IsAbs(p.Workspace) || filepath.Clean(p.Workspace) != p.Workspace {
		return fmt.Errorf("workspace %q must be an absolute, clean path", p.Workspace)
	}
	if slices.Contains(forbiddenWorkspace, p.Workspace) {
		return fmt.Errorf("workspace %q is a system directory; warden will not bind it into a jail", p.Workspace)
	}
	if !filepath.IsAbs(p.Exe) {
		return fmt.Errorf("warden executable %q must be an absolute path", p.Exe)
	}
	if len(p.Command) == 0 {
		return errors.New("nothing to run in the jail")
	}
	for _, e := range p.Etc {
		if c := filepath.Clean(e); etcForbidden(c) || !strings.HasPrefix(c, "/etc/") {
			return fmt.Errorf("%s may never be bound into a jail", e)
		}
	}
	for _, list := range [][]string{p.RW, p.RO} {
		for _, r := range list {
			c := filepath.Clean(r)
			if !filepath.IsAbs(r) || etcForbidden(c) || slices.ContainsFunc([]string{"/proc", "/sys", "/dev", "/boot"}, func(d string) bool { return within(c, d) || within(d, c) }) {
				return fmt.Errorf("path %q may not be bound into a jail", r)
			}
		}
	}
	for _, list := range [][]string{p.MaskDirs, p.MaskFiles, p.Protect} {
		for _, m := range list {
			if !within(p.Workspace, m) || m == p.Workspace {
				return fmt.Errorf("masked or protected path %q is not inside the workspace", m)
			}
		}
	}
	if len(p.MaskFiles) > 0 && p.DataFD < 3 {
		return errors.New("file masks need data file descriptors")
	}
	for _, kv := range p.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("malformed environment entry %q", kv)
		}
		if secretName(k) {
			return fmt.Errorf("environment variable %s looks like a secret and never enters a jail", k)
		}
	}
	for _, g := range p.GPU {
		if !strings.HasPrefix(g, "/dev/dri") && !strings.HasPrefix(g, "/dev/nvidia") {
			return fmt.Errorf("%s is not a GPU device", g)
		}
	}
	return nil
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// DefaultEnvNames are passed into the jail when set on the host; the
// configuration's env_allowlist adds to them.
var DefaultEnvNames = []string{"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "COLORTERM", "NO_COLOR"}

var secretRE = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|_PAT$|^PAT_)`)

// secretName reports whether an environment variable's name suggests a
// secret. Such variables never enter a jail, even when allowlisted.
func secretName(name string) bool { return secretRE.MatchString(name) }

// JailEnv returns the jail's environment: PATH, HOME and TMPDIR fixed, plus
// the host variables named in DefaultEnvNames and allow, minus any whose name
// looks like a secret.
func JailEnv(host []string, allow []string) []string {
	names := append(append([]string{}, DefaultEnvNames...), allow...)
	env := []string{"PATH=" + JailPATH, "HOME=" + JailHome, "TMPDIR=/tmp", "WARDEN_SANDBOX=1",
		"GIT_CONFIG_PARAMETERS=" + command.GitHardening}
	fixed := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "WARDEN_SANDBOX": true, "GIT_CONFIG_PARAMETERS": true}
	for _, kv := range host {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || fixed[k] || secretName(k) || !slices.Contains(names, k) {
			continue
		}
		env = append(env, kv)
		fixed[k] = true
	}
	return env
}

// FilterEnv drops from env every variable JailEnv would not let in, for
// requests that bring their own environment.
func FilterEnv(env []string, allow []string) []string {
	names := append(append([]string{"PATH", "HOME", "TMPDIR", "WARDEN_SANDBOX", "PWD", "SHELL", "USER", "LOGNAME", "GIT_CONFIG_PARAMETERS"}, DefaultEnvNames...), allow...)
	var out []string
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if ok && !secretName(k) && slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}
