package approval

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLiteralJudgeWords: LiteralJudge reads words through
// shellpolicy.Literal, the reader rules use too, so both refuse the same
// spellings and read the same quoted ones.
func TestLiteralJudgeWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  string
		want []string // nil: not judged
	}{
		{`git log HEAD~1 'a b' "c d" e'f'"g"`, []string{`git log 'HEAD~1' 'a b' 'c d' efg`}},
		{`echo "" "!" | wc -l`, []string{`echo '' '!'`, `wc -l`}},

		// Accepted by this judge's own reader before: bash translates
		// $"…" through a message catalog (and dash reads $ then a string),
		// and a $ left in double quotes was passed through.
		{`echo $"rm -rf /"`, nil},
		{`cat $"/etc/shadow"`, nil},
		{`echo "a$"`, nil},
		{`echo "$"`, nil},
		{"echo 'a\x01b'", nil},
		{"echo 'a\r\nb'", nil},
		{"echo a\x00b", nil},

		{`echo $'x'`, nil},
		{`echo "a$b"`, nil},
		{"echo \"a`id`\"", nil},
		{`echo \$x`, nil},
		{`echo "\\"`, nil},
		{`echo ~`, nil},
		{`echo a=~`, nil},
		{`echo {a,b}`, nil},
		{`echo *`, nil},
		{`echo [a]`, nil},
		{`echo @(a)`, nil},
		{"echo a\\\nb", nil},
	} {
		v, err := LiteralJudge(tc.cmd)
		if tc.want == nil {
			if err == nil {
				t.Errorf("LiteralJudge(%q) = %q, want an error", tc.cmd, v.Commands)
			}
			continue
		}
		if err != nil {
			t.Errorf("LiteralJudge(%q): %v", tc.cmd, err)
			continue
		}
		if d := cmp.Diff(tc.want, v.Commands); d != "" {
			t.Errorf("LiteralJudge(%q) (-want +got):\n%s", tc.cmd, d)
		}
	}
}
