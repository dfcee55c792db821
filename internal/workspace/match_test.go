package workspace

import (
	"path"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// naiveMatch is the rule the compiled patterns implement, spelled out.
func naiveMatch(pat, rel string) bool {
	l := fold(rel)
	for d := l; d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if ok, _ := doublestar.Match(pat, d); ok {
			return true
		}
	}
	return false
}

var matchPatterns = append(append([]string{
	"**", "secrets/*.txt", "build/**", "a/b", "**/node_modules", "**/*.{crt,p12}", "**/x/**/y",
	"docs/**/*.md", "**/[ab].key", "lit", "**/a/b", "*", "*/c", "**/pre*", "**/*", "**/*.", "**/.*",
}, DefaultMask...), append(DefaultProtected, fileToolsProtected...)...)

// FuzzMatch checks the compiled patterns against the plain rule.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{".env", "a/.env.local", "x/.ssh", "x/.ssh/id", "k.pem", "a/b/c", "secrets/a.txt",
		"build", "build/x", "node_modules/a", ".git/hooks", ".git/hooks/x", ".git/config/x", "docs/a/b.md",
		"a.crt", "q/b.key", "x/q/y", "litx", "lit/x", "a.pem/b", "warden.toml", ".envrc", "c/d",
		".git/modules/a/b/config", ".git/modules/hooks", "x/.git/modules/y/hooks/z", ".gitmodules", "a/.git",
		".git/modules", ".GIT/Modules/A/Config", ".\u017fsh/x", ".git/worktrees/w/commondir"} {
		f.Add(s)
	}
	compiled := make([]pattern, len(matchPatterns))
	for i, p := range matchPatterns {
		compiled[i] = compile(p)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if len(rel) > 256 {
			return // Clean refuses names over 4096 bytes; keep the naive side fast
		}
		rel = path.Clean(rel)
		if strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, "..") || rel == "." {
			return
		}
		l := fold(rel)
		for i, p := range matchPatterns {
			want := naiveMatch(p, rel)
			if got := compiled[i].match(l); got != want {
				t.Errorf("pattern %q on %q: compiled %v, rule %v", p, rel, got, want)
			}
			// Listings test only the entry, when its directory is unmatched.
			if dir := path.Dir(rel); dir == "." || !naiveMatch(p, dir) {
				if got := compiled[i].matchEntry(l); got != want {
					t.Errorf("pattern %q on entry %q: compiled %v, rule %v", p, rel, got, want)
				}
			}
		}
	})
}
