// Package testenv is the one place tests ask for what the machine must
// have (bubblewrap, docker, sshd, chromium, a shell, PostgreSQL, root).
//
// A missing requirement skips the test with the reason, except under
// WARDEN_REQUIRE_SANDBOX=1 (set by CI), where it fails: CI installs
// everything the suite needs, so a skip there would hide a test that never
// ran. Only tests import this package.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Required reports whether a missing requirement is a failure
// (WARDEN_REQUIRE_SANDBOX=1, as in CI) rather than a skip.
func Required() bool { return os.Getenv("WARDEN_REQUIRE_SANDBOX") == "1" }

// Skip skips the test with the reason, or fails it under
// WARDEN_REQUIRE_SANDBOX=1.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s, and WARDEN_REQUIRE_SANDBOX=1 (CI installs it: scripts/test-deps)", why)
	}
	t.Skipf("skipping: %s; set WARDEN_REQUIRE_SANDBOX=1 to make this a failure", why)
}

// known lists where a program is looked for besides PATH, and what installs it.
var known = map[string]struct {
	paths   []string
	install string
}{
	"bwrap":    {install: "apt-get install bubblewrap"},
	"rg":       {install: "apt-get install ripgrep"},
	"docker":   {install: "apt-get install docker.io"},
	"dockerd":  {install: "apt-get install docker.io"},
	"sshd":     {paths: []string{"/usr/sbin/sshd"}, install: "apt-get install openssh-server"},
	"ssh":      {install: "apt-get install openssh-client"},
	"chromium": {paths: []string{"/usr/bin/chromium", "chromium-browser"}, install: "apt-get install chromium"},
	"busybox":  {paths: []string{"/bin/busybox", "/usr/bin/busybox"}, install: "apt-get install busybox-static"},
	"npx":      {install: "apt-get install nodejs npm"},
	"zsh":      {install: "apt-get install zsh"},
	"dash":     {install: "apt-get install dash"},
	"pg_ctl":   {paths: globPaths("/usr/lib/postgresql/*/bin/pg_ctl"), install: "apt-get install postgresql"},
	"initdb":   {paths: globPaths("/usr/lib/postgresql/*/bin/initdb"), install: "apt-get install postgresql"},
	"postgres": {paths: globPaths("/usr/lib/postgresql/*/bin/postgres"), install: "apt-get install postgresql"},
	// The agent hosts, pinned, from npm into a fixed prefix (scripts/test-deps).
	"claude": {paths: []string{"/opt/warden-test/npm/bin/claude"}, install: "scripts/test-deps: npm install @anthropic-ai/claude-code"},
	"codex":  {paths: []string{"/opt/warden-test/npm/bin/codex"}, install: "scripts/test-deps: npm install @openai/codex"},
	"gemini": {paths: []string{"/opt/warden-test/npm/bin/gemini"}, install: "scripts/test-deps: npm install @google/gemini-cli"},
}

func globPaths(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	return m
}

// Look returns the path of program, searching PATH and the places it is
// known to live, or "" when it is not installed.
func Look(program string) string {
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	for _, p := range known[program].paths {
		if lp, err := exec.LookPath(p); err == nil {
			return lp
		}
	}
	return ""
}

// Need returns the paths of the named programs, skipping the test (failing
// it under WARDEN_REQUIRE_SANDBOX=1) when one is missing. "root" is a
// requirement too: the test must run as uid 0.
func Need(t testing.TB, programs ...string) []string {
	t.Helper()
	paths := make([]string, 0, len(programs))
	for _, prog := range programs {
		if prog == "root" {
			if os.Geteuid() != 0 {
				Skip(t, "this test needs root")
			}
			paths = append(paths, "")
			continue
		}
		p := Look(prog)
		if p == "" {
			hint := known[prog].install
			if hint == "" {
				hint = "install it"
			}
			Skip(t, "%s is not installed (%s)", prog, hint)
		}
		paths = append(paths, p)
	}
	return paths
}
