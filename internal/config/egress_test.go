package config

import (
	"slices"
	"strings"
	"testing"
)

// network takes the three modes, and the booleans of earlier configs; a
// bad [sandbox.egress] puts the sandbox in lockdown with file:line.
func TestEgressConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, user string
		mode       NetworkMode
		host       bool
		unknown    string
	}{
		{"default", "[sandbox]\n", NetworkNone, false, "ask"},
		{"true is host", "[sandbox]\nnetwork = true\n", NetworkHost, true, "ask"},
		{"false is none", "[sandbox]\nnetwork = false\n", NetworkNone, false, "ask"},
		{"allowlist", "[sandbox]\nnetwork = \"allowlist\"\n[sandbox.egress]\nallow = [\"registry.npmjs.org\", \"*.pypi.org\", \"github.com:443\", \"localhost:5432\"]\ndeny = [\"*.pastebin.com\"]\nunknown = \"deny\"\n",
			NetworkAllowlist, false, "deny"},
		{"lockdown forces none", "[sandbox]\nlockdown = true\nnetwork = \"host\"\n", NetworkNone, false, "ask"},
		{"lockdown forces none over allowlist", "[sandbox]\nlockdown = true\nnetwork = \"allowlist\"\n", NetworkNone, false, "ask"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ld, _, _, err := setup{user: tc.user}.load(t)
			if err != nil {
				t.Fatal(err)
			}
			sb := ld.Config.Sandbox
			if sb.NetworkMode != tc.mode || sb.Network != tc.host || sb.Egress.Unknown != tc.unknown {
				t.Errorf("network %q (host %v), unknown %q; want %q %v %q", sb.NetworkMode, sb.Network, sb.Egress.Unknown, tc.mode, tc.host, tc.unknown)
			}
			if _, err := sb.Egress.Policy(); err != nil {
				t.Errorf("policy: %v", err)
			}
		})
	}
}

func TestEgressYAML(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{userName: "config.yaml", user: "sandbox:\n  network: allowlist\n  egress:\n    allow: [github.com, \"*.pypi.org\"]\n    secrets:\n      - env: GITHUB_TOKEN\n        hosts: [api.github.com]\n"}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	sb := ld.Config.Sandbox
	if sb.NetworkMode != NetworkAllowlist || len(sb.Egress.Allow) != 2 || sb.Egress.Secrets[0].Hosts[0] != "api.github.com" {
		t.Errorf("sandbox %+v", sb)
	}
	ld, _, _, err = setup{userName: "config.yaml", user: "sandbox:\n  network: true\n"}.load(t)
	if err != nil || ld.Config.Sandbox.NetworkMode != NetworkHost {
		t.Errorf("network: true in YAML: %v", err)
	}
}

func TestEgressInvalidIsLockdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, user, want string }{
		{"unknown mode", "[sandbox]\nnetwork = \"proxy\"\n", `2: sandbox.network = "proxy": must be "none", "allowlist" or "host"`},
		{"bad allow entry", "[sandbox]\nnetwork = \"allowlist\"\n[sandbox.egress]\nallow = [\"ok.example\", \"evil.com\\u0000.ok.example\"]\n",
			`4: sandbox.egress.allow[1] = "evil.com\x00.ok.example": contains a NUL byte`},
		{"bare star", "[sandbox]\n[sandbox.egress]\nallow = [\"*\"]\n", `3: sandbox.egress.allow[0] = "*": "*" alone would allow every host`},
		{"bad deny port", "[sandbox]\n[sandbox.egress]\ndeny = [\"a.example:99999\"]\n", `3: sandbox.egress.deny[0] = "a.example:99999": port`},
		{"unknown value", "[sandbox]\n[sandbox.egress]\nunknown = \"allow\"\n", `3: sandbox.egress.unknown = "allow": must be one of ask, deny`},
		{"secret without hosts", "[sandbox]\n[[sandbox.egress.secrets]]\nenv = \"GITHUB_TOKEN\"\n", `2: sandbox.egress.secrets[0].hosts: must list the hosts`},
		{"secret host wildcard", "[sandbox]\n[[sandbox.egress.secrets]]\nenv = \"T\"\nhosts = [\"*.github.com\"]\n", `4: sandbox.egress.secrets[0].hosts[0] = "*.github.com": must be an exact host name`},
		{"secret host address", "[sandbox]\n[[sandbox.egress.secrets]]\nenv = \"T\"\nhosts = [\"10.0.0.1\"]\n", `4: sandbox.egress.secrets[0].hosts[0] = "10.0.0.1": must be a host name, not an address`},
		{"secret env bad", "[sandbox]\n[[sandbox.egress.secrets]]\nenv = \"A-B\"\nhosts = [\"a.example\"]\n", `3: sandbox.egress.secrets[0].env = "A-B": must name the environment variable`},
		{"secret twice", "[sandbox]\n[[sandbox.egress.secrets]]\nenv = \"T\"\nhosts = [\"a.example\"]\n[[sandbox.egress.secrets]]\nenv = \"T\"\nhosts = [\"b.example\"]\n",
			`6: sandbox.egress.secrets[1].env = "T": the same variable is brokered twice`},
		{"unknown key", "[sandbox.egress]\nallowed = []\n", `2: sandbox.egress.allowed: unknown key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts, _, _ := setup{user: tc.user}.opts(t)
			ld, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			if s := ld.Config.Sandbox; s == nil || !s.Lockdown || s.NetworkMode != NetworkNone {
				t.Errorf("sandbox %+v; want lockdown with no network", s)
			}
			got := shorts(t, Check(opts))
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("config check: %q\nwant prefix %q", got, tc.want)
			}
		})
	}
}

// A workspace file may narrow allow, add to deny, turn unknown to deny,
// and lower network; nothing else of the network.
func TestEgressWorkspace(t *testing.T) {
	t.Parallel()
	user := "[sandbox]\nnetwork = \"allowlist\"\n[sandbox.egress]\nallow = [\"*.pypi.org\", \"github.com\", \"10.0.0.0/8\"]\nunknown = \"deny\"\n"
	userAsk := "[sandbox]\nnetwork = \"allowlist\"\n[sandbox.egress]\nallow = [\"github.com\"]\n"
	for _, tc := range []struct {
		name, user, ws, want string
	}{
		{"network host over allowlist", user, "[sandbox]\nnetwork = \"host\"\n",
			`2: sandbox.network = "host": looser than sandbox.network = "allowlist" from the user config; only the user config may loosen it`},
		{"network true over allowlist", user, "[sandbox]\nnetwork = true\n",
			`2: sandbox.network = true: looser than sandbox.network = "allowlist" from the user config; only the user config may loosen it`},
		{"allowlist over none", "[sandbox]\n", "[sandbox]\nnetwork = \"allowlist\"\n",
			`2: sandbox.network = "allowlist": looser than sandbox.network = "none" from the user config; only the user config may loosen it`},
		{"allowlist over lockdown", "[sandbox]\nlockdown = true\nnetwork = \"allowlist\"\n", "[sandbox]\nnetwork = \"allowlist\"\n",
			`2: sandbox.network = "allowlist": looser than sandbox.network = "none" from the user config; only the user config may loosen it`},
		{"allow a new host", user, "[sandbox.egress]\nallow = [\"github.com\", \"evil.example\"]\n",
			`2: sandbox.egress.allow: allows "evil.example", which no entry of the user's allow list covers; only the user config may loosen it`},
		{"widen a wildcard", user, "[sandbox.egress]\nallow = [\"*.org\"]\n",
			`2: sandbox.egress.allow: allows "*.org", which no entry of the user's allow list covers; only the user config may loosen it`},
		{"exact name under a wildcard", user, "[sandbox.egress]\nallow = [\"files.pypi.org\"]\n",
			`2: sandbox.egress.allow: allows "files.pypi.org", which no entry of the user's allow list covers; only the user config may loosen it`},
		{"widen a prefix", user, "[sandbox.egress]\nallow = [\"10.0.0.0/7\"]\n",
			`2: sandbox.egress.allow: allows "10.0.0.0/7", which no entry of the user's allow list covers; only the user config may loosen it`},
		{"unknown to ask", user, "[sandbox.egress]\nunknown = \"ask\"\n",
			`2: sandbox.egress.unknown = "ask": looser than sandbox.egress.unknown = "deny" from the user config; only the user config may loosen it`},
		{"a secret from the workspace", userAsk, "[[sandbox.egress.secrets]]\nenv = \"AWS_SECRET_ACCESS_KEY\"\nhosts = [\"github.com\"]\n",
			`1: sandbox.egress.secrets: only the user config may set this`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := setup{user: tc.user, ws: tc.ws}.load(t)
			got := shorts(t, err)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name, user, ws string
		check          func(*Sandbox) bool
	}{
		{"narrow allow", user, "[sandbox.egress]\nallow = [\"*.files.pypi.org:443\", \"github.com:443\", \"10.1.0.0/16\"]\n", func(s *Sandbox) bool {
			return slices.Equal(s.Egress.Allow, []string{"*.files.pypi.org:443", "github.com:443", "10.1.0.0/16"})
		}},
		{"empty allow", user, "[sandbox.egress]\nallow = []\n", func(s *Sandbox) bool { return len(s.Egress.Allow) == 0 }},
		{"add deny", user, "[sandbox.egress]\ndeny = [\"upload.pypi.org\"]\n", func(s *Sandbox) bool {
			return len(s.Egress.Allow) == 3 && slices.Equal(s.Egress.Deny, []string{"upload.pypi.org"})
		}},
		{"unknown to deny", userAsk, "[sandbox.egress]\nunknown = \"deny\"\n", func(s *Sandbox) bool { return s.Egress.Unknown == "deny" }},
		{"network down to none", user, "[sandbox]\nnetwork = \"none\"\n", func(s *Sandbox) bool { return s.NetworkMode == NetworkNone }},
		{"host narrowed to allowlist", "[sandbox]\nnetwork = true\n", "[sandbox]\nnetwork = \"allowlist\"\n[sandbox.egress]\nallow = [\"anything.example\"]\n", func(s *Sandbox) bool {
			return s.NetworkMode == NetworkAllowlist && !s.Network && s.Egress.Allow[0] == "anything.example"
		}},
		{"no user sandbox: the workspace's jail", "", "[sandbox]\nnetwork = \"allowlist\"\n[sandbox.egress]\nallow = [\"github.com\"]\n", func(s *Sandbox) bool {
			return s.NetworkMode == NetworkAllowlist && s.Egress.Unknown == "ask"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ld, _, _, err := setup{user: tc.user, ws: tc.ws}.load(t)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.check(ld.Config.Sandbox) {
				t.Errorf("sandbox %+v", ld.Config.Sandbox)
			}
		})
	}
}

func TestEgressWarnsWhenInert(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{user: "[sandbox]\nnetwork = \"host\"\n[sandbox.egress]\nallow = [\"github.com\"]\n"}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ld.Warnings, func(w string) bool { return strings.Contains(w, `applies only with network = "allowlist"`) }) {
		t.Errorf("warnings %q", ld.Warnings)
	}
}
