package jail

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	ws  = "/work/ws"
	exe = "/usr/local/bin/warden"
)

// base are the mounts every layout starts with.
var base = []Mount{
	{Kind: Tmpfs, Target: "/tmp"},
	{Kind: Tmpfs, Target: JailHome, Private: true},
	{Kind: Bind, Source: exe, Target: JailExe, ReadOnly: true},
}

func with(ms ...Mount) []Mount { return append(append([]Mount{}, base...), ms...) }

func wsBind(ro bool) Mount { return Mount{Kind: Bind, Source: ws, Target: ws, ReadOnly: ro} }

func opt(p string, ro bool) Mount {
	return Mount{Kind: Bind, Source: p, Target: p, ReadOnly: ro, Optional: true}
}

func TestNewLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		s                  Settings
		m                  *Masks
		want               []Mount
		writable, readable []string
	}{
		{name: "plain", want: with(wsBind(false)),
			writable: []string{"/tmp", JailHome, ws}, readable: []string{JailExe, "/opt", "/etc"}},
		{name: "lockdown: the workspace read-only, rw_paths writable", s: Settings{Lockdown: true, RWPaths: []string{"build", "/var/cache/x"}},
			want:     with(wsBind(true), opt(ws+"/build", false), opt("/var/cache/x", false)),
			writable: []string{"/tmp", JailHome, ws + "/build", "/var/cache/x"}, readable: []string{JailExe, "/opt", "/etc", ws}},
		{name: "lockdown: rw_paths may name the workspace", s: Settings{Lockdown: true, RWPaths: []string{"."}},
			want:     with(wsBind(true), opt(ws, false)),
			writable: []string{"/tmp", JailHome, ws}, readable: []string{JailExe, "/opt", "/etc", ws}},
		{name: "rw_paths naming the workspace add nothing", s: Settings{RWPaths: []string{".", ws}},
			want:     with(wsBind(false)),
			writable: []string{"/tmp", JailHome, ws}, readable: []string{JailExe, "/opt", "/etc"}},
		{name: "ro_paths naming the workspace make it read-only", s: Settings{ROPaths: []string{"."}},
			want:     with(wsBind(false), opt(ws, true)),
			writable: []string{"/tmp", JailHome, ws}, readable: []string{JailExe, "/opt", "/etc", ws}},
		// Parents first: the setting nearer to a path wins, whichever list it is in.
		{name: "nested: rw under ro and ro under rw", s: Settings{RWPaths: []string{"/data", "/opt/sdk/cache"}, ROPaths: []string{"/data/ref", "/opt/sdk"}},
			want:     with(opt("/data", false), wsBind(false), opt("/data/ref", true), opt("/opt/sdk", true), opt("/opt/sdk/cache", false)),
			writable: []string{"/tmp", JailHome, ws, "/data", "/opt/sdk/cache"}, readable: []string{JailExe, "/opt", "/etc", "/data/ref", "/opt/sdk"}},
		{name: "same path in both lists: read-only wins", s: Settings{RWPaths: []string{"/data"}, ROPaths: []string{"/data"}},
			want:     with(opt("/data", false), opt("/data", true), wsBind(false)),
			writable: []string{"/tmp", JailHome, ws, "/data"}, readable: []string{JailExe, "/opt", "/etc", "/data"}},
		{name: "relative paths are the workspace's, cleaned", s: Settings{ROPaths: []string{"./vendor/../vendor"}},
			want:     with(wsBind(false), opt(ws+"/vendor", true)),
			writable: []string{"/tmp", JailHome, ws}, readable: []string{JailExe, "/opt", "/etc", ws + "/vendor"}},
		// Protected paths and masks come after every bind, masks last.
		{name: "protected and masked", s: Settings{RWPaths: []string{".git"}, Lockdown: true},
			m: &Masks{Protect: []string{ws + "/.git/config"}, Dirs: []string{ws + "/.ssh"}, Files: []string{ws + "/.env", ws + "/.git/k.pem"}},
			want: with(wsBind(true), opt(ws+"/.git", false),
				Mount{Kind: Bind, Source: ws + "/.git/config", Target: ws + "/.git/config", ReadOnly: true},
				Mount{Kind: EmptyDir, Target: ws + "/.ssh"},
				Mount{Kind: EmptyFile, Target: ws + "/.env"}, Mount{Kind: EmptyFile, Target: ws + "/.git/k.pem"}),
			writable: []string{"/tmp", JailHome, ws + "/.git"}, readable: []string{JailExe, "/opt", "/etc", ws}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLayout(ws, exe, tc.s, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, l.Mounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.writable, l.Writable); diff != "" {
				t.Errorf("writable (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.readable, l.Readable); diff != "" {
				t.Errorf("readable (-want +got):\n%s", diff)
			}
			if tc.m != nil && l.Masked != len(tc.m.Dirs)+len(tc.m.Files) {
				t.Errorf("Masked = %d", l.Masked)
			}
		})
	}
}

func TestNewLayoutRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		ws, exe string
		s       Settings
		m       *Masks
	}{
		{name: "workspace is /", ws: "/"},
		{name: "workspace is /etc", ws: "/etc"},
		{name: "workspace is /home", ws: "/home"},
		{name: "workspace is /tmp", ws: "/tmp"},
		{name: "workspace is relative", ws: "ws"},
		{name: "workspace is unclean", ws: "/work/../etc"},
		{name: "workspace under /proc", ws: "/proc/1/root"},
		{name: "workspace in lockdown is still not /usr", ws: "/usr", s: Settings{Lockdown: true}},
		{name: "relative executable", exe: "warden"},
		{name: "ro /etc", s: Settings{ROPaths: []string{"/etc"}}},
		{name: "ro /etc/ssh", s: Settings{ROPaths: []string{"/etc/ssh/ssh_host_ed25519_key"}}},
		{name: "ro /etc/shadow-", s: Settings{ROPaths: []string{"/etc/shadow-"}}},
		{name: "ro / holds /etc/shadow", s: Settings{ROPaths: []string{"/"}}},
		{name: "rw /", s: Settings{RWPaths: []string{"/"}}},
		{name: "rw /usr", s: Settings{RWPaths: []string{"/usr"}}},
		{name: "rw /tmp (the host's, with its sockets)", s: Settings{RWPaths: []string{"/tmp"}}},
		{name: "ro /proc/1/root", s: Settings{ROPaths: []string{"/proc/1/root"}}},
		{name: "ro /dev", s: Settings{ROPaths: []string{"/dev"}}},
		{name: "ro /sys/..", s: Settings{ROPaths: []string{"/sys/../sys/kernel"}}},
		{name: "rw escaping the workspace through ..", s: Settings{RWPaths: []string{"../../etc/sudoers.d"}}},
		{name: "mask outside", m: &Masks{Files: []string{"/etc/passwd"}}},
		{name: "mask the workspace itself", m: &Masks{Dirs: []string{ws}}},
		{name: "mask prefix trick", m: &Masks{Dirs: []string{"/work/ws2/x"}}},
		{name: "protect outside", m: &Masks{Protect: []string{"/work"}}},
		{name: "mask unclean", m: &Masks{Files: []string{ws + "/a/../../x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, e := ws, exe
			if tc.ws != "" {
				w = tc.ws
			}
			if tc.exe != "" {
				e = tc.exe
			}
			if l, err := NewLayout(w, e, tc.s, tc.m); err == nil {
				t.Errorf("accepted: %+v", l.Mounts)
			}
		})
	}
}

func TestMayBind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path         string
		ro, writable bool // allowed read-only, allowed writable
	}{
		{"/work/ws", true, true},
		{"/opt/sdk", true, true},
		{"/usr", true, false},
		{"/home", true, false},
		{"/home/me/project", true, true},
		{"/etc/passwd", true, true}, // the backend's own allowlist decides what of /etc it shows
		{"/etc", false, false},
		{"/etc/ssl", false, false},
		{"/etc/ssl/private/key.pem", false, false},
		{"/etc/sudoers.d", false, false},
		{"/", false, false},
		{"/proc", false, false},
		{"/proc/self/root", false, false},
		{"/sys/fs/cgroup", false, false},
		{"/dev/sda", false, false},
		{"/boot", false, false},
		{"relative", false, false},
		{"/work/../etc", false, false},
		{"/work/ws/", false, false},
	} {
		if got := MayBind(tc.path, false) == nil; got != tc.ro {
			t.Errorf("MayBind(%q, read-only) allowed = %v, want %v", tc.path, got, tc.ro)
		}
		err := MayBind(tc.path, true)
		if got := err == nil; got != tc.writable {
			t.Errorf("MayBind(%q, writable) allowed = %v, want %v", tc.path, got, tc.writable)
		}
		if err != nil && !errors.Is(err, ErrNeverBound) {
			t.Errorf("MayBind(%q): %v does not wrap ErrNeverBound", tc.path, err)
		}
	}
}
