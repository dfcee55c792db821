package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// Start builds a bubblewrap jail on this host, as l describes, and starts
// `warden worker` in it, spoken to over pipes.
func Start(ctx context.Context, l *jail.Launch) (*jail.Started, error) {
	return start(ctx, l, nil, nil)
}

// StartStdio is Start with in and out as the jail's own stdin and stdout:
// the worker protocol passes straight through between them and the worker,
// nothing here reads or writes it, and there is no handshake (the peer
// that holds in and out pings the worker). `warden worker --jail` on an ssh
// backend's remote host runs the jail this way.
func StartStdio(ctx context.Context, l *jail.Launch, in, out *os.File) (jail.Process, error) {
	st, err := start(ctx, l, in, out)
	if err != nil {
		return nil, err
	}
	return st.Proc, nil
}

func start(_ context.Context, op *jail.Launch, in, out *os.File) (_ *jail.Started, err error) {
	l := *op
	s := l.Settings
	log := l.Log()
	bw, err := Find(l.Bwrap)
	if err != nil {
		return nil, err
	}
	if err := l.ResolvePaths(); err != nil {
		return nil, err
	}
	layout, hold, err := l.Layout()
	if err != nil {
		return nil, err
	}
	// Until the jail's process owns it, a failure releases the hold here.
	defer func() {
		if err != nil && hold != nil {
			hold.Release()
		}
	}()
	env := l.Env()
	if s.Toolchains && !s.Lockdown {
		tc := jail.Toolchains(envValue(l.HostEnv, "PATH"), envValue(l.HostEnv, "HOME"), layout.Workspace, s.ToolchainPaths, SystemDirs)
		for d, why := range tc.Skipped {
			log.Debug("toolchain directory of PATH left out of the jail", "dir", d, "why", why)
		}
		layout.AddToolchain(tc)
		env = jail.WithToolchain(env, tc)
	}
	plan := &Plan{
		Layout: layout, Lockdown: s.Lockdown, Network: s.Network,
		System: HostSystem(), Etc: HostEtc(), Env: env,
	}
	if !s.NoGPU {
		plan.GPU = hostGPU()
	}

	// File descriptors handed to bubblewrap, numbered from 3.
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	addFD := func(f *os.File) int { files = append(files, f); return 2 + len(files) }
	prog, err := seccomp.Program(&seccomp.Options{DenyNetwork: s.Lockdown})
	if err == nil {
		var raw []byte
		if raw, err = seccomp.Assemble(prog); err == nil {
			var f *os.File
			if f, err = MemFile("warden-seccomp", raw); err == nil {
				plan.SeccompFD = addFD(f)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("failed to build the seccomp filter: %w", err)
	}
	src, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	plan.MaskSourceFD = addFD(src)
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer infoR.Close()
	plan.InfoFD = addFD(infoW)
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer blockW.Close()
	plan.BlockFD = addFD(blockR)
	for range emptyFiles(layout) {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		if fd := addFD(f); plan.DataFD == 0 {
			plan.DataFD = fd
		}
	}
	// /dev/shm and /dev/pts are bubblewrap's own (--dev), writable.
	spec, err := json.Marshal(proto.WorkerSpec{
		Workspace: layout.Workspace, Mask: l.WorkerMask(), Protected: l.Protected,
		Lockdown: s.Lockdown, Landlock: s.Landlock,
		Writable: append(layout.Writable, "/dev/shm", "/dev/pts"), Readable: layout.Readable,
		Egress:    l.EgressEnv(),
		GitIgnore: layout.GitIgnore,
	})
	if err != nil {
		return nil, err
	}
	plan.Command = []string{jail.JailExe, "worker", "--spec", string(spec)}
	args, err := plan.Args()
	if err != nil {
		return nil, err
	}

	pidsMax := jail.PidsMax
	if s.Lockdown {
		pidsMax = jail.PidsMaxLockdown
	}
	cg, cgErr := newPidsCgroup(pidsMax)
	if cgErr != nil {
		if s.Lockdown {
			return nil, fmt.Errorf("lockdown needs a process limit and %v", cgErr)
		}
		log.Warn("no pids cgroup; the jail's process count is bounded only by RLIMIT_NPROC, which does not bind root", "error", cgErr)
		pidsMax = 0
	}

	cmd := exec.Command(bw, args...)
	cmd.Env = []string{}
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	var stdin io.WriteCloser
	var stdout io.Reader
	if in != nil {
		cmd.Stdin, cmd.Stdout = in, out
	} else {
		if stdin, err = cmd.StdinPipe(); err == nil {
			stdout, err = cmd.StdoutPipe()
		}
		if err != nil {
			cg.destroy()
			return nil, err
		}
	}
	stderr := jail.NewTail(8<<10, log)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cg.destroy()
		return nil, fmt.Errorf("failed to start bwrap: %w", err)
	}
	for _, f := range files {
		f.Close()
	}
	files = nil
	p := &proc{cmd: cmd, cg: cg, stderr: stderr, hold: hold}
	hold = nil // p.Cleanup releases it
	fail := func(err error) (*jail.Started, error) {
		p.Kill()
		p.Wait()
		p.Cleanup()
		if msg := p.StderrTail(); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	// bwrap reports the jail's first process, then waits on --block-fd:
	// the process goes into the pids cgroup before it can fork anything.
	childPID, err := readChildPID(infoR, l.StartTimeout)
	if err != nil {
		return fail(fmt.Errorf("failed to build the jail: %w", err))
	}
	if cg != nil {
		if err := cg.add(childPID); err != nil {
			return fail(fmt.Errorf("failed to limit the jail's processes: %w", err))
		}
	}
	if _, err := blockW.Write([]byte{1}); err != nil {
		return fail(fmt.Errorf("failed to start the jail: %w", err))
	}
	if p.guard, err = guardMasks(l, layout, p, childPID); err != nil {
		if !jailEnded(childPID) {
			return fail(fmt.Errorf("failed to guard the jail's masks: %w", err))
		}
		// The jail ended as it started (its first process is the pid
		// namespace's init: nothing of it runs any more), so there is no
		// mask to guard; the handshake reports its exit as for any jail.
		p.guard = nil
	}
	info := jail.Info{
		Workspace: layout.Workspace, Backend: s.Backend, Lockdown: s.Lockdown, Forced: s.Forced, Network: s.Network && !s.Lockdown,
		Seccomp: "filter passed to bwrap", PidsMax: pidsMax, PID: cmd.Process.Pid, Masked: layout.Masked,
	}
	if cg != nil {
		info.Cgroup = cg.dir
	}
	return &jail.Started{Proc: p, Stdin: stdin, Stdout: stdout, Info: info, WantSeccomp: true}, nil
}

// proc is bubblewrap on this host, its pids cgroup, and its hold on the
// workspace's mask placeholders.
type proc struct {
	cmd    *exec.Cmd
	cg     *pidsCgroup
	stderr *jail.Tail
	hold   *jail.Hold
	guard  *jail.MaskGuard
	remask *remasker
}

func (p *proc) Kill() {
	if p.cmd.Process != nil {
		// bwrap runs in its own process group; --die-with-parent and the
		// pid namespace take the jail down with it, the cgroup catches
		// anything left.
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *proc) Wait() error        { return p.cmd.Wait() }
func (p *proc) StderrTail() string { return p.stderr.String() }

// Cleanup stops guarding the masks, removes the pids cgroup and releases
// the jail's hold on the mask placeholders (the last jail of the workspace
// removes them).
func (p *proc) Cleanup() error {
	p.guard.Stop()
	if p.remask != nil {
		p.remask.Close()
	}
	return errors.Join(p.cg.destroy(), p.hold.Release())
}

// guardMasks starts watching the jail's masks (jail.MaskGuard): a masked
// path the host replaces is masked again in the jail; where it cannot be,
// the jail is killed.
func guardMasks(l jail.Launch, layout *jail.Layout, p *proc, childPID int) (*jail.MaskGuard, error) {
	log := l.Log()
	// bubblewrap builds the jail's mounts and pivots into its root once
	// released from --block-fd: until then /proc/PID/root is the host's.
	if err := waitForRoot(childPID, l.StartTimeout); err != nil {
		return nil, err
	}
	rm, rmErr := newRemasker(childPID)
	if rmErr != nil {
		log.Warn("a masked path replaced on the host will kill the jail rather than be masked again", "error", rmErr)
	}
	p.remask = rm
	cfg := jail.GuardConfig{
		Layout: layout, Root: fmt.Sprintf("/proc/%d/root", childPID),
		Remask: func(path string, kind jail.MountKind) error {
			if rm == nil {
				return rmErr
			}
			return rm.Mask(path, kind)
		},
		Kill: p.Kill, Report: l.MaskEvents, Log: log,
	}
	if p.cg != nil {
		cfg.Holds = func(path string, host os.FileInfo) (bool, error) {
			return jail.ProcessesHold(p.cg.pids(), path, host), nil
		}
	}
	begin := time.Now()
	g, err := jail.GuardMasks(cfg)
	if err == nil {
		log.Debug("guarding the jail's masks", "masks", layout.Masked, "watches", g.Watches(), "took", time.Since(begin))
	}
	return g, err
}

// envValue is the value of name in env (KEY=VALUE entries), or "".
func envValue(env []string, name string) string {
	for _, kv := range slices.Backward(env) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func readChildPID(r *os.File, timeout time.Duration) (int, error) {
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	r.SetReadDeadline(time.Now().Add(timeout))
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, fmt.Errorf("bwrap gave no child pid: %w", err)
	}
	if info.ChildPID <= 0 {
		return 0, errors.New("bwrap gave no child pid")
	}
	return info.ChildPID, nil
}

// jailEnded reports whether the jail's first process, the init of its pid
// namespace, has exited (gone, or a zombie): the kernel has then killed
// every other process of the jail.
func jailEnded(pid int) bool {
	// A task's root is gone from /proc once it starts to exit (before it
	// is a zombie); while bubblewrap builds the jail it is the host's.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/root", pid)); errors.Is(err, os.ErrNotExist) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH)
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state == 'Z' || state == 'X'
}
