package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// makeTree builds a file tree under dir from specs, os.Root-test style:
// "name/" is a directory, "name => target" a symbolic link, "name == other"
// a hard link to other, and "name=content" a file ("\x00" allowed).
func makeTree(t testing.TB, dir string, specs ...string) {
	t.Helper()
	for _, s := range specs {
		var err error
		switch {
		case strings.HasSuffix(s, "/"):
			err = os.MkdirAll(filepath.Join(dir, s), 0o755)
		case strings.Contains(s, " => "):
			name, target, _ := strings.Cut(s, " => ")
			p := filepath.Join(dir, name)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Symlink(target, p)
			}
		case strings.Contains(s, " == "):
			name, other, _ := strings.Cut(s, " == ")
			p := filepath.Join(dir, name)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Link(other, p)
			}
		default:
			name, content, ok := strings.Cut(s, "=")
			if !ok {
				t.Fatalf("bad spec %q", s)
			}
			p := filepath.Join(dir, name)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.WriteFile(p, []byte(content), 0o644)
			}
		}
		if err != nil {
			t.Fatalf("spec %q: %v", s, err)
		}
	}
}

// fixture is a workspace with ignore files at several levels, a negation,
// .git/info/exclude, masked secrets, a binary file and links and a hard
// link leading out. Every file holds "needle"; only some may be seen.
func fixture(t testing.TB) (*Env, string) {
	t.Helper()
	outside := t.TempDir()
	makeTree(t, outside, "secret.txt=needle outside\n", "dir/deep.txt=needle outside dir\n")
	ws := t.TempDir()
	makeTree(t, ws,
		".gitignore=# build output\n*.log\nbuild/\n!keep.log\n\n",
		".git/info/exclude=secret-notes.txt\n",
		".git/HEAD=needle in git\n",
		".env=TOKEN=needle\n",
		"keys/server.pem=needle\n",
		"a.go=package a\n// needle here\nfunc A() {}\n",
		"app.log=needle in log\n",
		"keep.log=needle kept\n",
		"build/out.txt=needle\n",
		"secret-notes.txt=needle\n",
		"sub/.gitignore=*.tmp\n/local.txt\n",
		"sub/x.tmp=needle\n",
		"sub/local.txt=needle\n",
		"sub/deeper/local.txt=needle\n",
		"sub/deeper/b.txt=NEEDLE upper\nno\nneedle again\n",
		"sub/deeper/.ssh/id=needle\n",
		"bin.dat=\x00\x01needle\n",
		"escape => "+filepath.Join(outside, "dir"),
		"passwd => "+filepath.Join(outside, "secret.txt"),
		"inner => a.go",
		"envlink => .env",
		"hard.txt == "+filepath.Join(outside, "secret.txt"),
	)
	return envAt(t, ws), ws
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	env, _ := fixture(t)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, `.gitignore
a.go
bin.dat
envlink@
escape@
hard.txt
inner@
keep.log
keys/
passwd@
sub/
sub/.gitignore
sub/deeper/
[5 entries ignored by .gitignore not shown]
`},
		{map[string]any{"path": "sub", "depth": 5}, `sub/.gitignore
sub/deeper/
sub/deeper/b.txt
sub/deeper/local.txt
[2 entries ignored by .gitignore not shown]
`},
		{map[string]any{"path": "sub/deeper/b.txt"}, "sub/deeper/b.txt\n"},
		{map[string]any{"path": "keys"}, "(keys is empty)\n"},
		// Named explicitly, an ignored directory is listed (its parent's rules do not hide its contents).
		{map[string]any{"path": "build"}, "build/out.txt\n"},
	}
	for _, tc := range tests {
		got, err := runTool(t, ListFiles(), env, tc.args)
		if err != nil {
			t.Errorf("list_files %v: %v", tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("list_files %v (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestListFilesRefusals(t *testing.T) {
	t.Parallel()
	env, _ := fixture(t)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "../"}, "escapes"},
		{map[string]any{"path": "/etc"}, "escapes"},
		{map[string]any{"path": "escape"}, "escapes"},
		{map[string]any{"path": "sub/deeper/.ssh"}, "masked"},
		{map[string]any{"path": ".env"}, "masked"},
		{map[string]any{"path": "a\x00b"}, "valid"},
		{map[string]any{"depth": 0}, "depth"},
		{map[string]any{"depth": 11}, "depth"},
		{map[string]any{"deep": 1}, "unknown field"},
		{map[string]any{"path": "nope"}, "does not exist"},
	} {
		got, err := runTool(t, ListFiles(), env, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("list_files %v = %q, %v; want an error mentioning %q", tc.args, got, err, tc.want)
		}
	}
}

func TestListFilesCap(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	var specs []string
	for i := range listMaxEntries + 20 {
		specs = append(specs, fmt.Sprintf("f%04d.txt=x", i))
	}
	makeTree(t, ws, specs...)
	got, err := runTool(t, ListFiles(), envAt(t, ws), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != listMaxEntries+1 || lines[0] != "f0000.txt" || lines[listMaxEntries-1] != fmt.Sprintf("f%04d.txt", listMaxEntries-1) {
		t.Fatalf("got %d lines, first %q", len(lines), lines[0])
	}
	if want := "[20 more entries not shown; list a subdirectory or lower depth]"; lines[listMaxEntries] != want {
		t.Errorf("last line %q, want %q", lines[listMaxEntries], want)
	}
}

func TestComparePaths(t *testing.T) {
	t.Parallel()
	got := []string{"a.go", "a/", "a/b", "a-b", "a/b/c", "ab"}
	want := []string{"a/", "a/b", "a/b/c", "a-b", "a.go", "ab"}
	slices.SortFunc(got, comparePaths)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestFindFiles(t *testing.T) {
	t.Parallel()
	env, _ := fixture(t)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "*.txt"}, "hard.txt\nsub/deeper/b.txt\nsub/deeper/local.txt\n[5 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "**/*.log"}, "keep.log\n[5 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "deeper/*.txt", "path": "sub"}, "sub/deeper/b.txt\nsub/deeper/local.txt\n[2 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "*"}, ".gitignore\na.go\nbin.dat\nenvlink@\nescape@\nhard.txt\ninner@\nkeep.log\npasswd@\nsub/.gitignore\nsub/deeper/b.txt\nsub/deeper/local.txt\n[5 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "{a,keep}.*"}, "a.go\nkeep.log\n[5 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "*.pem"}, "No files match \"*.pem\" under the workspace root.\n[5 entries ignored by .gitignore not shown]\n"},
		{map[string]any{"pattern": "id"}, "No files match \"id\" under the workspace root.\n[5 entries ignored by .gitignore not shown]\n"},
	}
	for _, tc := range tests {
		got, err := runTool(t, FindFiles(), env, tc.args)
		if err != nil {
			t.Errorf("find_files %v: %v", tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("find_files %v (-want +got):\n%s", tc.args, diff)
		}
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "[", "path": "."}, "not a valid"},
		{map[string]any{"pattern": "/etc/*"}, "not a valid"},
		{map[string]any{"pattern": "*", "path": "../x"}, "escapes"},
		{map[string]any{"pattern": "*", "path": "escape"}, "escapes"},
		{map[string]any{"pattern": "*", "path": "sub/deeper/.ssh"}, "masked"},
	} {
		if got, err := runTool(t, FindFiles(), env, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("find_files %v = %q, %v; want an error mentioning %q", tc.args, got, err, tc.want)
		}
	}
}

// FuzzIgnoreRules feeds arbitrary .gitignore content (workspace data, so
// untrusted) through the parser and matcher used by every walk.
func FuzzIgnoreRules(f *testing.F) {
	f.Add("*.log\n!keep.log\nbuild/\n/local\n**/gen/**\n\\#x\n[", "a/b/keep.log", true)
	f.Add("a/**/b\n\\!x  \n \n#c", "a/x/y/b", false)
	f.Fuzz(func(t *testing.T, content, p string, isDir bool) {
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, ".gitignore"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		env := envAt(t, ws)
		rules := appendIgnoreFile(env.FS, nil, ".gitignore", nil)
		comps := strings.Split(strings.Trim(p, "/"), "/")
		ignoredBy(rules, comps, isDir)
		if _, err := rulesFor(env.FS, "."); err != nil {
			t.Fatal(err)
		}
	})
}
