package jail

import (
	"regexp"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/egress/relay"
)

// DefaultEnvNames are passed into the jail when set on the host; the
// configuration's env_allowlist adds to them.
var DefaultEnvNames = []string{"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "COLORTERM", "NO_COLOR"}

var secretRE = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|_PAT$|^PAT_)`)

// SecretName reports whether an environment variable's name suggests a
// secret. Such variables never enter a jail, even when allowlisted.
func SecretName(name string) bool { return secretRE.MatchString(name) }

// SecretEntry reports whether a KEY=VALUE entry may hold a secret: its name
// suggests one and its value is not a brokered secret's placeholder (which
// the egress gateway puts in the jail in the secret's place).
func SecretEntry(kv string) bool {
	k, v, _ := strings.Cut(kv, "=")
	return SecretName(k) && !IsPlaceholder(v)
}

// IsPlaceholder reports whether v is a brokered secret's placeholder
// (internal/egress): the prefix and 32 lower-case hex digits, nothing else.
func IsPlaceholder(v string) bool {
	hexPart, ok := strings.CutPrefix(v, relay.PlaceholderPrefix)
	if !ok || len(hexPart) != 32 {
		return false
	}
	for _, c := range hexPart {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

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
		if !ok || fixed[k] || SecretName(k) || !slices.Contains(names, k) {
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
		if ok && !SecretName(k) && slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}
