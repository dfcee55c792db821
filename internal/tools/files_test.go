package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// newEnv returns an Env over a fresh workspace holding files (name → content).
func newEnv(t *testing.T, files map[string]string) (*Env, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &Env{FS: root, Root: root, Config: config.Default()}, dir
}

func call(t *testing.T, tool *Tool, env *Env, args any) (string, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Guard != nil {
		if _, err := tool.Guard(env, b); err != nil {
			return "", err
		}
	}
	return tool.Run(context.Background(), env, b)
}

func TestReadFileMatchesOS(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a.txt":            "one\ntwo\nthree\n",
		"no-newline.txt":   "last line",
		"sub/deep/x.go":    "package x\n",
		"empty":            "",
		"unicode/ñandú.md": "ñ\n",
	}
	env, dir := newEnv(t, files)
	for name := range files {
		got, err := call(t, ReadFile(), env, map[string]any{"path": name})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want, _ := os.ReadFile(filepath.Join(dir, name))
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s differs from os.ReadFile (-os +tool):\n%s", name, diff)
		}
	}
}

func TestReadFileWindow(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		b.WriteString(strings.Repeat("x", i) + "\n")
	}
	env, _ := newEnv(t, map[string]string{"f": b.String(), "bin": "ab\x00cd"})
	got, err := call(t, ReadFile(), env, map[string]any{"path": "f", "offset": 3, "limit": 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := "xxx\nxxxx\n[lines 3-4 of 10; use offset and limit to read more]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, _ := call(t, ReadFile(), env, map[string]any{"path": "f", "offset": 50}); !strings.Contains(got, "past its end") {
		t.Errorf("offset past end: %q", got)
	}
	if _, err := call(t, ReadFile(), env, map[string]any{"path": "bin"}); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("binary file: %v", err)
	}
	if _, err := call(t, ReadFile(), env, map[string]any{"path": "f", "offset": -1}); err == nil {
		t.Error("negative offset accepted")
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	env, dir := newEnv(t, map[string]string{"exec.sh": "old"})
	if err := os.Chmod(filepath.Join(dir, "exec.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"exec.sh": "#!/bin/sh\n", "new/dir/file.txt": "hello"} {
		if _, err := call(t, WriteFile(), env, map[string]any{"path": name, "content": content}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != content {
			t.Errorf("%s: got %q, %v", name, got, err)
		}
	}
	st, _ := os.Stat(filepath.Join(dir, "exec.sh"))
	if st.Mode().Perm() != 0o750 {
		t.Errorf("mode not kept: %v", st.Mode())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), "tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestEditFile(t *testing.T) {
	t.Parallel()
	orig := "alpha beta\nbeta gamma\n"
	tests := []struct {
		name    string
		args    map[string]any
		want    string
		wantErr string
	}{
		{"unique", map[string]any{"old_str": "alpha", "new_str": "ALPHA"}, "ALPHA beta\nbeta gamma\n", ""},
		{"not unique", map[string]any{"old_str": "beta", "new_str": "B"}, orig, "occurs 2 times"},
		{"replace all", map[string]any{"old_str": "beta", "new_str": "B", "replace_all": true}, "alpha B\nB gamma\n", ""},
		{"absent", map[string]any{"old_str": "delta", "new_str": "D"}, orig, "was not found"},
		{"empty old", map[string]any{"old_str": "", "new_str": "D"}, orig, "must not be empty"},
		{"whitespace matters", map[string]any{"old_str": "alpha  beta", "new_str": "x"}, orig, "was not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, dir := newEnv(t, map[string]string{"f.txt": orig})
			tt.args["path"] = "f.txt"
			out, err := call(t, EditFile(), env, tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if !strings.Contains(out, "@@") {
				t.Errorf("no diff in output: %q", out)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
			// Differential: the result is what strings.Replace gives.
			if string(got) != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeleteFile(t *testing.T) {
	t.Parallel()
	env, dir := newEnv(t, map[string]string{"gone.txt": "x", ".git/config": "[core]"})
	if _, err := call(t, DeleteFile(), env, map[string]any{"path": "gone.txt"}); !errors.Is(err, ErrDeleteDisabled) {
		t.Fatalf("delete without allow_delete: %v", err)
	}
	env.Config.Workspace.AllowDelete = true
	if _, err := call(t, DeleteFile(), env, map[string]any{"path": ".git/config"}); !errors.Is(err, workspace.ErrProtected) {
		t.Errorf("deleting a protected file: %v", err)
	}
	if _, err := call(t, DeleteFile(), env, map[string]any{"path": "../outside"}); !errors.Is(err, workspace.ErrEscapes) {
		t.Errorf("deleting outside: %v", err)
	}
	if _, err := call(t, DeleteFile(), env, map[string]any{"path": "gone.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file still there: %v", err)
	}
}

func TestDecodeArgsStrict(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`{"path":"a","x":1}`, `{"path":1}`, `{"path":"a"} 1`, `[`} {
		if _, err := decodeArgs[readArgs](json.RawMessage(raw)); err == nil {
			t.Errorf("decodeArgs(%s) accepted", raw)
		}
	}
}
