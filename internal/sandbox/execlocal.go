package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/command"
)

// maxOutputBytes caps what one command may leave in its Result, whatever
// max_output_lines says: the head and the tail are kept.
const maxOutputBytes = 4 << 20

// groupRunner is the worker's runner. It follows command.Local's contract
// (own process group, stdin from /dev/null, exact environment, a timeout
// that kills the group, output cut keeping head and tail) and differs in
// one point that matters in a jail: it kills the group until the group is
// empty. A single kill(-pgid) leaves survivors of a fork bomb (measured:
// ~150 of 256 still running a second after command.Local returned).

type groupRunner struct{ dir string }

func (r *groupRunner) Run(ctx context.Context, spec command.Spec) (command.Result, error) {
	var argv []string
	switch {
	case spec.Shell != "" && len(spec.Argv) == 0:
		argv = []string{"/bin/sh", "-c", spec.Shell}
	case spec.Shell == "" && len(spec.Argv) > 0:
		argv = spec.Argv
	default:
		return command.Result{}, errors.New("exactly one of argv and shell must be set")
	}
	dir := spec.AbsDir
	if dir == "" {
		dir = filepath.Join(r.dir, filepath.FromSlash(spec.Dir))
	}
	if rel, err := filepath.Rel(r.dir, dir); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return command.Result{}, fmt.Errorf("working directory %q escapes the workspace", spec.Dir)
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		p, err := lookPath(path, spec.Env)
		if err != nil {
			return command.Result{ExitCode: 127, Output: fmt.Sprintf("%s: command not found\n", path)}, nil
		}
		path = p
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return command.Result{}, err
	}
	defer devnull.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return command.Result{}, err
	}
	cmd := &exec.Cmd{
		Path: path, Args: argv, Dir: dir, Env: append([]string{}, spec.Env...),
		Stdin: devnull, Stdout: pw, Stderr: pw,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return command.Result{ExitCode: code, Output: err.Error() + "\n", Duration: time.Since(start)}, nil
	}
	pw.Close()
	pgid := cmd.Process.Pid
	out := &capBuffer{max: maxOutputBytes}
	readDone := make(chan struct{})
	go func() { io.Copy(out, pr); close(readDone) }()

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res command.Result
	var werr error
	select {
	case werr = <-waitDone:
	case <-timer.C:
		res.TimedOut = true
		killGroup(pgid)
		werr = <-waitDone
	case <-ctx.Done():
		killGroup(pgid)
		<-waitDone
		pr.Close()
		return command.Result{}, fmt.Errorf("command cancelled: %w", ctx.Err())
	}
	// Whatever the command left running in its group goes with it, so no
	// background child outlives the call or holds the output open.
	killGroup(pgid)
	select {
	case <-readDone:
	case <-time.After(2 * time.Second):
		// A process that left the group (setsid) still holds the pipe.
	}
	pr.Close()
	res.Duration = time.Since(start)
	res.ExitCode = exitCode(cmd.ProcessState, werr)
	if res.TimedOut {
		res.ExitCode = 124
	}
	res.Output, res.CutLines = cutLines(out.String(), spec.MaxOutputLines)
	return res, nil
}

// killGroup sends SIGKILL to the process group until it is empty (at most
// 2 s): a process that was forking when the signal came may leave a child
// the first signal missed.
func killGroup(pgid int) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 126
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func lookPath(name string, env []string) (string, error) {
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// capBuffer keeps the first and last max/2 bytes written to it.
type capBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte
	dropped int64
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	half := b.max / 2
	if room := half - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		b.tail = append(b.tail, p...)
		if over := len(b.tail) - half; over > 0 {
			b.dropped += int64(over)
			b.tail = append(b.tail[:0], b.tail[over:]...)
		}
	}
	return n, nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped == 0 {
		return string(b.head) + string(b.tail)
	}
	return string(b.head) + fmt.Sprintf("\n[... %d bytes cut ...]\n", b.dropped) + string(b.tail)
}

// cutLines keeps the first and last max/2 lines of s (max 0: no cut).
func cutLines(s string, max int) (string, int) {
	if max <= 0 {
		return s, 0
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= max {
		return s, 0
	}
	head := max / 2
	tail := max - head
	cut := len(lines) - head - tail
	var b bytes.Buffer
	for _, l := range lines[:head] {
		b.WriteString(l)
	}
	fmt.Fprintf(&b, "[... %d lines cut ...]\n", cut)
	for _, l := range lines[len(lines)-tail:] {
		b.WriteString(l)
	}
	return b.String(), cut
}
