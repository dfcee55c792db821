package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noEnv is an empty environment, so that tests never read the real one.
func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// short renders an error as "LINE: key = value: msg" (no file, no column),
// so that one expectation serves a TOML and a YAML spelling of a case.
func short(e *Error) string {
	return fmt.Sprintf("%d: %s", e.Line, (&Error{Key: e.Key, Value: e.Value, Msg: e.Msg}).Error())
}

func errorList(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, want *Errors: %v", err, err)
	}
	return errs.List
}

func shorts(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, e := range errorList(t, err) {
		out = append(out, short(e))
	}
	return out
}

// setup writes a user config and a workspace file (either may be "") and
// returns load options for them. Names decide the format.
type setup struct {
	user, userName string
	ws, wsName     string
	env            map[string]string
	flags          Overrides
}

func (s setup) opts(t *testing.T) (LoadOptions, string, string) {
	t.Helper()
	root := t.TempDir()
	wsDir := filepath.Join(root, "ws")
	if err := os.MkdirAll(wsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := LoadOptions{WorkspaceDir: wsDir, UserFile: "-", Getenv: envOf(s.env), Flags: s.flags}
	userPath, wsPath := "", ""
	if s.user != "" {
		name := s.userName
		if name == "" {
			name = "config.toml"
		}
		userPath = writeFile(t, filepath.Join(root, "user", name), s.user)
		opts.UserFile = userPath
	}
	if s.ws != "" {
		name := s.wsName
		if name == "" {
			name = "warden.toml"
		}
		wsPath = writeFile(t, filepath.Join(wsDir, name), s.ws)
	}
	return opts, userPath, wsPath
}

func (s setup) load(t *testing.T) (ld *Loaded, u, w string, err error) {
	t.Helper()
	opts, u, w := s.opts(t)
	ld, err = Load(opts)
	return ld, u, w, err
}

func stripDir(s, dir string) string { return strings.ReplaceAll(s, dir, "") }
