package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Whatever a tool returns, the part fed back or kept after compaction is
// a prefix of it, within the bound, and never splits a character.
func FuzzCutUTF8(f *testing.F) {
	for _, s := range []string{"", "abc", "éééé", "日本語テキスト", "\xff\xfe", strings.Repeat("😀", 10)} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 {
			n = -n
		}
		got := cutUTF8(s, n)
		if !strings.HasPrefix(s, got) || len(got) > max(n, 0) && len(s) > n {
			t.Fatalf("cutUTF8(%q, %d) = %q", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("cutUTF8(%q, %d) = %q splits a character", s, n, got)
		}
		if len(s) <= n && got != s {
			t.Fatalf("cutUTF8(%q, %d) = %q, want all of it", s, n, got)
		}
	})
}
