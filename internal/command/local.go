package command

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Local runs commands on this machine, outside any jail of its own: on the
// host for an unsandboxed workspace, and inside the jail as the runner of
// the sandbox's worker. Each command gets its own process group (killed
// whole on timeout and when the command ends), standard input from
// /dev/null, exactly Spec.Env as its environment, a working directory
// inside the workspace, and a bounded output.
type Local struct {
	// Root is the absolute path of the workspace, used when the Spec has no
	// AbsDir and its Dir is "" or ".".
	Root string
	// Bash runs Spec.Shell as Bash --noprofile --norc -c LINE. Empty: the
	// first of /bin/bash, /usr/bin/bash, /usr/local/bin/bash, then bash on
	// this process's PATH. A command line never runs under another shell.
	Bash string
	// DefaultTimeout applies when Spec.Timeout is 0; default 30 s.
	DefaultTimeout time.Duration
	// WaitDelay is how long to wait for output pipes after the process group
	// is gone (a process that escaped the group may hold them); default 2 s.
	WaitDelay time.Duration
	// MaxOutputBytes bounds the output kept, head and tail, whatever
	// Spec.MaxOutputLines says; default 4 MiB.
	MaxOutputBytes int
}

var _ Runner = (*Local)(nil)

// Defaults of Local.
const (
	// DefaultTimeout is the timeout of a command whose Spec and Local give none.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxOutputBytes is the output a command may leave in its Result.
	DefaultMaxOutputBytes = 4 << 20
	// TimeoutExitCode is the exit status of a command killed at its timeout,
	// as timeout(1) reports it.
	TimeoutExitCode = 124
	// NotFoundExitCode and CannotRunExitCode are a shell's statuses for a
	// program that is not there and one that cannot be executed.
	NotFoundExitCode  = 127
	CannotRunExitCode = 126
)

// defaultPATH is looked in for an Argv program when Spec.Env has no PATH.
const defaultPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Run runs spec. It returns an error when the command cannot be run at all
// (a malformed spec, a working directory that is not there, no bash for a
// command line) and when ctx ends first; a command that ran, or whose
// program is missing or not executable, is a Result (exit 127 or 126, as a
// shell reports them). A command killed at its timeout has TimedOut set,
// ExitCode TimeoutExitCode and a last line saying so.
func (l *Local) Run(ctx context.Context, spec Spec) (Result, error) {
	dir, err := l.dir(spec)
	if err != nil {
		return Result{}, err
	}
	env := append([]string{}, spec.Env...) // never nil: nil would inherit warden's environment
	var argv []string
	shell := ""
	switch {
	case len(spec.Argv) > 0 && spec.Shell != "":
		return Result{}, errors.New("command spec sets both Argv and Shell")
	case len(spec.Argv) > 0:
		argv = spec.Argv
	case spec.Shell != "":
		bash, err := l.bash()
		if err != nil {
			return Result{}, err
		}
		// argv[0] "bash" (not its path): bash names itself so in its messages.
		argv = []string{"bash", "--noprofile", "--norc", "-c", spec.Shell}
		env = bashEnv(env)
		shell = bash
	default:
		return Result{}, errors.New("command spec sets neither Argv nor Shell")
	}
	path, err := shell, error(nil)
	if path == "" {
		path, err = LookPath(argv[0], dir, env)
	}
	if err != nil {
		code := NotFoundExitCode
		if !errors.Is(err, fs.ErrNotExist) {
			code = CannotRunExitCode
		}
		return Result{ExitCode: code, Output: err.Error() + "\n"}, nil
	}
	timeout := firstPositive(spec.Timeout, l.DefaultTimeout, DefaultTimeout)
	wait := firstPositive(l.WaitDelay, 2*time.Second)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(tctx, path)
	cmd.Args = argv
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil // /dev/null
	out := newCutter(spec.MaxOutputLines, firstPositive(l.MaxOutputBytes, DefaultMaxOutputBytes))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = wait

	start := time.Now()
	if err := cmd.Start(); err != nil {
		// lookPath found a regular executable file; the kernel refused it
		// (a binary for another machine, a script whose interpreter is gone).
		return Result{ExitCode: CannotRunExitCode, Output: fmt.Sprintf("%s: cannot run: %v\n", argv[0], err)}, nil
	}
	werr := cmd.Wait()
	dur := time.Since(start)
	_ = killGroup(cmd) // background children the command left behind
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("%s was cancelled and killed: %w", argv[0], ctx.Err())
	}
	res := Result{Duration: dur, ExitCode: exitCode(cmd, werr)}
	res.Output, res.CutLines = out.result()
	if errors.Is(tctx.Err(), context.DeadlineExceeded) {
		res.TimedOut, res.ExitCode = true, TimeoutExitCode
		res.Output += fmt.Sprintf("[warden: command timed out after %s and was killed]\n", timeout)
	}
	return res, nil
}

// firstPositive returns the first positive value.
func firstPositive[T int | time.Duration](vals ...T) T {
	for _, v := range vals {
		if v > 0 {
			return v
		}
	}
	return 0
}

func (l *Local) dir(spec Spec) (string, error) {
	dir := spec.AbsDir
	if dir == "" {
		if spec.Dir != "" && spec.Dir != "." {
			return "", fmt.Errorf("working directory %q must be resolved through the workspace into Spec.AbsDir", spec.Dir)
		}
		dir = l.Root
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("working directory %q is not an absolute path", dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = syscall.ENOTDIR
		}
		return "", fmt.Errorf("working directory %s: %w", dir, err)
	}
	return dir, nil
}

// LookPath finds name the way a shell would: a name with a slash relative
// to dir, another on the PATH of the command's own environment (not
// warden's, which in a jail is the host's). The error, when there is one, is what a
// shell prints ("NAME: command not found") and wraps fs.ErrNotExist for a
// program that is not there.
func LookPath(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p) // as exec does: relative to the working directory
		}
		st, err := os.Stat(p)
		switch {
		case err != nil:
			return "", fmt.Errorf("%s: %w", name, errors.Unwrap(err))
		case st.IsDir():
			return "", fmt.Errorf("%s: Is a directory", name)
		case st.Mode()&0o111 == 0:
			return "", fmt.Errorf("%s: Permission denied", name)
		}
		return name, nil
	}
	pathEnv, found := defaultPATH, false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv, found = v, true
		}
	}
	if found && pathEnv == "" {
		pathEnv = "."
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			// A relative PATH entry would name a program by the working
			// directory, which the agent controls.
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &notFoundError{name}
}

type notFoundError struct{ name string }

func (e *notFoundError) Error() string { return e.name + ": command not found" }
func (e *notFoundError) Unwrap() error { return fs.ErrNotExist }

// killGroupFor bounds how long killGroup keeps killing.
const killGroupFor = 2 * time.Second

// killGroup kills the command's whole process group, again and again until
// it is empty: a process that was forking when the first signal went out
// (a fork bomb does little else) leaves a child the first kill missed.
// Measured in a jail: one kill left ~150 of 256 forks running.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	deadline := time.Now().Add(killGroupFor)
	for {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if err != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func exitCode(cmd *exec.Cmd, err error) int {
	st := cmd.ProcessState
	if st == nil {
		if err != nil {
			return -1
		}
		return 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
