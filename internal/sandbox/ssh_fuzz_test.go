package sandbox

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

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
		if !spec.Sandbox.Enabled || spec.Sandbox.Backend != BackendLocal {
			t.Fatalf("accepted a spec that is not a local jail: %+v", spec.Sandbox)
		}
		for _, kv := range spec.Env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || secretName(k) {
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
