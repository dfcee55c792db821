package workspace

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/testenv"
)

// BenchmarkReadFile reads a 4 KiB file through the workspace, through a
// symbolic link inside it (the /proc check), and with plain os and os.Root.
func BenchmarkReadFile(b *testing.B) {
	fx := makefs(b, []string{"src/pkg/file.go=" + string(bytes.Repeat([]byte("x"), 4096)), "link => src/pkg/file.go"}, nil)
	host := filepath.Join(fx.ws, "src/pkg/file.go")
	root, err := os.OpenRoot(fx.ws)
	must(b, err)
	defer root.Close()
	b.Run("workspace", func(b *testing.B) {
		for b.Loop() {
			if _, err := fx.w.ReadFile("src/pkg/file.go", 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("workspace-link", func(b *testing.B) {
		for b.Loop() {
			if _, err := fx.w.ReadFile("link", 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(host); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.Root", func(b *testing.B) {
		for b.Loop() {
			if _, err := root.ReadFile("src/pkg/file.go"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWalkRead walks the Go distribution's source tree and reads every
// regular file, as a grep does, through the workspace and with plain os.
func BenchmarkWalkRead(b *testing.B) {
	out, err := exec.Command(testenv.Need(b, "go")[0], "env", "GOROOT").Output()
	if err != nil {
		b.Fatalf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(src); err != nil {
		testenv.Skip(b, "the Go distribution has no source tree at %s", src)
	}
	w, err := Open(src, nil)
	must(b, err)
	defer w.Close()
	b.Run("workspace", func(b *testing.B) {
		for b.Loop() {
			var n int
			must(b, w.Walk(".", func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if data, err := w.ReadFile(p, 0); err == nil {
						n += len(data)
					}
				}
				return nil
			}))
			b.ReportMetric(float64(n), "bytes/op")
		}
	})
	b.Run("os", func(b *testing.B) {
		for b.Loop() {
			var n int
			must(b, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if data, err := os.ReadFile(p); err == nil {
						n += len(data)
					}
				}
				return nil
			}))
			b.ReportMetric(float64(n), "bytes/op")
		}
	})
	b.Run("workspace-walk-only", func(b *testing.B) {
		for b.Loop() {
			must(b, w.Walk(".", func(string, fs.DirEntry, error) error { return nil }))
		}
	})
	b.Run("os-walk-only", func(b *testing.B) {
		for b.Loop() {
			must(b, filepath.WalkDir(src, func(string, fs.DirEntry, error) error { return nil }))
		}
	})
}
