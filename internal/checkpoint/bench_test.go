package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The benchmarks run warden's checkpoints and, on the same tree in the same
// run, what a user would do instead: commit to a scratch git repository
// (git add -A && git commit), copy the tree (cp -a), or snapshot it with
// rsync (incremental: --link-dest). bench/checkpoint.sh runs them and
// prints the ratios.
//
// The tree: WARDEN_BENCH_FILES files (default 10,000) totalling about
// WARDEN_BENCH_MB (default 200), 20 per directory, three levels deep.
func benchSize() (files int, bytes int64) {
	files, mb := 10000, 200
	if v, err := strconv.Atoi(os.Getenv("WARDEN_BENCH_FILES")); err == nil && v > 0 {
		files = v
	}
	if v, err := strconv.Atoi(os.Getenv("WARDEN_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	return files, int64(mb) << 20
}

// benchTree writes the benchmark tree into dir and returns its files.
func benchTree(b testing.TB, dir string, n int, total int64) []string {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	avg := total / int64(n)
	buf := make([]byte, 4*avg+1)
	for i := range buf {
		buf[i] = "abcdefghij klmnop\nqrstuvwxyz0123456789"[r.IntN(38)]
	}
	var files []string
	for i := 0; i < n; i++ {
		rel := filepath.Join(fmt.Sprintf("d%02d", i/2000), fmt.Sprintf("e%02d", (i/200)%10), fmt.Sprintf("f%02d", (i/20)%10), fmt.Sprintf("file%05d.txt", i))
		p := filepath.Join(dir, rel)
		if i%20 == 0 {
			must(b, os.MkdirAll(filepath.Dir(p), 0o755))
		}
		size := r.Int64N(2*avg) + 1
		off := r.Int64N(int64(len(buf)) - size)
		data := append([]byte(fmt.Sprintf("%d\n", i)), buf[off:off+size]...)
		must(b, os.WriteFile(p, data, 0o644))
		files = append(files, rel)
	}
	return files
}

// pristine is a benchmark tree shared by the sub-benchmarks of one group;
// each copies it.
type pristine struct {
	dir   string
	files []string
}

func newPristine(b *testing.B) *pristine {
	n, total := benchSize()
	p := &pristine{dir: filepath.Join(b.TempDir(), "tree")}
	p.files = benchTree(b, p.dir, n, total)
	return p
}

// workspace copies the pristine tree to a new directory. Its files are
// given times a second old: a real workspace's files were not all written
// within a clock tick of the first checkpoint (see racy).
func (p *pristine) workspace(b *testing.B) string {
	ws := filepath.Join(b.TempDir(), "ws")
	run(b, "", "cp", "-a", p.dir, ws)
	time.Sleep(150 * time.Millisecond)
	return ws
}

// run runs a command and returns the CPU time (user and system) it used.
func run(b testing.TB, dir string, name string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// selfCPU is the CPU time this process has used, all threads.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter adds up the CPU time of the timed part of a benchmark, which is
// steadier than wall time on a machine that others are loading.
type cpuMeter struct{ d time.Duration }

// self measures f, run in this process.
func (m *cpuMeter) self(f func()) {
	t := selfCPU()
	f()
	m.d += selfCPU() - t
}

func (m *cpuMeter) add(d time.Duration) { m.d += d }

func (m *cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(m.d.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func need(b *testing.B, prog string) {
	if _, err := exec.LookPath(prog); err != nil {
		b.Skipf("%s is not installed", prog)
	}
}

// gitSnap commits the whole of ws to a scratch repository kept outside it.
func gitSnap(b testing.TB, gitDir, ws string) time.Duration {
	return run(b, ws, "git", "--git-dir="+gitDir, "--work-tree="+ws, "add", "-A") +
		run(b, ws, "git", "--git-dir="+gitDir, "--work-tree="+ws, "commit", "-q", "--no-verify", "--allow-empty", "-m", "snapshot")
}

func gitInit(b testing.TB, gitDir string) time.Duration {
	return run(b, "", "git", "init", "-q", "--bare", gitDir) +
		run(b, "", "git", "--git-dir="+gitDir, "config", "core.bare", "false")
}

func change10(b testing.TB, ws string, files []string, i int) {
	for k := 0; k < 10; k++ {
		p := filepath.Join(ws, files[(i*10+k)*37%len(files)])
		must(b, os.WriteFile(p, []byte(fmt.Sprintf("changed %d %d\n", i, k)), 0o644))
	}
}

func openStore(b *testing.B, ws, state string) *fixture {
	fx := &fixture{ws: ws, state: state}
	fx.open(b, nil)
	return fx
}

// BenchmarkFirstCheckpoint: recording a whole workspace for the first time.
func BenchmarkFirstCheckpoint(b *testing.B) {
	p := newPristine(b)
	b.Run("warden", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		ws := p.workspace(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			fx := openStore(b, ws, filepath.Join(b.TempDir(), "state"))
			b.StartTimer()
			m.self(func() { fx.checkpoint(b) })
		}
	})
	b.Run("git", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		need(b, "git")
		ws := p.workspace(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			g := filepath.Join(b.TempDir(), "git")
			b.StartTimer()
			m.add(gitInit(b, g))
			m.add(gitSnap(b, g, ws))
		}
	})
	b.Run("cp", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		ws := p.workspace(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dst := filepath.Join(b.TempDir(), "copy")
			b.StartTimer()
			m.add(run(b, "", "cp", "-a", ws, dst))
		}
	})
	b.Run("rsync", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		need(b, "rsync")
		ws := p.workspace(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dst := filepath.Join(b.TempDir(), "copy")
			b.StartTimer()
			m.add(run(b, "", "rsync", "-a", ws+"/", dst+"/"))
		}
	})
}

// BenchmarkIncrementalCheckpoint: recording the workspace again after 10
// files changed.
func BenchmarkIncrementalCheckpoint(b *testing.B) {
	p := newPristine(b)
	b.Run("warden", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		ws := p.workspace(b)
		fx := openStore(b, ws, filepath.Join(b.TempDir(), "state"))
		fx.checkpoint(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			change10(b, ws, p.files, i)
			b.StartTimer()
			m.self(func() { fx.checkpoint(b) })
		}
	})
	b.Run("git", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		need(b, "git")
		ws := p.workspace(b)
		g := filepath.Join(b.TempDir(), "git")
		gitInit(b, g)
		gitSnap(b, g, ws)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			change10(b, ws, p.files, i)
			b.StartTimer()
			m.add(gitSnap(b, g, ws))
		}
	})
	b.Run("rsync-link-dest", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		need(b, "rsync")
		ws := p.workspace(b)
		snaps := b.TempDir()
		prev := filepath.Join(snaps, "0")
		run(b, "", "rsync", "-a", ws+"/", prev+"/")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			change10(b, ws, p.files, i)
			next := filepath.Join(snaps, strconv.Itoa(i+1))
			b.StartTimer()
			m.add(run(b, "", "rsync", "-a", "--link-dest="+prev, ws+"/", next+"/"))
			prev = next
		}
	})
	b.Run("cp", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		ws := p.workspace(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			change10(b, ws, p.files, i)
			dst := filepath.Join(b.TempDir(), "copy")
			b.StartTimer()
			m.add(run(b, "", "cp", "-a", ws, dst))
		}
	})
}

// BenchmarkUndoDeletion: bringing back 1,000 deleted files (half the tree
// when it is smaller).
func BenchmarkUndoDeletion(b *testing.B) {
	p := newPristine(b)
	n := min(1000, len(p.files)/2)
	del := func(b *testing.B, ws string) {
		for _, f := range p.files[:n] {
			must(b, os.Remove(filepath.Join(ws, f)))
		}
	}
	b.Run("warden", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		ws := p.workspace(b)
		fx := openStore(b, ws, filepath.Join(b.TempDir(), "state"))
		c := fx.checkpoint(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			del(b, ws)
			b.StartTimer()
			var res *UndoResult
			var err error
			m.self(func() { res, err = fx.store.Undo(context.Background(), c, nil) })
			must(b, err)
			if got := len(res.Plan.Changes()); got < n {
				b.Fatalf("undo restored %d paths, want %d", got, n)
			}
		}
	})
	b.Run("git", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		need(b, "git")
		ws := p.workspace(b)
		g := filepath.Join(b.TempDir(), "git")
		gitInit(b, g)
		gitSnap(b, g, ws)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			del(b, ws)
			b.StartTimer()
			m.add(run(b, ws, "git", "--git-dir="+g, "--work-tree="+ws, "checkout", "-f", "--", "."))
		}
	})
	b.Run("rsync", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		need(b, "rsync")
		ws := p.workspace(b)
		backup := filepath.Join(b.TempDir(), "backup")
		run(b, "", "rsync", "-a", ws+"/", backup+"/")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			del(b, ws)
			b.StartTimer()
			m.add(run(b, "", "rsync", "-a", "--delete", backup+"/", ws+"/"))
		}
	})
	b.Run("cp", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		ws := p.workspace(b)
		backup := filepath.Join(b.TempDir(), "backup")
		run(b, "", "cp", "-a", ws, backup)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			del(b, ws)
			b.StartTimer()
			m.add(run(b, "", "cp", "-a", backup+"/.", ws))
		}
	})
}

// BenchmarkHundredCheckpoints takes 100 incremental checkpoints (10 files
// changed before each) and reports the disk used after the first and after
// all of them. (git may pack its loose objects on the way: git gc --auto.)
func BenchmarkHundredCheckpoints(b *testing.B) {
	p := newPristine(b)
	b.Run("warden", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		for i := 0; i < b.N; i++ {
			ws := p.workspace(b)
			fx := openStore(b, ws, filepath.Join(b.TempDir(), "state"))
			fx.checkpoint(b)
			first := duKiB(b, fx.store.Dir())
			b.ResetTimer()
			for j := 0; j < 100; j++ {
				b.StopTimer()
				change10(b, ws, p.files, j)
				b.StartTimer()
				m.self(func() { fx.checkpoint(b) })
			}
			b.StopTimer()
			b.ReportMetric(float64(first)/1024, "MiB-first")
			b.ReportMetric(float64(duKiB(b, fx.store.Dir()))/1024, "MiB-after-100")
		}
	})
	b.Run("git", func(b *testing.B) {
		var m cpuMeter
		defer m.report(b)
		need(b, "git")
		for i := 0; i < b.N; i++ {
			ws := p.workspace(b)
			g := filepath.Join(b.TempDir(), "git")
			gitInit(b, g)
			gitSnap(b, g, ws)
			first := duKiB(b, g)
			b.ResetTimer()
			for j := 0; j < 100; j++ {
				b.StopTimer()
				change10(b, ws, p.files, j)
				b.StartTimer()
				m.add(gitSnap(b, g, ws))
			}
			b.StopTimer()
			b.ReportMetric(float64(first)/1024, "MiB-first")
			b.ReportMetric(float64(duKiB(b, g))/1024, "MiB-after-100")
		}
	})
}

// duKiB is the disk dir uses, as du -sk counts it (hard links once).
func duKiB(b testing.TB, dir string) int64 {
	out, err := exec.Command("du", "-sk", dir).Output()
	must(b, err)
	n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	must(b, err)
	return n
}
