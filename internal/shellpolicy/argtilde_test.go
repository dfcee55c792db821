package shellpolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgumentTilde: bash expands a tilde after the = of an argument that
// looks like an assignment, and after each : in it; the judge's argv says
// so (the oracle maps HOME back to ~, so ~+ shows the difference there).
func TestArgumentTilde(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want []string // argv of the one command; nil: some word is unknown
	}{
		{"cat x=~+/a", []string{"cat", "x=" + wsRoot + "/a"}},
		{"cat p=a:~+:~+/b", []string{"cat", "p=a:" + wsRoot + ":" + wsRoot + "/b"}},
		{"cat x+=~+", []string{"cat", "x+=" + wsRoot}},
		{"cat x=~/a", []string{"cat", "x=~/a"}},
		{"cd /tmp; cat x=~+/a", []string{"cat", "x=/tmp/a"}},
		// Left alone by bash.
		{"cat x=a=~+ ./x=~+ 1x=~+ --f=~+ a:~+ x=a:'~+' 'x'=~+", []string{"cat", "x=a=~+", "./x=~+", "1x=~+", "--f=~+", "a:~+", "x=a:~+", "x=~+"}},
		// Not followed exactly: unknown.
		{"cat a[1]=~+", nil},
		{"cat x=~nobody", nil},
		{"cat x=~+\"/a\"", nil},
		{`cat x=\:~+`, nil},
		{"cat x={~+,y}", nil},
	} {
		v := Judge(tc.line, testOptions(false))
		runs, _ := v.Runs()
		got := runs[len(runs)-1]
		if tc.want == nil {
			if v.Class == Safe && !v.Blocked {
				t.Errorf("%q: safe, want an unknown word\n%s", tc.line, dump(v))
			}
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%q: argv (-want +got):\n%s", tc.line, d)
		}
	}
}

// TestBashBraces: a brace group without a comma followed by another }
// is expanded by bash, not by mvdan.cc/sh; the judge reads such a word as
// unknown, never as the relative literal it looks like.
func TestBashBraces(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"cat {/etc/passwd},x}", "cat {/etc/shadow},}", "cat x{/a}y,/etc/passwd}", "touch {/tmp/x},}"} {
		if v := Judge(line, testOptions(false)); !v.Blocked && v.Class == Safe {
			t.Errorf("%q is safe\n%s", line, dump(v))
		}
	}
	for _, line := range []string{"cat {a,b}", "echo {} {a}", "cat {a..c}"} {
		if v := Judge(line, testOptions(false)); v.Blocked || v.Class != Safe {
			t.Errorf("%q is %s, want safe\n%s", line, v.Class, dump(v))
		}
	}
}
