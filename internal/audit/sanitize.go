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

var secretShapes = regexp.MustCompile(strings.Join([]string{
	`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$)`,
	`\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}`,
	`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`,
	`\bgithub_pat_[A-Za-z0-9_]{20,}`,
	`\bglpat-[A-Za-z0-9_\-]{20,}`,
	`\bxox[abposr]-[A-Za-z0-9\-]{10,}`,
	`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
	`\bAIza[0-9A-Za-z_\-]{30,}`,
	`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`,
	`(?i)\b(?:bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{16,}`,
	`(?i)\b(?:api[_-]?key|secret|password|passwd|token|access[_-]?key)\s*[=:]\s*['"]?[^\s'"&]{8,}`,
}, "|"))

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

// Redact replaces every secret-shaped part of s.
func Redact(s string) string {
	for _, v := range secretEnvValues() {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return secretShapes.ReplaceAllString(s, Redacted)
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
		b, _ := json.Marshal(Truncate(Redact(string(args)), max))
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
		return Truncate(Redact(x), max)
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
