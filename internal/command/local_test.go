package command

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testEnv() []string { return []string{"PATH=/usr/bin:/bin"} }

func TestLocalRunsInDirWithExactEnv(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	l := &Local{Root: root}
	res, err := l.Run(context.Background(), Spec{Shell: "pwd; env | sort; read x || echo stdin-empty", AbsDir: sub, Env: []string{"PATH=/usr/bin:/bin", "A=1"}})
	if err != nil {
		t.Fatal(err)
	}
	// bash adds PWD, SHLVL and _ itself; nothing else may appear.
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
		if strings.HasPrefix(line, "PWD=") || strings.HasPrefix(line, "SHLVL=") || strings.HasPrefix(line, "_=") || strings.HasPrefix(line, "OLDPWD=") {
			continue
		}
		got = append(got, line)
	}
	want := []string{sub, "A=1", "PATH=/usr/bin:/bin", "stdin-empty"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if res.ExitCode != 0 || res.TimedOut {
		t.Errorf("exit %d timedOut %v", res.ExitCode, res.TimedOut)
	}
}

func TestLocalRefusesUnresolvedDir(t *testing.T) {
	t.Parallel()
	l := &Local{Root: t.TempDir()}
	for _, spec := range []Spec{
		{Argv: []string{"true"}, Dir: "sub"},              // relative Dir not resolved by the workspace
		{Argv: []string{"true"}, AbsDir: "relative/path"}, // not absolute
		{Argv: []string{"true"}, Shell: "true"},           // both
		{},                                                // neither
	} {
		if _, err := l.Run(context.Background(), spec); err == nil {
			t.Errorf("Run(%+v) = nil error, want a refusal", spec)
		}
	}
	if _, err := (&Local{}).Run(context.Background(), Spec{Argv: []string{"true"}}); err == nil {
		t.Error("Local without Root ran a command")
	}
}

// A secret in warden's environment must not reach a command: Environ
// passes only the allowlist.
func TestEnvironScrubsCanary(t *testing.T) {
	const canary = "WARDEN_TEST_CANARY_API_KEY"
	t.Setenv(canary, "sk-canary-0123456789")
	t.Setenv("GITHUB_TOKEN", "ghp_canary")
	t.Setenv("LC_TIME", "C")
	t.Setenv("MY_ALLOWED", "yes")
	env := Environ([]string{"MY_ALLOWED", "", "BAD NAME"}, os.LookupEnv)
	l := &Local{Root: t.TempDir()}
	res, err := l.Run(context.Background(), Spec{Argv: []string{"env"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"sk-canary", canary, "ghp_canary", "GITHUB_TOKEN"} {
		if strings.Contains(res.Output, bad) {
			t.Errorf("env output contains %q:\n%s", bad, res.Output)
		}
	}
	for _, good := range []string{"PATH=", "LC_TIME=C", "MY_ALLOWED=yes"} {
		if !strings.Contains(res.Output, good) {
			t.Errorf("env output lacks %q:\n%s", good, res.Output)
		}
	}
	// A nil Env must not mean "inherit".
	res, err = l.Run(context.Background(), Spec{Argv: []string{"/usr/bin/env"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Output, "canary") {
		t.Errorf("nil Env inherited warden's environment:\n%s", res.Output)
	}
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	// A zombie still answers kill 0; it is gone for our purpose.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// A command that forks a sleeping grandchild holding the output pipe is
// killed whole at its timeout, and Run does not hang on the pipe.
func TestLocalTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	l := &Local{Root: dir, WaitDelay: 500 * time.Millisecond}
	script := fmt.Sprintf("sh -c 'sleep 300 & echo $! > %s; wait' & sleep 300", pidFile)
	start := time.Now()
	res, err := l.Run(context.Background(), Spec{Shell: script, Env: testEnv(), Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Run took %s after a 500ms timeout", el)
	}
	if !res.TimedOut {
		t.Errorf("TimedOut = false, want true (%+v)", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("grandchild %d survived the timeout", pid)
	}
}

// A command that exits at once but leaves a background child holding its
// stdout returns promptly, and the child is killed.
func TestLocalBackgroundChildCleanedUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	l := &Local{Root: dir, WaitDelay: 300 * time.Millisecond}
	start := time.Now()
	res, err := l.Run(context.Background(), Spec{Shell: "sleep 300 & echo $! > " + pidFile + "; echo done", Env: testEnv(), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Run took %s for a command that exits at once", el)
	}
	if res.TimedOut || !strings.Contains(res.Output, "done") {
		t.Errorf("result %+v", res)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(3 * time.Second)
	for pid > 0 && alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pid <= 0 || alive(pid) {
		t.Fatalf("background child %d survived", pid)
	}
}

func TestLocalExitCodeAndSignal(t *testing.T) {
	t.Parallel()
	l := &Local{Root: t.TempDir()}
	for _, tc := range []struct {
		shell string
		want  int
	}{{"exit 3", 3}, {"true", 0}, {"kill -TERM $$", 128 + 15}} {
		res, err := l.Run(context.Background(), Spec{Shell: tc.shell, Env: testEnv()})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != tc.want {
			t.Errorf("%q: exit %d, want %d", tc.shell, res.ExitCode, tc.want)
		}
	}
	// A program that is not there is the shell's 127, not an error: the
	// model reads the same on the host and in a jail.
	res, err := l.Run(context.Background(), Spec{Argv: []string{"/nonexistent/prog"}, Env: testEnv()})
	if err != nil || res.ExitCode != NotFoundExitCode {
		t.Errorf("missing program: %+v, %v; want exit 127", res, err)
	}
}

func TestLocalOutputCut(t *testing.T) {
	t.Parallel()
	l := &Local{Root: t.TempDir()}
	for _, tc := range []struct {
		n, max int
		want   string
		cut    int
	}{
		{n: 10, max: 4, want: "1\n2\n[... 6 lines cut ...]\n9\n10\n", cut: 6},
		{n: 10, max: 5, want: "1\n2\n3\n[... 5 lines cut ...]\n9\n10\n", cut: 5},
		{n: 4, max: 4, want: "1\n2\n3\n4\n"},
		{n: 3, max: 0, want: "1\n2\n3\n"},
		{n: 5, max: 1, want: "1\n[... 4 lines cut ...]\n", cut: 4},
	} {
		res, err := l.Run(context.Background(), Spec{Argv: []string{"seq", strconv.Itoa(tc.n)}, Env: testEnv(), MaxOutputLines: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, res.Output); diff != "" || res.CutLines != tc.cut {
			t.Errorf("seq %d max %d: cut %d (want %d), output (-want +got):\n%s", tc.n, tc.max, res.CutLines, tc.cut, diff)
		}
	}
	// A huge line is bounded, interleaved stderr is kept, a last line without newline is kept.
	res, err := l.Run(context.Background(), Spec{Shell: "head -c 100000 /dev/zero | tr '\\0' x; echo; echo err >&2; printf tail", Env: testEnv(), MaxOutputLines: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) > maxLineBytes+100 || !strings.Contains(res.Output, "err\n") || !strings.HasSuffix(res.Output, "tail") {
		t.Errorf("output of %d bytes: %.80q…%q", len(res.Output), res.Output, res.Output[max(len(res.Output)-20, 0):])
	}
}

func BenchmarkLocalRun(b *testing.B) {
	l := &Local{Root: b.TempDir()}
	spec := Spec{Argv: []string{"/bin/true"}, Env: testEnv(), MaxOutputLines: 200}
	for b.Loop() {
		if _, err := l.Run(context.Background(), spec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBareExec(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		cmd := exec.Command("/bin/true")
		cmd.Dir = dir
		cmd.Env = testEnv()
		if _, err := cmd.CombinedOutput(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestForkingGroupIsEmptied: a command that keeps forking while it is
// killed leaves nothing behind (one kill of the group misses the children
// forked while it was being delivered).
func TestForkingGroupIsEmptied(t *testing.T) {
	t.Parallel()
	l := &Local{Root: t.TempDir()}
	res, err := l.Run(context.Background(), Spec{
		Shell:   `echo $$; for i in 1 2 3 4; do (while :; do sleep 100 & done) & done; sleep 0.3`,
		Env:     []string{"PATH=/usr/bin:/bin"},
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(res.Output, "\n", 2)[0]))
	if err != nil {
		t.Fatalf("no pid in output %q", res.Output)
	}
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			t.Fatal("processes of the command's group survived it")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
