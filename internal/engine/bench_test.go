package engine

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

const benchContent = 4096

func benchWorkspace(b *testing.B) string {
	dir := b.TempDir()
	line := strings.Repeat("x", 63) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(strings.Repeat(line, benchContent/64)), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkReadFileEngine is read_file of a 4 KiB file through the whole
// pipeline: lookup, schema, guards, policy, confined read, audit (JSON
// lines to a discarding writer).
func BenchmarkReadFileEngine(b *testing.B) {
	dir := benchWorkspace(b)
	root, err := workspace.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	cfg := config.Default()
	eng, err := New(Options{
		Registry: tools.Builtin(cfg),
		Env:      &tools.Env{FS: root, Root: root, Config: cfg},
		Audit:    audit.NewJSONLines(io.Discard),
	})
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"path":"f.txt"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := eng.Call(ctx, "read_file", args); !res.Success {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkReadFileOS is the same read with os.ReadFile, the baseline.
func BenchmarkReadFileOS(b *testing.B) {
	p := filepath.Join(benchWorkspace(b), "f.txt")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}
