package jail

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Fixed paths inside every jail.
const (
	// JailExe is where the warden binary is bound, read-only.
	JailExe = "/run/warden/warden"
	// JailHome is the private (tmpfs) HOME.
	JailHome = "/home/warden"
	// JailPATH is the PATH inside the jail.
	JailPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// MountKind says what a Mount puts at its target.
type MountKind int

const (
	// Bind binds Source (a host path) at Target.
	Bind MountKind = iota
	// Tmpfs is an empty writable file system private to the jail.
	Tmpfs
	// EmptyFile covers Target with an empty read-only file (a mask).
	EmptyFile
	// EmptyDir covers Target with an empty read-only directory (a mask).
	EmptyDir
)

func (k MountKind) String() string {
	return [...]string{"bind", "tmpfs", "empty-file", "empty-dir"}[k]
}

// Mount is one entry of a Layout. A backend applies the mounts in order, so
// that a later one covers what an earlier one put at or above its target.
type Mount struct {
	Kind   MountKind
	Source string // Bind only: the host path
	Target string // the path in the jail
	// ReadOnly applies to Bind (EmptyFile and EmptyDir are always read-only).
	ReadOnly bool
	// Optional: a Bind whose source does not exist is left out, as the
	// rw_paths and ro_paths of a host that lacks them.
	Optional bool
	// Private: a Tmpfs only the jail's user may enter (mode 0700).
	Private bool
}

// Layout is where every path of a jail comes from, beyond the system the
// backend provides (bubblewrap binds the host's /usr and an allowlist of
// /etc; a container has its image's): the workspace, rw_paths and ro_paths,
// the protected paths, the masks, the warden binary, HOME and /tmp. NewLayout
// computes it; each backend translates it into its own flags.
type Layout struct {
	// Workspace is the workspace's absolute host path, bound at the same
	// path in the jail.
	Workspace string
	Mounts    []Mount
	// Writable and Readable are the jail paths Landlock lets the worker
	// (and its commands) write, and read and execute, beyond the system
	// paths internal/sandbox/landlock always allows.
	Writable, Readable []string
	// Masked counts the masked paths.
	Masked int
	// GitIgnore hides the mask placeholders from git in the jail
	// (Masks.GitIgnore; the worker writes it in the jail's HOME).
	GitIgnore []string
}

// NewLayout computes the layout of a jail on the workspace ws (absolute,
// clean, symbolic links resolved) running the warden binary exe, under s,
// with the masks and protected paths m resolved in ws. It reads nothing
// from the host: the same arguments give the same layout.
//
// The mounts come in this order: HOME and /tmp; the warden binary; the
// workspace, rw_paths, ro_paths and the git directories (each bound onto
// itself, so that it cannot be renamed or replaced), a path after every
// path that contains it (so the setting nearer to a file wins; at the same
// path ro_paths wins over rw_paths); the protected paths (read-only over
// everything); the masks, last, so that nothing uncovers them. Every bind
// source is checked with MayBind.
func NewLayout(ws, exe string, s Settings, m *Masks) (*Layout, error) {
	if err := MayBind(ws, true); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !filepath.IsAbs(exe) {
		return nil, fmt.Errorf("warden executable %q must be an absolute path", exe)
	}
	if m == nil {
		m = &Masks{}
	}
	l := &Layout{
		Workspace: ws,
		Mounts: []Mount{
			{Kind: Tmpfs, Target: "/tmp"},
			{Kind: Tmpfs, Target: JailHome, Private: true},
			{Kind: Bind, Source: exe, Target: JailExe, ReadOnly: true},
		},
		Writable: []string{"/tmp", JailHome},
		Readable: []string{JailExe, "/opt", "/etc"},
	}
	type bind struct {
		Mount
		rank int // at the same path, the higher rank comes later and wins
	}
	binds := []bind{{Mount: Mount{Kind: Bind, Source: ws, Target: ws, ReadOnly: s.Lockdown}}}
	if s.Lockdown {
		l.Readable = append(l.Readable, ws)
	} else {
		l.Writable = append(l.Writable, ws)
	}
	for _, p := range []struct {
		list []string
		ro   bool
		rank int
	}{{s.RWPaths, false, 1}, {s.ROPaths, true, 2}} {
		for _, r := range p.list {
			abs := r
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(ws, r)
			}
			abs = filepath.Clean(abs)
			if abs == ws && !p.ro && !s.Lockdown {
				continue // writable already
			}
			if err := MayBind(abs, !p.ro); err != nil {
				return nil, err
			}
			binds = append(binds, bind{Mount{Kind: Bind, Source: abs, Target: abs, ReadOnly: p.ro, Optional: true}, p.rank})
			if p.ro {
				l.Readable = append(l.Readable, abs)
			} else {
				l.Writable = append(l.Writable, abs)
			}
		}
	}
	// Each git directory is bound onto itself: a mount point cannot be
	// renamed, removed or replaced. It stays as writable as the path it is
	// in (objects, refs and the index are git's everyday writes).
	for _, d := range m.GitDirs {
		if !Within(ws, d) || d == ws || filepath.Clean(d) != d {
			return nil, fmt.Errorf("git directory %q is not inside the workspace %s", d, ws)
		}
		writable := !s.Lockdown || slices.ContainsFunc(l.Writable, func(w string) bool { return w != "/tmp" && w != JailHome && Within(w, d) })
		binds = append(binds, bind{Mount{Kind: Bind, Source: d, Target: d, ReadOnly: !writable}, 3})
	}
	slices.SortStableFunc(binds, func(a, b bind) int {
		return cmp.Or(cmp.Compare(depth(a.Target), depth(b.Target)), cmp.Compare(a.rank, b.rank))
	})
	for _, b := range binds {
		l.Mounts = append(l.Mounts, b.Mount)
	}
	for _, list := range [][]string{m.Protect, m.Dirs, m.Files} {
		for _, p := range list {
			if !Within(ws, p) || p == ws || filepath.Clean(p) != p {
				return nil, fmt.Errorf("masked or protected path %q is not inside the workspace %s", p, ws)
			}
		}
	}
	for _, p := range m.Protect {
		l.Mounts = append(l.Mounts, Mount{Kind: Bind, Source: p, Target: p, ReadOnly: true})
	}
	for _, d := range m.Dirs {
		l.Mounts = append(l.Mounts, Mount{Kind: EmptyDir, Target: d})
	}
	for _, f := range m.Files {
		l.Mounts = append(l.Mounts, Mount{Kind: EmptyFile, Target: f})
	}
	l.Masked = len(m.Dirs) + len(m.Files)
	l.GitIgnore = m.GitIgnore
	return l, nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// AddEgress binds the egress gateway's socket (and its CA bundle) into the
// jail, read-only: a unix socket is connected to through a read-only bind,
// and nothing in the jail may replace it.
func (l *Layout) AddEgress(e *Egress) {
	l.Mounts = append(l.Mounts, Mount{Kind: Bind, Source: e.Socket, Target: EgressSocket, ReadOnly: true})
	if e.Bundle != "" {
		l.Mounts = append(l.Mounts, Mount{Kind: Bind, Source: e.Bundle, Target: EgressBundle, ReadOnly: true})
		l.Readable = append(l.Readable, EgressBundle)
	}
}

// systemDirs may not be bound writable (nor be a workspace): that would
// hand the jail the host's system, its users' homes or its /tmp.
var systemDirs = []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/proc", "/root", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var"}

// kernelDirs are never bound, nor anything above or below them: the
// kernel's and devices' views of the host.
var kernelDirs = []string{"/proc", "/sys", "/dev", "/boot"}

// etcSecrets are never bound, nor anything above or below them: password
// hashes, sudo rules, ssh host keys, TLS private keys, PAM's secrets.
var etcSecrets = []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/etc/ssl/private", "/etc/security"}

// ErrNeverBound is wrapped by MayBind's refusals.
var ErrNeverBound = errors.New("may never be bound into a jail")

// MayBind is the one rule for the host paths a backend may bind into a
// jail: p must be absolute and clean; it may not be, contain or lie under
// a secret of /etc (EtcForbidden) or /proc, /sys, /dev, /boot; and bound
// writable (the workspace, rw_paths) it may not be a system directory
// itself (/, /usr, /etc, /home, /tmp, ...).
func MayBind(p string, writable bool) error {
	switch {
	case !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return fmt.Errorf("path %q must be absolute and clean: %w", p, ErrNeverBound)
	case EtcForbidden(p):
		return fmt.Errorf("%s holds or is a secret of /etc and %w", p, ErrNeverBound)
	case slices.ContainsFunc(kernelDirs, func(d string) bool { return Within(p, d) || Within(d, p) }):
		return fmt.Errorf("%s is, holds or lies in /proc, /sys, /dev or /boot and %w", p, ErrNeverBound)
	case writable && slices.Contains(systemDirs, p):
		return fmt.Errorf("%s is a system directory and %w writable", p, ErrNeverBound)
	}
	return nil
}

// EtcForbidden reports whether p is, lies under, or holds a secret of /etc.
func EtcForbidden(p string) bool {
	return slices.ContainsFunc(etcSecrets, func(bad string) bool {
		return strings.HasPrefix(p, bad) || Within(p, bad)
	})
}

// Within reports whether p is dir or below it (both clean and absolute).
func Within(dir, p string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
