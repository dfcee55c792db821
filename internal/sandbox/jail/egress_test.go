package jail

import (
	"slices"
	"testing"

	"github.com/wardenhq/warden/internal/config"
)

// network = "allowlist" is egress, never under lockdown or an invalid
// section, and never the host's network.
func TestResolveEgress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		sb     config.Sandbox
		egress bool
	}{
		{"allowlist", config.Sandbox{Enabled: true, NetworkMode: config.NetworkAllowlist}, true},
		{"none", config.Sandbox{Enabled: true, NetworkMode: config.NetworkNone}, false},
		{"lockdown", config.Sandbox{Enabled: true, Lockdown: true, NetworkMode: config.NetworkAllowlist}, false},
		{"invalid", config.Sandbox{Enabled: true, NetworkMode: config.NetworkAllowlist, Invalid: "bad"}, false},
	} {
		s, err := Resolve(&c.sb)
		if err != nil || s.Egress != c.egress || s.Network {
			t.Errorf("%s: %+v %v; want egress %v and no host network", c.name, s, err, c.egress)
		}
	}
}

// The gateway's socket and bundle are bound read-only at their fixed
// paths, after everything else; the bundle is readable under Landlock.
func TestLayoutEgress(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	l := &Launch{Workspace: ws, Executable: "/usr/bin/true", Settings: Settings{Egress: true},
		Egress: &Egress{Socket: "/tmp/egress-1/egress.sock", Bundle: "/tmp/egress-1/ca-bundle.pem", Env: []string{"HTTPS_PROXY=http://127.0.0.1:3128", "GH_TOKEN=warden-placeholder-0123456789abcdef0123456789abcdef"}}}
	if err := l.ResolvePaths(); err != nil {
		t.Fatal(err)
	}
	layout, err := l.Layout()
	if err != nil {
		t.Fatal(err)
	}
	n := len(layout.Mounts)
	sock, bundle := layout.Mounts[n-2], layout.Mounts[n-1]
	if sock != (Mount{Kind: Bind, Source: "/tmp/egress-1/egress.sock", Target: EgressSocket, ReadOnly: true}) ||
		bundle != (Mount{Kind: Bind, Source: "/tmp/egress-1/ca-bundle.pem", Target: EgressBundle, ReadOnly: true}) {
		t.Errorf("egress mounts %+v %+v", sock, bundle)
	}
	if !slices.Contains(layout.Readable, EgressBundle) {
		t.Errorf("the bundle is not readable under Landlock: %v", layout.Readable)
	}
	env := l.Env()
	if !slices.Contains(env, "HTTPS_PROXY=http://127.0.0.1:3128") || !slices.Contains(env, "GH_TOKEN=warden-placeholder-0123456789abcdef0123456789abcdef") {
		t.Errorf("env %v", env)
	}
}

// A secret-looking name enters a jail only holding a placeholder, exactly.
func TestSecretEntry(t *testing.T) {
	t.Parallel()
	ph := "warden-placeholder-0123456789abcdef0123456789abcdef"
	for kv, secret := range map[string]bool{
		"GH_TOKEN=" + ph:             false,
		"GH_TOKEN=ghp_real":          true,
		"GH_TOKEN=" + ph + "x":       true,
		"GH_TOKEN=" + ph[:len(ph)-1]: true,
		"GH_TOKEN=warden-placeholder-0123456789ABCDEF0123456789abcdef": true,
		"GH_TOKEN=x" + ph: true,
		"LANG=C":          false,
		"LANG=" + ph:      false,
	} {
		if got := SecretEntry(kv); got != secret {
			t.Errorf("SecretEntry(%q) = %v, want %v", kv, got, secret)
		}
	}
}
