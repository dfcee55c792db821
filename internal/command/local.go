package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Local runs commands on the host, without a jail. Each command gets its
// own process group (killed whole on timeout and when the command ends),
// standard input from /dev/null, exactly Spec.Env as its environment, and a
// working directory inside the workspace.
type Local struct {
	// Root is the absolute host path of the workspace, used when the Spec has
	// no AbsDir and its Dir is "" or ".".
	Root string
	// Shell runs Spec.Shell as Shell -c LINE; default /bin/sh.
	Shell string
	// DefaultTimeout applies when Spec.Timeout is 0; default 30 s.
	DefaultTimeout time.Duration
	// WaitDelay is how long to wait for output pipes after the process group
	// is gone (a process that escaped the group may hold them); default 2 s.
	WaitDelay time.Duration
}

var _ Runner = (*Local)(nil)

// DefaultTimeout is the timeout of a command whose Spec and Local give none.
const DefaultTimeout = 30 * time.Second

// maxLineBytes bounds one stored output line; maxKeepLines bounds the lines
// kept when Spec.MaxOutputLines is 0.
const (
	maxLineBytes = 16 << 10
	maxKeepLines = 100000
)

// Run runs spec. It returns an error only when the command cannot start.
func (l *Local) Run(ctx context.Context, spec Spec) (Result, error) {
	argv, err := l.argv(spec)
	if err != nil {
		return Result{}, err
	}
	dir, err := l.dir(spec)
	if err != nil {
		return Result{}, err
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = l.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	wait := l.WaitDelay
	if wait <= 0 {
		wait = 2 * time.Second
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{}, spec.Env...) // never nil: nil would inherit warden's environment
	cmd.Stdin = nil                           // /dev/null
	out := newCutter(spec.MaxOutputLines)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = wait

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("failed to start %q: %w", argv[0], err)
	}
	werr := cmd.Wait()
	dur := time.Since(start)
	_ = killGroup(cmd) // background children the command left behind

	res := Result{Duration: dur, ExitCode: exitCode(cmd, werr)}
	if errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		res.TimedOut = true
	}
	res.Output, res.CutLines = out.result()
	if res.TimedOut {
		res.Output += fmt.Sprintf("[warden: command timed out after %s and was killed]\n", timeout)
	}
	return res, nil
}

func (l *Local) argv(spec Spec) ([]string, error) {
	switch {
	case len(spec.Argv) > 0 && spec.Shell != "":
		return nil, errors.New("command spec sets both Argv and Shell")
	case len(spec.Argv) > 0:
		return spec.Argv, nil
	case spec.Shell != "":
		sh := l.Shell
		if sh == "" {
			sh = "/bin/sh"
		}
		return []string{sh, "-c", spec.Shell}, nil
	}
	return nil, errors.New("command spec sets neither Argv nor Shell")
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
	return dir, nil
}

// killGroupFor bounds how long killGroup keeps killing.
const killGroupFor = 2 * time.Second

// killGroup kills the command's whole process group, again and again until
// it is empty: a process that was forking when the first signal went out
// (a fork bomb does little else) leaves a child the first kill missed.
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

// cutter collects combined output, keeping the first and last lines when
// there are more than the maximum.
type cutter struct {
	mu      sync.Mutex
	head    int // lines to keep at the start
	tailN   int // lines to keep at the end
	lines   [][]byte
	tail    [][]byte // ring
	tailPos int
	total   int
	partial []byte
}

func newCutter(maxLines int) *cutter {
	if maxLines <= 0 || maxLines > maxKeepLines {
		maxLines = maxKeepLines
	}
	h := (maxLines + 1) / 2
	return &cutter{head: h, tailN: maxLines - h}
}

func (c *cutter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		k := bytes.IndexByte(p, '\n')
		if k < 0 {
			c.appendPartial(p)
			break
		}
		c.appendPartial(p[:k+1])
		if c.partial[len(c.partial)-1] != '\n' {
			c.partial = append(c.partial, '\n') // a cut long line keeps its end of line
		}
		c.line(c.partial)
		c.partial = nil
		p = p[k+1:]
	}
	return n, nil
}

func (c *cutter) appendPartial(p []byte) {
	room := maxLineBytes - len(c.partial)
	if room <= 0 {
		return
	}
	if len(p) > room {
		p = p[:room]
	}
	c.partial = append(c.partial, p...)
}

func (c *cutter) line(b []byte) {
	c.total++
	if len(c.lines) < c.head {
		c.lines = append(c.lines, b)
		return
	}
	if c.tailN == 0 {
		return
	}
	if len(c.tail) < c.tailN {
		c.tail = append(c.tail, b)
		return
	}
	c.tail[c.tailPos] = b
	c.tailPos = (c.tailPos + 1) % c.tailN
}

// result returns the kept output with a marker where lines were cut.
func (c *cutter) result() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 {
		c.line(c.partial)
		c.partial = nil
	}
	var b bytes.Buffer
	for _, l := range c.lines {
		b.Write(l)
	}
	cut := c.total - len(c.lines) - len(c.tail)
	if cut > 0 {
		if b.Len() > 0 && b.Bytes()[b.Len()-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString("[... " + strconv.Itoa(cut) + " lines cut ...]\n")
	}
	for k := range c.tail {
		b.Write(c.tail[(c.tailPos+k)%len(c.tail)])
	}
	return b.String(), max(cut, 0)
}
