package workspace

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzPath sends arbitrary names through Clean and every operation on a
// tree with links out, masked secrets and a hard link to an outside file.
// No operation may panic, return the secret, or change anything outside
// the workspace or behind a mask.
func FuzzPath(f *testing.F) {
	fx := makefs(f, []string{
		"plain", "dir/f", "dir/sub/", "l => ../outside/secret", "d => ../outside/outdir",
		"abs => $OUT/secret", "chain => l", "up => dir/../..", ".env=$SECRET", ".ssh/id=$SECRET",
		"inl => .env", "ind => .ssh", "k.PEM=$SECRET", "h ==> outside/secret", "loop => loop",
		".git/HEAD", ".git/refs/", ".git/config=[core]", ".git/hooks/", "g => .git",
		"bare.git/HEAD", "bare.git/refs/", "bare.git/config=[core]", "bare.git/hooks/", "sub/.git=gitdir: ../bare.git",
	}, nil)
	// All of .git is read-only for the tools; in a repository with another
	// name, its control files are.
	var gitFiles []string
	for _, g := range []string{".git", "bare.git/config", "bare.git/hooks", "sub/.git"} {
		gitFiles = append(gitFiles, filepath.Join(fx.ws, g))
	}
	gitBefore := make([]map[string]string, len(gitFiles))
	for i, g := range gitFiles {
		gitBefore[i] = snapshot(f, g)
	}
	guarded := []string{filepath.Join(fx.ws, ".env"), filepath.Join(fx.ws, ".ssh/id"), filepath.Join(fx.ws, "k.PEM")}
	outside := snapshot(f, fx.out)
	for _, s := range []string{
		"", ".", "..", "/", "\x00", "../outside/secret", "l", "d/s", "abs", "chain", "up/outside/secret",
		"inl", "ind/id", ".ENV", ".Ssh/ID", "a/../../x", "%2e%2e", ".ssh/", "h", "loop", "dir/./../dir/f",
		"dir//f", "dir/f/", "d/../plain", "ind/../.env", "K.pem", "\\..\\..", strings.Repeat("a/", 200),
		".git/config", ".git/hooks/pre-commit", "g/commondir", "bare.git/hooks", "sub/.git", ".GIT", "g/info/attributes",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		w := fx.w
		if rel, err := w.Clean("read", name); err == nil {
			if strings.HasPrefix(rel, "/") || rel == ".." || strings.HasPrefix(rel, "../") ||
				strings.IndexByte(rel, 0) >= 0 || path.Clean(rel) != rel {
				t.Fatalf("Clean(%q) = %q, accepted", name, rel)
			}
		}
		for _, op := range readOps {
			if data, _ := ops[op](w, name); leaks(data) {
				t.Fatalf("%s(%q) returned the secret", op, name)
			}
		}
		// Changes that cost no fsync, so the fuzzer stays fast; WriteFile
		// shares their parent resolution and is attacked by TestAttacks.
		_ = w.MkdirAll(name+"/x", 0o755)
		_ = w.Rename(name, "renamed")
		_ = w.Rename("renamed", name)
		for _, g := range guarded {
			if b, err := os.ReadFile(g); err != nil || string(b) != secret {
				t.Fatalf("after writes to %q, %s = %q, %v", name, g, b, err)
			}
		}
		for i, g := range gitFiles {
			if !equalMaps(gitBefore[i], snapshot(t, g)) {
				t.Fatalf("writes to %q changed git's files under %s", name, g)
			}
		}
		if after := snapshot(t, fx.out); !equalMaps(outside, after) {
			t.Fatalf("writes to %q changed the outside", name)
		}
	})
}
