package jailworker

import (
	"os"
	"testing"
)

// The worker starts its threads before it serves, so that a full process
// limit (a fork bomb) cannot leave it without one.
func TestReserveThreads(t *testing.T) {
	threads := func() int {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := threads()
	reserveThreads(reservedThreads)
	if after := threads(); after < reservedThreads {
		t.Errorf("%d threads after reserving %d (%d before)", after, reservedThreads, before)
	}
}
