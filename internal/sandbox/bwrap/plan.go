package bwrap

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wardenhq/warden/internal/sandbox/jail"
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
	// Layout is the jail's own paths (jail.NewLayout): workspace, rw and ro
	// paths, protected paths, masks, the warden binary, HOME and /tmp.
	Layout *jail.Layout
	// Lockdown: no network.
	Lockdown bool
	// Network shares the host's network namespace (never under Lockdown).
	Network bool
	// System lists the read-only system directories (/usr, /bin, ...).
	System []SystemDir
	// Etc lists the /etc entries a toolchain needs (see EtcAllowlist).
	Etc []string
	// GPU lists host device nodes to expose (empty under no_gpu).
	GPU []string
	// Env is the jail's complete environment (KEY=VALUE).
	Env []string
	// DataFD is the first of the file descriptors the layout's empty files
	// read their (empty) contents from, one each, in order.
	DataFD int
	// MaskSourceFD is read (empty) into MaskSource, the file a mask the
	// host's changes removed is bound from again (0: none).
	MaskSourceFD int
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

// SystemDirs are the host directories a toolchain needs, read-only.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// emptyFiles counts the layout's EmptyFile mounts (one data descriptor each).
func emptyFiles(l *jail.Layout) int {
	n := 0
	for _, m := range l.Mounts {
		if m.Kind == jail.EmptyFile {
			n++
		}
	}
	return n
}

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
	// The layout, in its order: later mounts cover earlier ones, and the
	// masks come last.
	fd := p.DataFD
	for _, m := range p.Layout.Mounts {
		switch m.Kind {
		case jail.Tmpfs:
			if m.Private {
				a = append(a, "--perms", "0700")
			}
			a = append(a, "--tmpfs", m.Target)
		case jail.Bind:
			flag := "--bind"
			if m.ReadOnly {
				flag = "--ro-bind"
			}
			if m.Optional {
				flag += "-try"
			}
			a = append(a, flag, m.Source, m.Target)
		case jail.EmptyDir:
			a = append(a, "--tmpfs", m.Target, "--remount-ro", m.Target)
		case jail.EmptyFile:
			a = append(a, "--ro-bind-data", strconv.Itoa(fd), m.Target)
			fd++
		default:
			return nil, fmt.Errorf("mount of kind %v has no bubblewrap equivalent", m.Kind)
		}
	}
	if p.MaskSourceFD > 0 {
		a = append(a, "--file", strconv.Itoa(p.MaskSourceFD), MaskSource)
	}
	// The jail's own root (a tmpfs bubblewrap builds) is read-only too:
	// nothing can be added to /etc, / or the mount points.
	a = append(a, "--remount-ro", "/", "--chdir", p.Layout.Workspace)
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

// validate checks what bubblewrap adds to the layout (which jail.NewLayout
// checked): the /etc entries, the environment, the devices.
func (p *Plan) validate() error {
	if p.Layout == nil {
		return errors.New("no jail layout")
	}
	if len(p.Command) == 0 {
		return errors.New("nothing to run in the jail")
	}
	for _, e := range p.Etc {
		if c := filepath.Clean(e); jail.EtcForbidden(c) || !strings.HasPrefix(c, "/etc/") {
			return fmt.Errorf("%s may never be bound into a jail", e)
		}
	}
	if emptyFiles(p.Layout) > 0 && p.DataFD < 3 {
		return errors.New("file masks need data file descriptors")
	}
	for _, kv := range p.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("malformed environment entry %q", kv)
		}
		if jail.SecretEntry(kv) {
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
