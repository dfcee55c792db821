package jail

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gitTree makes a workspace with a repository, a submodule (its git
// directory in .git/modules, its gitlink in the work tree), a submodule of
// a submodule, and a nested repository.
func gitTree(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{
		".git/objects", ".git/refs/heads", ".git/hooks",
		".git/modules/sub/objects", ".git/modules/sub/refs", ".git/modules/sub/hooks",
		".git/modules/lib/deep/refs", ".git/modules/lib/deep/modules/inner/refs",
		"sub", "vendor/x/.git/refs",
	} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".git/index": "",
		".git/modules/sub/HEAD": "x\n", ".git/modules/sub/config": "[core]\n",
		".git/modules/lib/deep/HEAD": "x\n", ".git/modules/lib/deep/modules/inner/HEAD": "x\n",
		"sub/.git":           "gitdir: ../.git/modules/sub\n",
		"vendor/x/.git/HEAD": "x\n", "vendor/x/.git/config": "[core]\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func TestResolveGit(t *testing.T) {
	t.Parallel()
	ws := gitTree(t)
	g, err := ResolveGit(ws)
	if err != nil {
		t.Fatal(err)
	}
	j := func(ps ...string) []string {
		for i, p := range ps {
			ps[i] = filepath.Join(ws, p)
		}
		slices.Sort(ps)
		return ps
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	if diff := cmp.Diff(j(".git", "vendor/x/.git"), sorted(g.Dirs)); diff != "" {
		t.Errorf("git directories (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(j(".git/config", ".git/hooks", ".git/modules/sub/config", ".git/modules/sub/hooks", "sub/.git", "vendor/x/.git/config"), sorted(g.Protect)); diff != "" {
		t.Errorf("read-only (-want +got):\n%s", diff)
	}
	// Every git directory gets the entries it lacks, with the content that
	// means "absent" to git.
	var gitDirs = []string{".git", ".git/modules/sub", ".git/modules/lib/deep", ".git/modules/lib/deep/modules/inner", "vendor/x/.git"}
	var wantDirs []string
	wantFiles := map[string]string{}
	for _, gd := range gitDirs {
		for _, c := range gitControl {
			p := filepath.Join(ws, gd, c.name)
			if slices.Contains(g.Protect, p) {
				continue
			}
			if c.dir {
				wantDirs = append(wantDirs, p)
			} else {
				wantFiles[p] = c.placeholder
			}
		}
	}
	slices.Sort(wantDirs)
	if diff := cmp.Diff(wantDirs, sorted(g.EmptyDirs)); diff != "" {
		t.Errorf("missing directories (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantFiles, g.Files); diff != "" {
		t.Errorf("missing files (-want +got):\n%s", diff)
	}
	if g.Files[filepath.Join(ws, ".git/commondir")] != ".\n" {
		t.Errorf("commondir placeholder %q: git takes an empty commondir as an error", g.Files[filepath.Join(ws, ".git/commondir")])
	}
}

// PrepareMasks creates the missing entries on the host (through an
// os.Root: a symbolic link in the workspace cannot send them elsewhere) and
// the layout binds every git directory onto itself and its control entries
// read-only, writable as the workspace around them is.
func TestGitLayout(t *testing.T) {
	t.Parallel()
	ws := gitTree(t)
	m, h, err := PrepareMasks(ws, nil, nil)
	defer h.Release()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, ".git/commondir")); err != nil || string(b) != ".\n" {
		t.Errorf(".git/commondir on the host: %q, %v", b, err)
	}
	for _, d := range []string{".git/info", ".git/worktrees", ".git/modules/sub/info"} {
		if st, err := os.Stat(filepath.Join(ws, d)); err != nil || !st.IsDir() {
			t.Errorf("%s was not created: %v", d, err)
		}
	}
	for _, lockdown := range []bool{false, true} {
		l, err := NewLayout(ws, "/usr/local/bin/warden", Settings{Lockdown: lockdown}, m)
		if err != nil {
			t.Fatal(err)
		}
		find := func(target string) []Mount {
			var out []Mount
			for _, mt := range l.Mounts {
				if mt.Target == target {
					out = append(out, mt)
				}
			}
			return out
		}
		gitBind := Mount{Kind: Bind, Source: filepath.Join(ws, ".git"), Target: filepath.Join(ws, ".git"), ReadOnly: lockdown}
		if diff := cmp.Diff([]Mount{gitBind}, find(filepath.Join(ws, ".git"))); diff != "" {
			t.Errorf("lockdown %v: .git (-want +got):\n%s", lockdown, diff)
		}
		for _, p := range []string{".git/config", ".git/commondir", ".git/config.worktree", ".git/hooks", ".git/info", ".git/worktrees", ".git/modules/sub/config", "sub/.git"} {
			want := []Mount{{Kind: Bind, Source: filepath.Join(ws, p), Target: filepath.Join(ws, p), ReadOnly: true}}
			if diff := cmp.Diff(want, find(filepath.Join(ws, p))); diff != "" {
				t.Errorf("lockdown %v: %s (-want +got):\n%s", lockdown, p, diff)
			}
		}
		// .git comes before what it holds.
		i := slices.IndexFunc(l.Mounts, func(mt Mount) bool { return mt.Target == filepath.Join(ws, ".git") })
		k := slices.IndexFunc(l.Mounts, func(mt Mount) bool { return mt.Target == filepath.Join(ws, ".git/config") })
		if i < 0 || k < i {
			t.Errorf("the .git bind (%d) does not come before .git/config (%d)", i, k)
		}
	}
	// A mask hides more than a read-only bind: a masked .git stays masked.
	m2, h2, err := PrepareMasks(ws, []string{"vendor/**"}, nil)
	defer h2.Release()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(m2.GitDirs, filepath.Join(ws, "vendor/x/.git")) || slices.Contains(m2.Protect, filepath.Join(ws, "vendor/x/.git/config")) {
		t.Errorf("a masked repository is bound too: %v %v", m2.GitDirs, m2.Protect)
	}
}

// A symbolic link a mount cannot hold (.git, or a control entry) refuses
// the jail, and nothing is created through it.
func TestGitSymlinksRefused(t *testing.T) {
	t.Parallel()
	for _, link := range []string{".git/hooks", ".git/info", ".git/commondir", "vendor/x/.git", ".git/modules/sub/config"} {
		t.Run(link, func(t *testing.T) {
			ws := gitTree(t)
			outside := t.TempDir()
			p := filepath.Join(ws, link)
			os.RemoveAll(p)
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
			if _, _, err := PrepareMasks(ws, nil, nil); err == nil {
				t.Fatalf("a jail was prepared with %s a symbolic link", link)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("something was created through the link: %v", ents)
			}
		})
	}
}
