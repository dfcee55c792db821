package rules

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlainWords: Plain reads words through shellpolicy.Literal, so every
// spelling bash would expand, decode or translate makes the line not
// plain, and the quoted spellings that are plain read as bash reads them.
func TestPlainWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want [][]string // nil: not plain
	}{
		{`git log HEAD~1 'a b' "c d" e'f'"g"`, [][]string{{"git", "log", "HEAD~1", "a b", "c d", "efg"}}},
		{`echo "" '' "!" a=b`, [][]string{{"echo", "", "", "!", "a=b"}}},
		{`echo “a”`, [][]string{{"echo", "“a”"}}},
		{"echo 'a\nb'", [][]string{{"echo", "a\nb"}}},
		{`ls 2>/dev/null >&2`, [][]string{{"ls"}}},

		// Read differently before: $"…" was refused only by this reader's
		// copy; now the one reader refuses it for every caller.
		{`echo $"rm"`, nil},
		{`echo $'x'`, nil},
		{`echo "a$b"`, nil},
		{`echo "a$"`, nil},
		{"echo \"a`id`\"", nil},
		{"echo a`id`", nil},
		{`echo \$x`, nil},
		{`echo "\\"`, nil},
		{`echo ~`, nil},
		{`echo ~user`, nil},
		{`echo a=~`, nil},
		{`echo x=a:~`, nil},
		{`echo a[1]=~`, nil},
		{`echo ''~`, nil},
		{`echo {a,b}`, nil},
		{`echo *`, nil},
		{`echo ?`, nil},
		{`echo [a]`, nil},
		{`echo @(a)`, nil},
		{"echo a\\\nb", nil},
		{"echo 'a\x01b'", nil},
		{"echo '\xff'", nil},
		{"echo 'a\r\nb'", nil},
		{"echo a\x00b", nil},
		{`ls >"/dev/null$x"`, nil},
		{`ls >$"/dev/null"`, nil},
	} {
		got, err := Plain(tc.line)
		if tc.want == nil {
			if err == nil || !errors.Is(err, ErrNotPlain) {
				t.Errorf("Plain(%q) = %q, %v; want ErrNotPlain", tc.line, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Plain(%q): %v", tc.line, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("Plain(%q) (-want +got):\n%s", tc.line, d)
		}
	}
}
