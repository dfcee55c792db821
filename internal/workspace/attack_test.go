package workspace

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// attack is one attempt to get past a guard: ops run on path in a fresh
// fixture must all fail with want, never return the secret, and never
// change anything outside the workspace.
type attack struct {
	why  string
	fs   []string
	path string
	ops  string // "all", "reads", "writes" or op names, space-separated
	want error
}

var attacks = []attack{
	// Traversal.
	{why: "dot-dot", path: "..", ops: "all", want: ErrEscapes},
	{why: "dot-dot to a file", path: "../outside/secret", ops: "all", want: ErrEscapes},
	{why: "dot-dot after a name", path: "a/../../outside/secret", ops: "all", want: ErrEscapes},
	{why: "dot-slash dot-dot", path: "./../outside/secret", ops: "all", want: ErrEscapes},
	{why: "dot-dot through an existing dir", fs: []string{"dir/"}, path: "dir/../../outside/secret", ops: "all", want: ErrEscapes},
	{why: "dot-dot deep", path: "a/b/c/../../../../outside", ops: "all", want: ErrEscapes},
	{why: "encoded dot-dot is a name", path: "%2e%2e/outside/secret", ops: "reads", want: fs.ErrNotExist},
	{why: "encoded slash is a name", path: "..%2f..%2foutside%2fsecret", ops: "reads", want: fs.ErrNotExist},
	{why: "backslashes are a name", path: `..\..\outside\secret`, ops: "reads", want: fs.ErrNotExist},
	{why: "triple dot is a name", path: ".../outside/secret", ops: "reads", want: fs.ErrNotExist},

	// Absolute paths.
	{why: "absolute", path: "/etc/passwd", ops: "all", want: ErrEscapes},
	{why: "absolute to the outside secret", path: "$OUT/secret", ops: "all", want: ErrEscapes},
	{why: "root", path: "/", ops: "all", want: ErrEscapes},
	{why: "double slash", path: "//etc/passwd", ops: "all", want: ErrEscapes},

	// NUL bytes.
	{why: "NUL at the end", path: "plain\x00", ops: "all", want: ErrInvalid},
	{why: "NUL in the middle", path: "pl\x00ain", ops: "all", want: ErrInvalid},
	{why: "NUL truncating an escape", path: "plain\x00/../../outside/secret", ops: "all", want: ErrInvalid},
	{why: "longer than PATH_MAX", path: strings.Repeat("a/", 2049), ops: "all", want: ErrInvalid},

	// Symbolic links leading out.
	{why: "file link, absolute target", fs: []string{"l => $OUT/secret"}, path: "l", ops: "read open stat readdir walk dirpath", want: ErrEscapes},
	{why: "file link, relative target", fs: []string{"l => ../outside/secret"}, path: "l", ops: "read open stat readdir walk dirpath", want: ErrEscapes},
	{why: "write to an escaping link", fs: []string{"l => ../outside/secret"}, path: "l", ops: "write", want: ErrSymlink},
	{why: "dir link", fs: []string{"d => ../outside/outdir"}, path: "d/s", ops: "all", want: ErrEscapes},
	{why: "dir link, absolute", fs: []string{"d => $OUT/outdir"}, path: "d/s", ops: "all", want: ErrEscapes},
	{why: "dir link itself", fs: []string{"d => ../outside/outdir"}, path: "d", ops: "read open stat readdir walk dirpath", want: ErrEscapes},
	{why: "dir link, new file", fs: []string{"d => ../outside/outdir"}, path: "d/new", ops: "write mkdir mvto", want: ErrEscapes},
	{why: "dir link, new dir", fs: []string{"d => ../outside/dir"}, path: "d/x/y", ops: "write mkdir", want: ErrEscapes},
	{why: "dangling link", fs: []string{"l => ../outside/nothere"}, path: "l", ops: "read open stat readdir walk dirpath", want: ErrEscapes},
	{why: "dangling link, write", fs: []string{"l => ../outside/nothere"}, path: "l", ops: "write", want: ErrSymlink},
	{why: "dangling dir link", fs: []string{"l => ../outside/newdir"}, path: "l/x", ops: "write mkdir mvto", want: ErrEscapes},
	{why: "chained links", fs: []string{"c1 => c2", "c2 => sub/c3", "sub/c3 => ../../outside/secret"}, path: "c1", ops: "read open stat walk", want: ErrEscapes},
	{why: "chained dir links", fs: []string{"c1 => c2", "c2 => ../outside"}, path: "c1/outdir/s", ops: "all", want: ErrEscapes},
	{why: "link via dot-dot inside", fs: []string{"dir/", "l => dir/../../outside/secret"}, path: "l", ops: "read open stat", want: ErrEscapes},
	{why: "link to root", fs: []string{"l => /"}, path: "l/etc/passwd", ops: "all", want: ErrEscapes},
	{why: "magic link", fs: []string{"l => /proc/self/root/etc/passwd"}, path: "l", ops: "read open stat", want: ErrEscapes},
	{why: "link loop", fs: []string{"l => l"}, path: "l", ops: "read open stat", want: syscall.ELOOP},

	// Masks, on files that exist and files that do not.
	{why: ".env exists", fs: []string{".env=$SECRET"}, path: ".env", ops: "all", want: ErrMasked},
	{why: ".env does not exist", path: ".env", ops: "all", want: ErrMasked},
	{why: ".env.local", fs: []string{".env.local=$SECRET"}, path: ".env.local", ops: "all", want: ErrMasked},
	{why: "nested .env", fs: []string{"app/.env=$SECRET"}, path: "app/.env", ops: "all", want: ErrMasked},
	{why: "case: .ENV", fs: []string{".ENV=$SECRET"}, path: ".ENV", ops: "all", want: ErrMasked},
	{why: "case: .Env.Local nested", path: "sub/.Env.Local", ops: "all", want: ErrMasked},
	{why: "case: Id_Rsa.PEM", fs: []string{"Id_Rsa.PEM=$SECRET"}, path: "Id_Rsa.PEM", ops: "all", want: ErrMasked},
	{why: "case: server.KEY nested", path: "x/y/server.KEY", ops: "all", want: ErrMasked},
	{why: "case: .SSH/config", fs: []string{".SSH/config=$SECRET"}, path: ".SSH/config", ops: "all", want: ErrMasked},
	{why: ".ssh dir", fs: []string{".ssh/id_rsa=$SECRET"}, path: ".ssh", ops: "all", want: ErrMasked},
	{why: "below .ssh", fs: []string{".ssh/id_rsa=$SECRET"}, path: ".ssh/id_rsa", ops: "all", want: ErrMasked},
	{why: "deep below .aws", path: "home/.aws/credentials", ops: "all", want: ErrMasked},
	{why: ".gnupg", path: ".gnupg/x", ops: "all", want: ErrMasked},
	{why: "warden.toml", fs: []string{"warden.toml=$SECRET"}, path: "warden.toml", ops: "all", want: ErrMasked},
	{why: "masked via dot-dot", fs: []string{"dir/", ".env=$SECRET"}, path: "dir/../.env", ops: "all", want: ErrMasked},
	{why: "masked via trailing slash", fs: []string{".ssh/id_rsa=$SECRET"}, path: ".ssh/", ops: "all", want: ErrMasked},

	// Masks reached through links inside the workspace.
	{why: "link to .env", fs: []string{".env=$SECRET", "l => .env"}, path: "l", ops: "read open stat walk", want: ErrMasked},
	{why: "link to .ssh", fs: []string{".ssh/id_rsa=$SECRET", "l => .ssh"}, path: "l/id_rsa", ops: "read open stat lstat", want: ErrMasked},
	{why: "link to .ssh, list", fs: []string{".ssh/id_rsa=$SECRET", "l => .ssh"}, path: "l", ops: "readdir walk dirpath", want: ErrMasked},
	{why: "link to .ssh, write", fs: []string{".ssh/", "l => .ssh"}, path: "l/authorized_keys", ops: "write mkdir mvto", want: ErrMasked},
	{why: "link chain to key", fs: []string{"k/server.key=$SECRET", "a => b", "b => k"}, path: "a/server.key", ops: "read open stat", want: ErrMasked},
	{why: "link to masked dir, case", fs: []string{".AWS/credentials=$SECRET", "l => .AWS"}, path: "l/credentials", ops: "read open stat", want: ErrMasked},

	// Protected paths: readable, never changed.
	{why: "protected .git/config", fs: []string{".git/config"}, path: ".git/config", ops: "writes", want: ErrProtected},
	{why: "protected hook", fs: []string{".git/hooks/pre-commit"}, path: ".git/hooks/pre-commit", ops: "writes", want: ErrProtected},
	{why: "nested repository's config runs code too (core.fsmonitor)", fs: []string{"vendor/lib/"}, path: "vendor/lib/.git/config", ops: "writes", want: ErrProtected},
	{why: "nested repository's hook", fs: []string{"sub/.git/hooks/"}, path: "sub/.git/hooks/post-checkout", ops: "writes", want: ErrProtected},
	{why: "protected in another case", fs: []string{".git/"}, path: ".GIT/CONFIG", ops: "writes", want: ErrProtected},
	{why: "new hook", fs: []string{".git/hooks/"}, path: ".git/hooks/post-checkout", ops: "write mkdir mvto", want: ErrProtected},
	{why: "hooks dir", fs: []string{".git/hooks/"}, path: ".git/hooks", ops: "writes", want: ErrProtected},
	{why: "case: .GIT/CONFIG", path: ".GIT/CONFIG", ops: "write mkdir mvto", want: ErrProtected},
	{why: "link to .git/config", fs: []string{".git/config", "l => .git/config"}, path: "l", ops: "write", want: ErrSymlink},
	{why: "dir link to .git/hooks", fs: []string{".git/hooks/", "h => .git/hooks"}, path: "h/pre-commit", ops: "write mkdir mvto", want: ErrProtected},
	{why: "dir link to .git", fs: []string{".git/config", "g => .git"}, path: "g/config", ops: "writes", want: ErrProtected},
	{why: "rename .git away", fs: []string{".git/config", ".git/HEAD"}, path: ".git", ops: "mvfrom", want: ErrProtected},
	{why: "rename a tree holding a key", fs: []string{"keys/a/id.pem=$SECRET"}, path: "keys", ops: "mvfrom", want: ErrMasked},

	// Hard links.
	{why: "hard link to an outside file", fs: []string{"h ==> outside/secret"}, path: "h", ops: "read open", want: ErrHardLink},
}

func TestAttacks(t *testing.T) {
	t.Parallel()
	for _, a := range attacks {
		names := strings.Fields(a.ops)
		switch a.ops {
		case "all":
			names = allOps
		case "reads":
			names = readOps
		case "writes":
			names = writeOps
		}
		for _, op := range names {
			t.Run(a.why+"/"+op, func(t *testing.T) {
				t.Parallel()
				fx := makefs(t, append([]string{"plain"}, a.fs...), nil)
				p := strings.ReplaceAll(a.path, "$OUT", fx.out)
				before := snapshot(t, fx.out)
				f, ok := ops[op]
				if !ok {
					t.Fatalf("unknown op %q", op)
				}
				data, err := f(fx.w, p)
				if leaks(data) {
					t.Errorf("%s(%q) returned the secret: %q", op, p, data)
				}
				if !errors.Is(err, a.want) {
					t.Errorf("%s(%q) = %v, want an error wrapping %v", op, p, err, a.want)
				}
				var pe *PathError
				if err != nil && !errors.As(err, &pe) {
					t.Errorf("%s(%q) error %T is not a *PathError", op, p, err)
				}
				if pe != nil && pe.Path != p && pe.Path != "moved" && pe.Path != "plain" {
					t.Errorf("%s(%q): PathError.Path = %q, want the path given", op, p, pe.Path)
				}
				if after := snapshot(t, fx.out); !equalMaps(before, after) {
					t.Errorf("%s(%q) changed the outside:\nbefore %v\nafter  %v", op, p, before, after)
				}
			})
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
