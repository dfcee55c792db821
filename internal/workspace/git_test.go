package workspace

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/go-cmp/cmp"
)

// gitTree is a workspace holding git's control surface in every shape the
// table below attacks: the top repository, a submodule's git directory
// (with a submodule of its own), a linked worktree, a gitlink, a nested
// checkout, a bare repository and a git directory reached through a .git
// symbolic link.
var gitTree = []string{
	"plain",
	".git/HEAD=ref: refs/heads/main", ".git/refs/heads/", ".git/objects/", ".git/config=[core]",
	".git/hooks/pre-commit.sample", ".git/info/exclude",
	".git/modules/lib/a/HEAD", ".git/modules/lib/a/refs/", ".git/modules/lib/a/config=[core]",
	".git/modules/lib/a/modules/b/HEAD", ".git/modules/lib/a/modules/b/config=[core]",
	".git/worktrees/wt/HEAD", ".git/worktrees/wt/commondir=../..",
	".gitmodules=[submodule \"lib/a\"]",
	"lib/a/.git=gitdir: ../../.git/modules/lib/a",
	"vendor/x/.git/HEAD", "vendor/x/.git/refs/", "vendor/x/.git/config=[core]",
	"bare.git/HEAD", "bare.git/refs/", "bare.git/objects/", "bare.git/config=[core]", "bare.git/hooks/",
	"gitdata/HEAD", "gitdata/refs/", "gitdata/config=[core]",
	"linked/.git => ../gitdata",
	"togit => .git", "tohooks => .git/hooks",
	"wtgit/HEAD", "wtgit/commondir=../.git",
	"src/config/app.ts", "docs/hooks/readme",
}

// TestGitControlFiles tries every change on every git control file, under
// every spelling: each must be refused as protected, by the rule named,
// before anyone is asked (Check) and when it runs, and leave the
// workspace's git files as they were.
func TestGitControlFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		rule string // the rule the refusal names
		link bool   // reached through a symbolic link: Check, which reads names, lets it pass
	}{
		// The top repository; files that exist and files that do not.
		{path: ".git/config", rule: "**/.git/config"},
		{path: ".git/config.worktree", rule: "**/.git/config.worktree"},
		{path: ".git/commondir", rule: "**/.git/commondir"},
		{path: ".git/hooks", rule: "**/.git/hooks"},
		{path: ".git/hooks/pre-commit", rule: "**/.git/hooks"},
		{path: ".git/hooks/pre-commit.sample", rule: "**/.git/hooks"},
		{path: ".git/info/attributes", rule: "**/.git/info"},
		{path: ".git/info/exclude", rule: "**/.git/info"},
		{path: ".git/info", rule: "**/.git/info"},
		{path: ".git/worktrees/wt/commondir", rule: "**/.git/worktrees"},
		{path: ".git/worktrees/new/config.worktree", rule: "**/.git/worktrees"},
		{path: ".git/remotes/origin", rule: "**/.git/remotes"},
		{path: ".git/branches/origin", rule: "**/.git/branches"},
		// A submodule's git directory, and a submodule of a submodule.
		{path: ".git/modules/lib/a/config", rule: "**/.git/modules/**/config"},
		{path: ".git/modules/lib/a/config.worktree", rule: "**/.git/modules/**/config.worktree"},
		{path: ".git/modules/lib/a/commondir", rule: "**/.git/modules/**/commondir"},
		{path: ".git/modules/lib/a/hooks/post-checkout", rule: "**/.git/modules/**/hooks"},
		{path: ".git/modules/lib/a/info/attributes", rule: "**/.git/modules/**/info"},
		{path: ".git/modules/lib/a/worktrees/w/commondir", rule: "**/.git/modules/**/commondir"},
		{path: ".git/modules/lib/a/remotes/origin", rule: "**/.git/modules/**/remotes"},
		{path: ".git/modules/lib/a/branches/x", rule: "**/.git/modules/**/branches"},
		{path: ".git/modules/lib/a/modules/b/config", rule: "**/.git/modules/**/config"},
		{path: ".git/modules/lib/a/modules/b/hooks/pre-push", rule: "**/.git/modules/**/hooks"},
		// .gitmodules, at the top and in a submodule.
		{path: ".gitmodules", rule: "**/.gitmodules"},
		{path: "lib/a/.gitmodules", rule: "**/.gitmodules"},
		// Gitlinks: one that exists, one that would be created; .git itself.
		{path: "lib/a/.git", rule: "**/.git"},
		{path: "newsub/.git", rule: "**/.git"},
		{path: ".git", rule: "**/.git"},
		{path: "linked/.git", rule: "**/.git"},
		// The rest of .git, read-only for the file tools.
		{path: ".git/HEAD", rule: "**/.git"},
		{path: ".git/objects/info/alternates", rule: "**/.git"},
		{path: ".git/rebase-merge/git-rebase-todo", rule: "**/.git"},
		// A nested checkout at any depth.
		{path: "vendor/x/.git/config", rule: "**/.git/config"},
		{path: "vendor/x/.git/hooks/pre-commit", rule: "**/.git/hooks"},
		{path: "vendor/x/.git/commondir", rule: "**/.git/commondir"},
		{path: "deep/er/still/.git/config", rule: "**/.git/config"},
		// Other spellings of the same names.
		{path: ".git/./config", rule: "**/.git/config"},
		{path: "./.git/config", rule: "**/.git/config"},
		{path: ".git//config", rule: "**/.git/config"},
		{path: "src/../.git/config", rule: "**/.git/config"},
		{path: ".git/config/", rule: "**/.git/config"},
		{path: ".GIT/config", rule: "**/.git/config"},
		{path: ".Git/Hooks/Pre-Commit", rule: "**/.git/hooks"},
		{path: ".git/hoo\u212As/pre-commit", rule: "**/.git/hooks"}, // KELVIN SIGN
		{path: ".git/modules/x/config.worktree", rule: "**/.git/modules/**/config.worktree"},
		{path: ".gitmodule\u017f", rule: "**/.gitmodules"}, // LONG S
		{path: ".GITMODULES", rule: "**/.gitmodules"},
		// Symbolic links leading into a git directory.
		{path: "togit/config", rule: "git directory togit"},
		{path: "togit/hooks/pre-commit", rule: "git directory togit"},
		{link: true, path: "tohooks/pre-commit", rule: "**/.git/hooks"},
		{path: "linked/.git/config", rule: "**/.git/config"},
		// Git directories not named .git: found by what git looks for.
		{path: "gitdata/config", rule: "git directory gitdata"},
		{path: "gitdata/hooks/pre-commit", rule: "git directory gitdata"},
		{path: "bare.git/config", rule: "git directory bare.git"},
		{path: "bare.git/hooks/post-receive", rule: "git directory bare.git"},
		{path: "bare.git/info/attributes", rule: "git directory bare.git"},
		{path: "wtgit/config.worktree", rule: "git directory wtgit"},
		{path: "wtgit/commondir", rule: "git directory wtgit"},
		{path: "bare.git/Config", rule: "git directory bare.git"},
	}
	for _, tt := range tests {
		for _, op := range writeOps {
			t.Run(tt.path+"/"+op, func(t *testing.T) {
				t.Parallel()
				fx := makefs(t, gitTree, nil)
				before := gitSnapshot(t, fx.ws)
				_, err := ops[op](fx.w, tt.path)
				var pe *PathError
				if !errors.Is(err, ErrProtected) || !errors.As(err, &pe) {
					t.Fatalf("%s(%q) = %v, want ErrProtected", op, tt.path, err)
				}
				if pe.Rule != tt.rule {
					t.Errorf("%s(%q) refused by rule %q, want %q", op, tt.path, pe.Rule, tt.rule)
				}
				if cerr := fx.w.Check(op, tt.path, true); !tt.link && !errors.Is(cerr, ErrProtected) {
					t.Errorf("Check(%q) = %v, want ErrProtected before anyone is asked", tt.path, cerr)
				}
				if diff := cmp.Diff(before, gitSnapshot(t, fx.ws)); diff != "" {
					t.Errorf("%s(%q) changed the workspace (-before +after):\n%s", op, tt.path, diff)
				}
			})
		}
	}
}

// gitSnapshot is snapshot without the entries the write ops use freely.
func gitSnapshot(t *testing.T, ws string) map[string]string {
	s := snapshot(t, ws)
	for _, p := range []string{"plain", "moved"} {
		delete(s, filepath.Join(ws, p))
	}
	return s
}

// TestGitNeighboursStayWritable: names that look like git's but are not
// its control files are ordinary files.
func TestGitNeighboursStayWritable(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"src/config/app.ts", "config", "src/config.go", "docs/hooks/readme", "hooks/pre-commit",
		".gitignore", ".gitattributes", ".github/workflows/ci.yml", "my.git/readme", ".git-blame-ignore-revs",
		"info/x", "vendor/x/config", "gitdata.bak/config",
	} {
		fx := makefs(t, gitTree, nil)
		if err := fx.w.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Errorf("WriteFile(%q) = %v, want success", p, err)
		}
		if err := fx.w.Check("write", p, true); err != nil {
			t.Errorf("Check(%q) = %v, want nil", p, err)
		}
	}
}

// TestGitControlTable checks the table itself: valid lowercase patterns,
// each kind where it belongs, and DefaultProtected equal to its GitConfig
// rows (the list a jail applies).
func TestGitControlTable(t *testing.T) {
	t.Parallel()
	var cfg []string
	for _, r := range GitControl {
		if !doublestar.ValidatePattern(r.Pattern) || r.Pattern != strings.ToLower(r.Pattern) || r.Why == "" {
			t.Errorf("row %q: want a valid lowercase pattern and a reason", r.Pattern)
		}
		if r.Kind == GitConfig {
			cfg = append(cfg, r.Pattern)
		}
	}
	if diff := cmp.Diff(cfg, DefaultProtected); diff != "" {
		t.Errorf("DefaultProtected is not the GitConfig rows (-rows +DefaultProtected):\n%s", diff)
	}
	for _, p := range []string{"**/.git", "**/.gitmodules"} {
		if slices.Contains(DefaultProtected, p) {
			t.Errorf("%s is in DefaultProtected: a jail would make all of .git (or .gitmodules) read-only and break git commit", p)
		}
	}
}

// TestFoldedSpellings: a case-folding directory opens .ſsh for .ssh; the
// masks fold the same way.
func TestFoldedSpellings(t *testing.T) {
	t.Parallel()
	fx := makefs(t, []string{"plain"}, nil)
	for _, p := range []string{".\u017fsh/id", ".\u00dfh/id", ".\u1e9eh/id", "x.\u212aey", "\ufb01le.pem"} {
		if err := fx.w.WriteFile(p, []byte("x"), 0o644); !errors.Is(err, ErrMasked) {
			t.Errorf("WriteFile(%q) = %v, want ErrMasked", p, err)
		}
	}
	// A letter whose folding is not ASCII stays a name of its own.
	if err := fx.w.WriteFile(".en\u1d20", []byte("x"), 0o644); err != nil {
		t.Errorf("WriteFile(.en\\u1d20) = %v, want success", err)
	}
}
