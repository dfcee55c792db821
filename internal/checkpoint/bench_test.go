package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The benchmark workspace: benchFiles files in nested directories, about
// benchBytes in total, like a mid-sized repository (WARDEN_BENCH_FILES and
// WARDEN_BENCH_MB change it).
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

// benchTree writes a workspace of n files totalling about total bytes
// (sizes spread from a few bytes to a few hundred KiB, text and binary),
// 20 files per directory, three levels deep, with times a minute old.
func benchTree(b testing.TB, dir string, n int, total int64) []string {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	avg := total / int64(n)
	buf := make([]byte, 4*avg+1)
	for i := range buf {
		buf[i] = "abcdefghij klmnop\nqrstuvwxyz0123456789"[r.IntN(38)]
	}
	old := time.Now().Add(-time.Minute)
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
		must(b, os.Chtimes(p, old, old))
		files = append(files, rel)
	}
	return files
}

func benchFixture(b *testing.B) (*fixture, []string) {
	n, total := benchSize()
	fx := newFixture(b, nil)
	files := benchTree(b, fx.ws, n, total)
	// A file written within a clock tick of a scan is read again by the
	// next one (see racy); a real workspace's files are older than that.
	time.Sleep(200 * time.Millisecond)
	return fx, files
}

// BenchmarkFirstCheckpoint: the first checkpoint of a workspace (every
// file read, hashed and stored).
func BenchmarkFirstCheckpoint(b *testing.B) {
	fx, _ := benchFixture(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		os.RemoveAll(fx.store.Dir())
		fx.open(b, nil)
		b.StartTimer()
		fx.checkpoint(b)
	}
}

// BenchmarkIncrementalCheckpoint: a checkpoint after 10 files changed.
func BenchmarkIncrementalCheckpoint(b *testing.B) {
	fx, files := benchFixture(b)
	fx.checkpoint(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for k := 0; k < 10; k++ {
			p := filepath.Join(fx.ws, files[(i*10+k)*37%len(files)])
			must(b, os.WriteFile(p, []byte(fmt.Sprintf("changed %d %d\n", i, k)), 0o644))
		}
		b.StartTimer()
		fx.checkpoint(b)
	}
}

// BenchmarkUndoDeletion: restoring 1,000 deleted files.
func BenchmarkUndoDeletion(b *testing.B) {
	fx, files := benchFixture(b)
	c := fx.checkpoint(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, f := range files[:1000] {
			must(b, os.Remove(filepath.Join(fx.ws, f)))
		}
		b.StartTimer()
		res, err := fx.store.Undo(context.Background(), c, nil)
		must(b, err)
		if n := len(res.Plan.Changes()); n < 1000 {
			b.Fatalf("undo restored %d paths", n)
		}
	}
}

// BenchmarkHundredCheckpoints reports the store's size after 100
// incremental checkpoints, 10 changed files each.
func BenchmarkHundredCheckpoints(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fx, files := benchFixture(b)
		fx.checkpoint(b)
		first := dirBytes(b, fx.store.Dir())
		b.StartTimer()
		for j := 0; j < 100; j++ {
			for k := 0; k < 10; k++ {
				p := filepath.Join(fx.ws, files[(j*10+k)*37%len(files)])
				must(b, os.WriteFile(p, []byte(fmt.Sprintf("changed %d %d\n", j, k)), 0o644))
			}
			fx.checkpoint(b)
		}
		b.StopTimer()
		b.ReportMetric(float64(first)/(1<<20), "MiB-first")
		b.ReportMetric(float64(dirBytes(b, fx.store.Dir())-first)/(1<<20), "MiB-100-more")
	}
}

func dirBytes(b testing.TB, dir string) int64 {
	var n int64
	must(b, filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return err
	}))
	return n
}
