package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Redacted replaces a secret in logs.
const Redacted = "[REDACTED]"

// DefaultMaxLen is how much of a string value an audit record keeps.
const DefaultMaxLen = 200

// secretShape is one credential pattern with the literal needles (lower
// case) one of which must occur for it to match: checking those first keeps
// redaction cheap on text that holds no secret, which is most text.
type secretShape struct {
	needles []string
	re      *regexp.Regexp
}

var secretShapes = []secretShape{
	{[]string{"private key"}, regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$)`)},
	{[]string{"sk-"}, regexp.MustCompile(`\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}`)},
	{[]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`)},
	{[]string{"github_pat_"}, regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`)},
	{[]string{"glpat-"}, regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`)},
	{[]string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`)},
	{[]string{"akia", "asia"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{[]string{"aiza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{30,}`)},
	{[]string{"eyj"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)},
	{[]string{"bearer", "token", "basic"}, regexp.MustCompile(`(?i)\b(?:bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{16,}`)},
	{[]string{"api", "secret", "passw", "token", "access"}, regexp.MustCompile(`(?i)\b(?:api[_-]?key|secret|password|passwd|token|access[_-]?key)\s*[=:]\s*['"]?[^\s'"&]{8,}`)},
}

var secretName = regexp.MustCompile(`(?i)(key|token|secret|passw|credential|auth|cookie|session)`)

var (
	envOnce    sync.Once
	envSecrets []string
)

// secretEnvValues returns the values of environment variables whose names
// look secret, longest first, so a value is replaced before any part of it.
func secretEnvValues() []string {
	envOnce.Do(func() {
		for _, kv := range os.Environ() {
			name, val, _ := strings.Cut(kv, "=")
			if len(val) >= 8 && secretName.MatchString(name) {
				envSecrets = append(envSecrets, val)
			}
		}
		sort.Slice(envSecrets, func(i, j int) bool { return len(envSecrets[i]) > len(envSecrets[j]) })
	})
	return envSecrets
}

// Redact replaces every secret-shaped part of s. Its cost grows with s:
// for text that is only shown in part, use Excerpt.
func Redact(s string) string {
	for _, v := range secretEnvValues() {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	lower := strings.ToLower(s)
	for _, sh := range secretShapes {
		for _, n := range sh.needles {
			if strings.Contains(lower, n) {
				s = sh.re.ReplaceAllString(s, Redacted)
				lower = strings.ToLower(s)
				break
			}
		}
	}
	return s
}

// Excerpt returns the first max runes of s, redacted, and says how long s
// was. Only a window a little longer than what is kept is scanned, so the
// cost does not grow with s; the margin lets a secret that starts inside
// the excerpt and runs past its end still be recognised.
func Excerpt(s string, max int) string {
	if max <= 0 {
		return Redact(s)
	}
	window := s
	if limit := 4*max + 256; len(s) > limit {
		window = s[:limit]
	}
	r := Redact(window)
	total := utf8.RuneCountInString(s)
	if total <= max && len(window) == len(s) {
		return r
	}
	n := 0
	for i := range r {
		if n == max {
			r = r[:i]
			break
		}
		n++
	}
	return r + fmt.Sprintf("... (%d chars total)", total)
}

// Truncate keeps the first max runes of s and says how long it was.
func Truncate(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + fmt.Sprintf("... (%d chars total)", utf8.RuneCountInString(s))
		}
		n++
	}
	return s
}

// Sanitize returns args (a JSON value) with every string redacted and cut
// to max runes, and the values under secret-looking keys replaced. Invalid
// JSON is returned as a redacted, truncated JSON string.
func Sanitize(args json.RawMessage, max int) json.RawMessage {
	if len(args) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		b, _ := json.Marshal(Excerpt(string(args), max))
		return b
	}
	b, err := json.Marshal(sanitizeValue(v, max))
	if err != nil {
		return json.RawMessage(`"[unprintable]"`)
	}
	return b
}

func sanitizeValue(v any, max int) any {
	switch x := v.(type) {
	case string:
		return Excerpt(x, max)
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && secretName.MatchString(k) && s != "" {
				x[k] = Redacted
				continue
			}
			x[k] = sanitizeValue(val, max)
		}
		return x
	case []any:
		for i := range x {
			x[i] = sanitizeValue(x[i], max)
		}
		return x
	}
	return v
}
