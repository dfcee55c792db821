package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	secrets := []string{
		"sk-proj-abcdefghijklmnopqrstuvwxyz012345",
		"sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
		"xoxb-1234567890-abcdefghij",
		"AKIAIOSFODNN7EXAMPLE",
		"AIzaSyA1234567890abcdefghijklmnopqrstuv",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA", // cut off: still redacted to the end
	}
	for _, s := range secrets {
		in := "before " + s + " after"
		out := Redact(in)
		if strings.Contains(out, s) || !strings.Contains(out, Redacted) {
			t.Errorf("Redact(%q) = %q: secret survived", in, out)
		}
	}
	for _, in := range []string{
		"Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
		"export API_KEY=abcdef123456789",
		`password: "hunter2hunter2"`,
	} {
		if out := Redact(in); !strings.Contains(out, Redacted) {
			t.Errorf("Redact(%q) = %q: labelled secret survived", in, out)
		}
	}
	for _, benign := range []string{"hello world", "go test ./...", "ls -la /tmp", "keyboard layout", "sk-short"} {
		if out := Redact(benign); out != benign {
			t.Errorf("Redact(%q) = %q: benign text changed", benign, out)
		}
	}
}

func TestRedactSecretEnvValue(t *testing.T) {
	// Not parallel: the environment is read once per process; this test
	// must run before anything else in the package reads it.
	envOnce = syncOnceReset()
	t.Setenv("WARDEN_TEST_CANARY_TOKEN", "canary-7f3a9c1e55")
	envOnce = syncOnceReset()
	if out := Redact("the value is canary-7f3a9c1e55!"); strings.Contains(out, "canary-7f3a9c1e55") {
		t.Errorf("env secret survived: %q", out)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 500)
	in := json.RawMessage(`{"path":"a.go","content":"` + long + `","headers":{"Authorization":"Basic dXNlcjpwYXNz"},"n":3,"list":["ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"]}`)
	var got map[string]any
	if err := json.Unmarshal(Sanitize(in, 200), &got); err != nil {
		t.Fatal(err)
	}
	c := got["content"].(string)
	if !strings.HasPrefix(c, strings.Repeat("x", 200)+"...") || !strings.Contains(c, "(500 chars total)") {
		t.Errorf("content not cut with its length: %q", c)
	}
	if h := got["headers"].(map[string]any)["Authorization"]; h != Redacted {
		t.Errorf("Authorization header kept: %v", h)
	}
	if l := got["list"].([]any)[0]; l != Redacted {
		t.Errorf("token in list kept: %v", l)
	}
	if got["path"] != "a.go" || got["n"] != float64(3) {
		t.Errorf("benign values changed: %v", got)
	}
	if s := string(Sanitize(json.RawMessage(`not json sk-proj-abcdefghijklmnopqrstuvwxyz`), 200)); strings.Contains(s, "abcdefghijklmnop") {
		t.Errorf("invalid JSON leaked a secret: %s", s)
	}
}

func FuzzSanitize(f *testing.F) {
	f.Add([]byte(`{"a":"sk-proj-abcdefghijklmnopqrstuvwxyz"}`))
	f.Add([]byte(`[1,"x",{"token":"t"}]`))
	f.Add([]byte(`"\u00e9\u00e9\u00e9"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Sanitize(b, 20)
		if len(b) > 0 && !json.Valid(out) {
			t.Fatalf("Sanitize(%q) = %q: not JSON", b, out)
		}
	})
}

func TestExcerpt(t *testing.T) {
	t.Parallel()
	key := "sk-proj-" + strings.Repeat("Q", 40)
	cases := []struct {
		in, want string
	}{
		{"short", "short"},
		{strings.Repeat("a", 10) + "bcd", strings.Repeat("a", 10) + "... (13 chars total)"},
		// A secret straddling the cut is still redacted, not half-kept.
		{"aaaa " + key, "aaaa [REDA... (53 chars total)"},
		{strings.Repeat("é", 12), strings.Repeat("é", 10) + "... (12 chars total)"},
	}
	for _, c := range cases {
		if got := Excerpt(c.in, 10); got != c.want {
			t.Errorf("Excerpt(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	big := strings.Repeat("x ", 4<<20) + key
	if got := Excerpt(big, 200); strings.Contains(got, "QQQQ") || !strings.HasSuffix(got, "(8388656 chars total)") {
		t.Errorf("big excerpt = %q", got[len(got)-60:])
	}
}
