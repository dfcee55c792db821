package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSymlinkSwapRace flips x between an inside file and a link to the
// outside secret, and d between an inside directory and a link to an
// outside directory, with RENAME_EXCHANGE (atomic), while readers and
// writers hammer both names. No read may return the secret and no write
// may land outside.
func TestSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{
		"x=inside", "x.alt => ../outside/secret",
		"d/f=inside", "d.alt => ../outside/outdir",
		"y=inside", "y.alt => d.alt/s", // a chain that leads out through d.alt
	}, nil)
	before := snapshot(t, fx.out)
	ws := fx.ws
	iterations := 500
	if testing.Short() {
		iterations = 100
	}

	var stop atomic.Bool
	var flips atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			for _, n := range []string{"x", "d", "y"} {
				err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, n), unix.AT_FDCWD, filepath.Join(ws, n+".alt"), unix.RENAME_EXCHANGE)
				if err != nil && !errors.Is(err, unix.ENOENT) {
					t.Errorf("exchange %s: %v", n, err)
					return
				}
			}
			flips.Add(1)
			runtime.Gosched()
		}
	}()

	var reads, writes, refusals atomic.Int64
	workers := 4
	errc := make(chan error, workers)
	var wwg sync.WaitGroup
	for i := range workers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			for j := range iterations {
				for op, f := range map[string]func() ([]byte, error){
					"read x":    func() ([]byte, error) { return fx.w.ReadFile("x", 0) },
					"read y":    func() ([]byte, error) { return fx.w.ReadFile("y", 0) },
					"read d/f":  func() ([]byte, error) { return fx.w.ReadFile("d/f", 0) },
					"read d/s":  func() ([]byte, error) { return fx.w.ReadFile("d/s", 0) },
					"open d/s":  func() ([]byte, error) { return ops["open"](fx.w, "d/s") },
					"list d":    func() ([]byte, error) { return ops["readdir"](fx.w, "d") },
					"walk d":    func() ([]byte, error) { return ops["walk"](fx.w, "d") },
					"stat d/s":  func() ([]byte, error) { return ops["stat"](fx.w, "d/s") },
					"write x":   func() ([]byte, error) { return nil, fx.w.WriteFile("x", []byte("w"), 0o644) },
					"write d/s": func() ([]byte, error) { return nil, fx.w.WriteFile("d/s", []byte("w"), 0o644) },
					"write d/n": func() ([]byte, error) { return nil, fx.w.WriteFile(fmt.Sprintf("d/n%d", i), []byte("w"), 0o644) },
					"mkdir d/m": func() ([]byte, error) { return nil, fx.w.MkdirAll(fmt.Sprintf("d/m%d/%d", i, j%3), 0o755) },
					"rm d/n":    func() ([]byte, error) { return nil, fx.w.Remove(fmt.Sprintf("d/n%d", i)) },
				} {
					data, err := f()
					if leaks(data) {
						errc <- fmt.Errorf("%s returned the secret: %q", op, data)
						return
					}
					if err != nil {
						refusals.Add(1)
					} else if op[0] == 'w' {
						writes.Add(1)
					} else {
						reads.Add(1)
					}
				}
			}
		}()
	}
	wwg.Wait()
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	t.Logf("%d flips, %d successful reads, %d successful writes, %d errors", flips.Load(), reads.Load(), writes.Load(), refusals.Load())
	if reads.Load() == 0 || writes.Load() == 0 || refusals.Load() == 0 || flips.Load() < 10 {
		t.Errorf("the race did not race: want successes, refusals and flips")
	}
	// Nothing outside changed: same names, content and mtimes.
	if after := snapshot(t, fx.out); !equalMaps(before, after) {
		t.Errorf("the outside changed:\nbefore %v\nafter  %v", before, after)
	}
	// And nothing was written beside the workspace either.
	ents, err := os.ReadDir(filepath.Dir(fx.ws))
	must(t, err)
	if len(ents) != 2 {
		t.Errorf("fixture dir holds %d entries, want ws and outside", len(ents))
	}
}
