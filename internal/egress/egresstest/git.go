package egresstest

import (
	"crypto/subtle"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GitRepo makes a bare repository "repo.git" under a new directory, with
// one commit holding README (content), and returns the directory.
func GitRepo(t testing.TB, git, content string) string {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")
	run := func(dir string, args ...string) {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.MkdirAll(work, 0o755)
	run(work, "init", "-q", "-b", "main")
	WriteFile(t, filepath.Join(work, "README"), []byte(content))
	run(work, "add", "README")
	run(work, "commit", "-q", "-m", "first")
	run(root, "clone", "-q", "--bare", work, filepath.Join(root, "repo.git"))
	return root
}

// GitHandler serves the repositories under root with git's smart HTTP
// protocol (git http-backend, through net/http/cgi). With a token, every
// request must carry Basic credentials whose password is the token (the
// way GitHub takes a token from git), else 401.
func GitHandler(git, root, token string) http.Handler {
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"},
	}
	if token == "" {
		return backend
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
}
