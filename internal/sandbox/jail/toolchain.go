package jail

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Toolchain is what the jail adds so that the user's toolchains (go from
// /usr/local/go/bin, cargo from ~/.cargo/bin, node from nvm, ...) run in it
// as on the host: directories bound read-only at their own paths, the
// credential files found in them masked, and the jail's PATH.
type Toolchain struct {
	// Binds are host directories bound read-only at the same path.
	Binds []string
	// Masks are credential files inside Binds, covered with empty files.
	Masks []string
	// PATH is the jail's PATH: the host's entries the jail can run, in the
	// host's order, then the system directories of JailPATH not named.
	PATH string
	// Env is what a toolchain needs to find itself (RUSTUP_HOME).
	Env []string
	// Skipped says, per directory of the PATH left out, why.
	Skipped map[string]string
}

// toolchainSecrets are directory names that hold credentials: no
// toolchain directory is bound from inside one.
var toolchainSecrets = []string{".ssh", ".aws", ".gnupg", ".config", ".docker", ".kube", ".password-store", ".azure", ".gcloud", ".terraform.d", ".vault"}

// toolchainCredentials are files a toolchain's home keeps tokens in (cargo's
// credentials, npm's npmrc, a netrc); masked where a bound directory has
// them at its top or in etc/.
var toolchainCredentials = []string{
	"credentials", "credentials.toml", ".credentials", ".credentials.toml", ".npmrc", "etc/npmrc",
	".netrc", ".git-credentials", ".pypirc", "auth.json", ".env", "config.json",
}

// Toolchains works out the jail's toolchain directories from the host's
// PATH (hostPATH) and extra (toolchain_paths), for a jail on the workspace
// ws, where visible lists the host directories the jail shows anyway (the
// system directories, /usr, /opt, ...).
//
// A directory of the PATH is kept when it exists, is absolute, and lies
// neither in the workspace (the agent writes there) nor in a directory
// holding credentials (.ssh, .aws, .config, ...). A directory named bin is
// bound with its parent (a toolchain's root: /usr/local/go, ~/.nvm/versions/
// node/v22, ~/.cargo), unless the parent is HOME, a system directory, or
// ~/.local (which holds far more than programs); then the directory alone.
// For ~/.cargo/bin the sibling ~/.rustup is bound too, and RUSTUP_HOME set.
// Nothing is ever bound writable: caches (the Go module and build caches,
// cargo's registry) go to the jail's own HOME, where every toolchain puts
// them by default.
func Toolchains(hostPATH, home, ws string, extra, visible []string) *Toolchain {
	tc := &Toolchain{Skipped: map[string]string{}}
	isVisible := func(p string) bool {
		return slices.ContainsFunc(visible, func(v string) bool { return Within(v, p) })
	}
	var path []string
	addPath := func(d string) {
		if !slices.Contains(path, d) {
			path = append(path, d)
		}
	}
	bind := func(root string) {
		if isVisible(root) || slices.Contains(tc.Binds, root) {
			return
		}
		tc.Binds = append(tc.Binds, root)
		for _, c := range toolchainCredentials {
			p := filepath.Join(root, c)
			if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
				tc.Masks = append(tc.Masks, p)
			}
		}
	}
	system := filepath.SplitList(JailPATH)
	for _, d := range slices.Concat(extra, filepath.SplitList(hostPATH)) {
		if slices.Contains(system, d) {
			addPath(d)
			continue
		}
		real, why := toolchainDir(d, home, ws)
		if why != "" {
			tc.Skipped[d] = why
			continue
		}
		root := real
		if parent := filepath.Dir(real); filepath.Base(real) == "bin" && toolchainRoot(parent, home) {
			root = parent
		}
		if why := mayBindToolchain(root, home, ws); why != "" {
			tc.Skipped[d] = why
			continue
		}
		bind(root)
		addPath(real)
		if filepath.Base(root) == ".cargo" {
			rustup := filepath.Join(filepath.Dir(root), ".rustup")
			if st, err := os.Stat(rustup); err == nil && st.IsDir() && mayBindToolchain(rustup, home, ws) == "" && !slices.Contains(tc.Binds, rustup) {
				bind(rustup)
				tc.Env = append(tc.Env, "RUSTUP_HOME="+rustup)
			}
		}
	}
	for _, d := range system {
		addPath(d)
	}
	tc.PATH = strings.Join(path, ":")
	return tc
}

// toolchainDir resolves a directory of the PATH, or says why it is left out.
func toolchainDir(d, home, ws string) (string, string) {
	if !filepath.IsAbs(d) {
		return "", "not an absolute path"
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		return "", "does not exist"
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return "", "not a directory"
	}
	return real, mayBindToolchain(real, home, ws)
}

// toolchainRoot reports whether parent, the directory above a bin, is a
// toolchain's own root that may be bound whole.
func toolchainRoot(parent, home string) bool {
	switch {
	case parent == "/" || parent == home || slices.Contains(systemDirs, parent):
		return false
	case parent == "/usr/local" || parent == "/opt" || parent == "/snap" || parent == filepath.Join(home, ".local"):
		return false
	}
	return true
}

// mayBindToolchain says why root may not be bound into the jail ("" when
// it may): it must pass MayBind, lie outside the workspace and not contain
// it, not be or contain HOME, and have no credential directory among its
// path components.
func mayBindToolchain(root, home, ws string) string {
	switch {
	case MayBind(root, false) != nil:
		return "may never be bound into a jail"
	case Within(ws, root) || Within(root, ws):
		return "is in, or holds, the workspace"
	case home != "" && Within(root, home):
		return "is or holds HOME"
	case slices.Contains(systemDirs, root):
		return "is a system directory"
	}
	for _, part := range strings.Split(root, "/") {
		if slices.Contains(toolchainSecrets, strings.ToLower(part)) {
			return "lies in " + part + ", which holds credentials"
		}
	}
	return ""
}

// AddToolchain adds tc to the layout: the read-only binds before the
// workspace's (none of them holds it), the credential masks last.
func (l *Layout) AddToolchain(tc *Toolchain) {
	if tc == nil {
		return
	}
	var binds []Mount
	for _, b := range tc.Binds {
		binds = append(binds, Mount{Kind: Bind, Source: b, Target: b, ReadOnly: true})
		l.Readable = append(l.Readable, b)
	}
	at := slices.IndexFunc(l.Mounts, func(m Mount) bool { return m.Target == l.Workspace })
	if at < 0 {
		at = len(l.Mounts)
	}
	l.Mounts = slices.Insert(l.Mounts, at, binds...)
	for _, m := range tc.Masks {
		l.Mounts = append(l.Mounts, Mount{Kind: EmptyFile, Target: m})
	}
	l.Masked += len(tc.Masks)
}

// WithToolchain returns env with PATH replaced by tc's and tc's variables
// added.
func WithToolchain(env []string, tc *Toolchain) []string {
	if tc == nil {
		return env
	}
	out := slices.Clone(env)
	for i, kv := range out {
		if strings.HasPrefix(kv, "PATH=") {
			out[i] = "PATH=" + tc.PATH
		}
	}
	return append(out, tc.Env...)
}
