package jail

import (
	"regexp"
	"slices"
	"strings"

	"github.com/wardenhq/warden/internal/command"
)

// DefaultEnvNames are passed into the jail when set on the host; the
// configuration's env_allowlist adds to them.
var DefaultEnvNames = []string{"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TZ", "COLORTERM", "NO_COLOR"}

var secretRE = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|_PAT$|^PAT_)`)

// SecretName reports whether an environment variable's name suggests a
// secret. Such variables never enter a jail, even when allowlisted.
func SecretName(name string) bool { return secretRE.MatchString(name) }

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
