package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/internal/hook"
)

func BenchmarkHookRead(b *testing.B) {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	b.Setenv("HOME", filepath.Join(dir, "home"))
	b.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg"))
	b.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	ev := []byte(`{"hook_event_name":"PreToolUse","session_id":"perf","cwd":"` + ws + `","tool_name":"Read","tool_input":{"file_path":"` + ws + `/a.txt"},"tool_use_id":"t1"}`)
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if code := runHook(context.Background(), &globalFlags{}, hook.ClaudeCode, "", "warden", bytes.NewReader(ev), &out, io.Discard); code != 0 || !bytes.Contains(out.Bytes(), []byte("allow")) {
			b.Fatalf("%d %s", code, out.Bytes())
		}
	}
}
