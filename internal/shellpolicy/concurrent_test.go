package shellpolicy

import (
	"sync"
	"testing"
)

// TestJudgeConcurrent judges the corpora from several goroutines at once
// and checks every verdict equals the one judged alone. An engine judges
// calls in parallel; a judge that shares state between calls (mvdan.cc/sh
// keeps one package-level Config for callers that pass nil) would let one
// call's text leak into another's reading — a printf that builds "sudo"
// for one caller could be read as "true" for the other.
func TestJudgeConcurrent(t *testing.T) {
	t.Parallel()
	lines := oracleLines(t)
	want := make([]string, len(lines))
	for i, l := range lines {
		want[i] = dump(Judge(l, nil))
	}
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for i := range lines {
					k := (i*7 + g*131 + r) % len(lines)
					if got := dump(Judge(lines[k], nil)); got != want[k] {
						t.Errorf("%q judged in parallel:\n%s\nalone:\n%s", lines[k], got, want[k])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
