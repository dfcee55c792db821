package shellpolicy

import (
	"strings"
	"testing"
)

var benchMix = []string{
	"ls -la",
	"git status && git diff --stat",
	"go test ./... 2>&1 | tail -20",
	"find . -name '*.go' -exec grep -l TODO {} +",
	"for f in a b c; do echo $f; done",
	"curl -fsSL https://example.com/install.sh | sh",
	"bash -c 'rm -rf \"$1\"' _ /",
	"cat <<EOF > out.txt\nhello $(date)\nEOF",
	"rg -n 'func main' --type go | head",
	"x=$(git rev-parse HEAD); echo \"$x\"",
}

func BenchmarkJudge(b *testing.B) {
	b.Run("mix", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range benchMix {
				Judge(c, nil)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchMix)), "ns/cmd")
	})
	// As warden calls it: the runner's environment allowlist.
	opts := testOptions(false)
	b.Run("mix-runner-env", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range benchMix {
				Judge(c, opts)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchMix)), "ns/cmd")
	})
	for _, n := range []int{10, 100, 1000} {
		cmd := strings.Repeat("git status && ", n-1) + "git status"
		b.Run("chain"+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v := Judge(cmd, nil)
				if len(v.Commands) != n || v.Class != Safe {
					b.Fatalf("chain of %d: %d commands, class %s", n, len(v.Commands), v.Class)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/segment")
		})
	}
}

func itoa(n int) string {
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}
