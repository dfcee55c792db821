package commandtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wardenhq/warden/internal/command"
)

// Target is a runner under test and the workspace it runs in.
type Target struct {
	Runner command.Runner
	// Dir is the workspace's directory as this process sees it: a file the
	// test makes there is the runner's to see, at the same path.
	Dir string
}

// Env is the environment every row gives its command.
var Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}

// row is one command and what every runner must report for it.
type row struct {
	name string
	spec command.Spec
	// setup prepares the workspace; check looks at it afterwards.
	setup, check func(t *testing.T, tg Target)
	want         command.Result
	// compare overrides the exact comparison of want.
	compare func(t *testing.T, got command.Result)
	// gone is a marker no process may carry once Run returned.
	gone string
}

func marker(name string) string {
	return fmt.Sprintf("warden-marker-%s-%d-%d", name, os.Getpid(), time.Now().UnixNano())
}

// marked is a command line that sleeps in a bash whose command line holds m
// (exec -a would not do: a busybox image picks its applet by argv[0]).
func marked(m string) string { return "bash -c 'sleep 300; :' " + m }

func rows() []row {
	bg, grand := marker("bg"), marker("grand")
	return []row{
		{name: "exit status", spec: command.Spec{Shell: "echo out; echo err >&2; exit 3"},
			want: command.Result{ExitCode: 3, Output: "out\nerr\n"}},
		{name: "killed by a signal", spec: command.Spec{Shell: "echo before; kill -TERM $$"},
			want: command.Result{ExitCode: 128 + 15, Output: "before\n"}},
		{name: "killed by SIGKILL", spec: command.Spec{Shell: "kill -KILL $$"},
			want: command.Result{ExitCode: 128 + 9}},
		{name: "unknown program", spec: command.Spec{Argv: []string{"warden-no-such-program", "x"}},
			want: command.Result{ExitCode: 127, Output: "warden-no-such-program: command not found\n"}},
		{name: "unknown command in a line", spec: command.Spec{Shell: "warden-no-such-program x"},
			want: command.Result{ExitCode: 127, Output: "bash: line 1: warden-no-such-program: command not found\n"}},
		{name: "missing program path", spec: command.Spec{Argv: []string{"/nonexistent/warden-prog"}},
			want: command.Result{ExitCode: 127, Output: "/nonexistent/warden-prog: no such file or directory\n"}},
		{name: "program not executable", spec: command.Spec{Argv: []string{"./notexec.sh"}},
			setup: func(t *testing.T, tg Target) { write(t, tg, "notexec.sh", "#!/bin/sh\necho ran\n", 0o644) },
			want:  command.Result{ExitCode: 126, Output: "./notexec.sh: Permission denied\n"}},
		{name: "timeout", spec: command.Spec{Shell: "echo started; exec sleep 60", Timeout: 1500 * time.Millisecond},
			want: command.Result{ExitCode: command.TimeoutExitCode, TimedOut: true,
				Output: "started\n[warden: command timed out after 1.5s and was killed]\n"}},
		{name: "timeout kills the whole group", gone: grand,
			spec: command.Spec{Shell: marked(grand) + " & sleep 300", Timeout: time.Second},
			want: command.Result{ExitCode: command.TimeoutExitCode, TimedOut: true,
				Output: "[warden: command timed out after 1s and was killed]\n"}},
		{name: "background child killed when the command ends", gone: bg,
			spec: command.Spec{Shell: marked(bg) + " & echo done"},
			want: command.Result{Output: "done\n"}},
		{name: "output cut by lines", spec: command.Spec{Argv: []string{"seq", "10"}, MaxOutputLines: 4},
			want: command.Result{Output: "1\n2\n[... 6 lines cut ...]\n9\n10\n", CutLines: 6}},
		{name: "output cut by lines, odd", spec: command.Spec{Argv: []string{"seq", "10"}, MaxOutputLines: 5},
			want: command.Result{Output: "1\n2\n3\n[... 5 lines cut ...]\n9\n10\n", CutLines: 5}},
		{name: "output under the limit", spec: command.Spec{Argv: []string{"seq", "4"}, MaxOutputLines: 4},
			want: command.Result{Output: "1\n2\n3\n4\n"}},
		{name: "long line", spec: command.Spec{MaxOutputLines: 10,
			Shell: "head -c 100000 /dev/zero | tr '\\0' x; echo; echo err >&2; printf tail"},
			want: command.Result{Output: strings.Repeat("x", 16<<10) + " [... 83616 bytes of this line cut ...]\nerr\ntail"}},
		{name: "output cut by bytes", spec: command.Spec{Argv: []string{"seq", "2000000"}},
			compare: func(t *testing.T, got command.Result) {
				out := got.Output
				if len(out) > command.DefaultMaxOutputBytes+100 || !strings.HasPrefix(out, "1\n2\n3\n") ||
					!strings.HasSuffix(out, "\n1999999\n2000000\n") || got.CutLines == 0 ||
					!strings.Contains(out, "["+"... "+strconv.Itoa(got.CutLines)+" lines cut ...]\n") || got.ExitCode != 0 {
					t.Errorf("14.8 MB of output: %d bytes kept, %d lines cut, exit %d; head %.40q tail %q",
						len(out), got.CutLines, got.ExitCode, out, out[max(0, len(out)-30):])
				}
			}},
		{name: "stdin is empty", spec: command.Spec{Shell: "read x || echo stdin-empty"},
			want: command.Result{Output: "stdin-empty\n"}},
		{name: "environment is exactly Env", spec: command.Spec{Argv: []string{"env"}},
			compare: func(t *testing.T, got command.Result) {
				lines := strings.Split(strings.TrimSpace(got.Output), "\n")
				if diff := cmp.Diff(Env, lines, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
					t.Errorf("env (-want +got):\n%s", diff)
				}
			}},
		{name: "working directory", spec: command.Spec{Shell: "pwd", Dir: "sub"},
			setup: func(t *testing.T, tg Target) { mkdir(t, tg, "sub") },
			compare: func(t *testing.T, got command.Result) {
				if got.ExitCode != 0 || !strings.HasSuffix(got.Output, "/sub\n") {
					t.Errorf("pwd in sub: %+v", got)
				}
			}},
		{name: "arguments are passed as they are", spec: command.Spec{Argv: []string{"printf", "[%s]", "a b", "$HOME", "*", "'"}},
			want: command.Result{Output: "[a b][$HOME][*][']"}},
		// Lines dash reads otherwise (issue: the judge reads bash).
		{name: "bash reads ANSI-C quotes", spec: command.Spec{Shell: `echo $'\' ; touch PWNED #'`},
			want:  command.Result{Output: "' ; touch PWNED #\n"},
			check: func(t *testing.T, tg Target) { absent(t, tg, "PWNED") }},
		{name: "bash reads (( )) as arithmetic", spec: command.Spec{Shell: `((rm -rf victim)); echo $?`},
			setup: func(t *testing.T, tg Target) { mkdir(t, tg, "victim") },
			want:  command.Result{Output: "bash: line 1: ((: rm -rf victim: syntax error in expression (error token is \"victim\")\n1\n"},
			check: func(t *testing.T, tg Target) {
				if _, err := os.Stat(filepath.Join(tg.Dir, "victim")); err != nil {
					t.Errorf("((rm -rf victim)) removed it: %v", err)
				}
			}},
		{name: "bash reads [[ > ]] as a comparison", spec: command.Spec{Shell: `[[ b > truncated ]] && echo greater`},
			check: func(t *testing.T, tg Target) { absent(t, tg, "truncated") },
			compare: func(t *testing.T, got command.Result) {
				if got.ExitCode != 1 || got.Output != "" {
					t.Errorf("[[ b > truncated ]]: %+v", got)
				}
			}},
	}
}

// Run runs every row against the target newTarget returns, in order, then
// cancels a command mid-run (the last row: a sandbox worker is reset by it).
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	tg := newTarget(t)
	for _, r := range rows() {
		t.Run(r.name, func(t *testing.T) {
			if r.setup != nil {
				r.setup(t, tg)
			}
			spec := r.spec
			spec.Env = Env
			if spec.Dir != "" {
				spec.AbsDir = filepath.Join(tg.Dir, spec.Dir)
			}
			start := time.Now()
			got, err := tg.Runner.Run(context.Background(), spec)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("Run took %v", d)
			}
			if r.compare != nil {
				r.compare(t, got)
			} else if diff := cmp.Diff(r.want, got, cmpopts.IgnoreFields(command.Result{}, "Duration")); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if r.check != nil {
				r.check(t, tg)
			}
			if r.gone != "" {
				waitGone(t, tg, r.gone)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		_, err := tg.Runner.Run(ctx, command.Spec{Shell: "exec sleep 60", Env: Env, Timeout: time.Minute})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled command: %v, want an error wrapping context.Canceled", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("a cancelled command returned after %v", d)
		}
	})
}

// waitGone looks, through the runner, until no process carries m. It reads
// /proc itself: pgrep is not in every image.
func waitGone(t *testing.T, tg Target, m string) {
	t.Helper()
	// "[w]arden-…" matches the process, not the line that names it.
	check := command.Spec{Shell: "n=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -c '[" + m[:1] + "]" + m[1:] + "'); " +
		"[ \"$n\" = 0 ] && echo none || echo \"$n left\"", Env: Env, Timeout: 10 * time.Second}
	var last command.Result
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res, err := tg.Runner.Run(context.Background(), check)
		if err != nil {
			t.Fatalf("pgrep: %v", err)
		}
		if last = res; res.Output == "none\n" {
			return
		}
	}
	t.Errorf("a process the command started (%s) outlived it: %q", m, last.Output)
}

func write(t *testing.T, tg Target, name, body string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(tg.Dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	chownLike(t, tg.Dir, p)
}

func mkdir(t *testing.T, tg Target, name string) {
	t.Helper()
	p := filepath.Join(tg.Dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	chownLike(t, tg.Dir, p)
}

func absent(t *testing.T, tg Target, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(tg.Dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the command (%v): the line ran as another shell reads it", name, err)
	}
}

// chownLike gives p the owner of dir: a backend that runs commands as the
// workspace's owner (docker) must see what the test made as its own.
func chownLike(t *testing.T, dir, p string) {
	t.Helper()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		if err := os.Lchown(p, int(sys.Uid), int(sys.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}
