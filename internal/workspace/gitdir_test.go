package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestGitDirContents tries to get past the guards of a root that may write
// inside .git (the checkpoint restore's): refs and objects are writable,
// but .git itself cannot be removed, renamed, replaced or planted as a
// gitlink, and git's control files stay read-only — directly, through a
// submodule's git directory, and through a symbolic link. The file tools'
// root writes nothing under .git.
func TestGitDirContents(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, d := range []string{".git/refs/heads", ".git/objects", ".git/hooks", ".git/modules/sub/hooks", "sub", "other"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, c := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".git/modules/sub/HEAD": "x\n", ".git/modules/sub/config": "[core]\n"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(ws, ".git/modules/sub/refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(ws, "gitlink")); err != nil {
		t.Fatal(err)
	}
	restore, err := Open(ws, &Options{GitDirContents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer restore.Close()
	tools, err := Open(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()

	for _, name := range []string{".git/refs/heads/main", ".git/objects/ab", ".git/index"} {
		if err := restore.WriteFile(name, []byte("x"), 0o644); err != nil {
			t.Errorf("restore root: write %s: %v", name, err)
		}
		if err := tools.WriteFile(name, []byte("x"), 0o644); !errors.Is(err, ErrProtected) {
			t.Errorf("file tools' root wrote %s: %v", name, err)
		}
	}
	refused := []struct {
		what string
		do   func() error
	}{
		{"write .git/config", func() error { return restore.WriteFile(".git/config", []byte("[core]\nfsmonitor = x\n"), 0o644) }},
		{"write .GIT/Config", func() error { return restore.WriteFile(".GIT/Config", []byte("x"), 0o644) }},
		{"write a hook", func() error { return restore.WriteFile(".git/hooks/pre-commit", []byte("#!/bin/sh\n"), 0o755) }},
		{"write commondir", func() error { return restore.WriteFile(".git/commondir", []byte("../evil\n"), 0o644) }},
		{"write a submodule's config", func() error { return restore.WriteFile(".git/modules/sub/config", []byte("x"), 0o644) }},
		{"write config through a link", func() error { return restore.WriteFile("gitlink/config", []byte("x"), 0o644) }},
		{"plant a gitlink", func() error { return restore.WriteFile("sub/.git", []byte("gitdir: ../other\n"), 0o644) }},
		{"remove .git", func() error { return restore.Remove(".git") }},
		{"rename .git", func() error { return restore.Rename(".git", "old-git") }},
		{"rename onto .git", func() error { return restore.Rename("other", ".git") }},
		{"make other/.git", func() error { return restore.MkdirAll("other/.git", 0o755) }},
	}
	for _, r := range refused {
		if err := r.do(); err == nil {
			t.Errorf("restore root: %s succeeded", r.what)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config = %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git/HEAD")); err != nil {
		t.Errorf(".git moved: %v", err)
	}
}
