package sshjail

import (
	"encoding/json"
	"os/exec"
	"os/user"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// FuzzParseJailSpec: whatever the --sandbox argument holds, a spec that
// parses asks for a jail (enabled, local backend) and brings no
// secret-looking variable.
func FuzzParseJailSpec(f *testing.F) {
	f.Add(`{"sandbox":{"enabled":true,"backend":"local","rw_paths":null,"ro_paths":null,"mask":null,"no_gpu":false,"lockdown":false,"network":false,"landlock":"auto","idle_timeout":0},"env":["PATH=/usr/bin","LANG=C"]}`)
	f.Add(`{"sandbox":{"enabled":true,"backend":"local","lockdown":true},"mask":["secrets/**"],"protected":[".git"],"env_allowlist":["GOPATH"]}`)
	f.Add(`{"sandbox":{"enabled":true,"backend":"ssh"}}`)
	f.Add(`{"sandbox":{"enabled":false,"backend":"local"}}`)
	f.Add(`{"sandbox":{"enabled":true,"backend":"local"},"env":["API_TOKEN=x"]}`)
	f.Add(`{"sandbox":{"enabled":true,"backend":"local"}} {}`)
	f.Add(`{"sandbox":{"enabled":true,"backend":"local","invalid":"sandbox.x: unknown key"},"extra":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseJailSpec(s)
		if err != nil {
			return
		}
		if !spec.Sandbox.Enabled || spec.Sandbox.Backend != jail.BackendLocal {
			t.Fatalf("accepted a spec that is not a local jail: %+v", spec.Sandbox)
		}
		for _, kv := range spec.Env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || jail.SecretName(k) {
				t.Fatalf("accepted environment entry %q", kv)
			}
		}
	})
}

// FuzzShellQuote: a quoted string is one word that the shell reads back
// unchanged (checked with mvdan.cc/sh, warden's own shell parser).
func FuzzShellQuote(f *testing.F) {
	for _, s := range shellQuoteCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) || strings.Contains(s, "\r\n") {
			// NUL cannot be in an argument; the oracle parser reads only
			// UTF-8 and reads CRLF as LF, even quoted (TestShellQuoteSh
			// checks those against the real sh).
			return
		}
		got, err := shellRead(shellQuote(s))
		if err != nil {
			t.Fatalf("quoted %q does not parse: %v", s, err)
		}
		if got != s {
			t.Fatalf("%q quoted as %s reads back as %q", s, shellQuote(s), got)
		}
	})
}

var shellQuoteCases = []string{"", "warden", "/opt/my warden/bin", "it's", "'", "''", `a\'b`, "$(id)", "`id`", "${HOME}", "a\nb", `{"mask":["*.pem"],"x":"a'b"}`, "-n", "~root", "*", "; rm -rf /"}

func shellRead(quoted string) (string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader("x "+quoted), "")
	if err != nil {
		return "", err
	}
	if len(f.Stmts) != 1 {
		return "", errShellWords
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) != 2 {
		return "", errShellWords
	}
	fields, err := expand.Fields(&expand.Config{}, call.Args[1])
	if err != nil {
		return "", err
	}
	if len(fields) != 1 {
		return "", errShellWords
	}
	return fields[0], nil
}

var errShellWords = &shellWordsError{}

type shellWordsError struct{}

func (*shellWordsError) Error() string { return "not exactly one word" }

// TestShellQuoteSh checks the quoting against the real /bin/sh, the shell
// sshd runs the remote command with.
func TestShellQuoteSh(t *testing.T) {
	t.Parallel()
	for _, s := range append(shellQuoteCases, "\x80\xff'", "caf\xe9", "a\r\nb", "\r\n") {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		if string(out) != s {
			t.Errorf("sh reads %s as %q, want %q", shellQuote(s), out, s)
		}
	}
}

func TestResolveSSH(t *testing.T) {
	t.Parallel()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sb   config.Sandbox
		env  []string
		want sshTarget
	}{
		{"defaults", config.Sandbox{RemoteHost: "build.example"}, []string{"HOME=/home/me", "SSH_AUTH_SOCK=/run/agent"},
			sshTarget{Host: "build.example", Port: 22, User: u.Username, KnownHosts: "/home/me/.ssh/known_hosts",
				RemotePath: "/work/ws", Warden: "warden", authSock: "/run/agent"}},
		{"everything set, ~ expanded", config.Sandbox{RemoteHost: "10.0.0.7", RemotePort: 2222, RemoteUser: "ci",
			IdentityFile: "~/.ssh/id_ed25519", KnownHosts: "~/kh", RemotePath: "/srv/ws", RemoteWarden: "/opt/warden/bin/warden"},
			[]string{"HOME=/home/me"},
			sshTarget{Host: "10.0.0.7", Port: 2222, User: "ci", Identity: "/home/me/.ssh/id_ed25519", KnownHosts: "/home/me/kh",
				RemotePath: "/srv/ws", Warden: "/opt/warden/bin/warden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveSSH(&tc.sb, "/work/ws", tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(sshTarget{})); diff != "" {
				t.Errorf("resolveSSH (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := resolveSSH(&config.Sandbox{}, "/work/ws", nil); err == nil || !strings.Contains(err.Error(), "remote_host") {
		t.Errorf("no remote_host: %v", err)
	}
	he := &HostKeyError{Host: "[::1]:2222", KnownHosts: "/kh"}
	if h := he.Hint(); !strings.Contains(h, "ssh-keyscan -p 2222 ::1 >> /kh") {
		t.Errorf("hint %q", h)
	}
	he = &HostKeyError{Host: "example.com", KnownHosts: "/kh", Changed: true}
	if h := he.Hint(); !strings.Contains(h, "ssh-keygen -R 'example.com' -f /kh") {
		t.Errorf("hint %q", h)
	}
}

// TestJailSpecWire pins what crosses to the remote host: the keys an older
// or newer warden there reads, whatever the configuration's types become.
func TestJailSpecWire(t *testing.T) {
	t.Parallel()
	l := &jail.Launch{
		Settings: jail.Settings{Backend: jail.BackendSSH, Lockdown: true, NoGPU: true, Landlock: "on",
			RWPaths: []string{"build"}, ROPaths: []string{"/opt/sdk"}, Mask: []string{"*.key"}},
		Mask: []string{"secrets/**"}, Protected: []string{"ci/**"}, EnvAllowlist: []string{"GOPATH"},
		HostEnv: []string{"GOPATH=/go", "LANG=C.UTF-8", "API_TOKEN=x"},
	}
	got, err := json.Marshal(jailSpec(l))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sandbox":{"enabled":true,"backend":"local","rw_paths":["build"],"ro_paths":["/opt/sdk"],"mask":["*.key"],` +
		`"no_gpu":true,"lockdown":true,"network":false,"landlock":"on","idle_timeout":0},"mask":["secrets/**"],"protected":["ci/**"],` +
		`"env_allowlist":["GOPATH"],"env":["PATH=` + jail.JailPATH + `","HOME=/home/warden","TMPDIR=/tmp","WARDEN_SANDBOX=1",` +
		`"GIT_CONFIG_PARAMETERS=` + command.GitHardening + `","GOPATH=/go","LANG=C.UTF-8"]}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("wire format (-want +got):\n%s", diff)
	}
	// The remote side reads it back as the jail the host asked for.
	spec, err := ParseJailSpec(string(got))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jail.Resolve(sandboxSection(&spec.Sandbox))
	if err != nil || !s.Lockdown || !s.NoGPU || s.Landlock != "on" || s.Backend != jail.BackendLocal {
		t.Errorf("remote settings %+v, %v", s, err)
	}
}
