package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// The docker backend runs the worker as the main process of one container
// per workspace, through the docker CLI (`docker run -i --rm`), and speaks
// the worker protocol over the attached stdin/stdout. The CLI rather than
// the Engine API client: it honours DOCKER_HOST, contexts and TLS settings
// exactly as the user's own docker commands do, and adds no module.

// DefaultMemoryMB is the container's memory limit when memory_mb is unset.
const DefaultMemoryMB = 2048

// Labels on warden's containers.
const (
	labelWorkspace = "warden.workspace"
	labelOwner     = "warden.owner" // boot id/pid/start time of the warden that started it
)

// dockerCLI runs the docker client with the host's environment (so
// DOCKER_HOST, DOCKER_CONTEXT and DOCKER_CONFIG apply).
type dockerCLI struct {
	path string
	env  []string
}

// newDockerCLI finds the docker client on the PATH of env.
func newDockerCLI(env []string) (*dockerCLI, error) {
	pathEnv := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "docker")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return &dockerCLI{path: p, env: env}, nil
		}
	}
	return nil, &jail.HintError{
		Err:     fmt.Errorf("the docker client is not installed (no docker on PATH), and warden never runs a sandboxed workspace unsandboxed: %w", jail.ErrBackendUnavailable),
		HintMsg: `install Docker (apt-get install docker.io on Debian/Ubuntu), or set backend = "local" in [sandbox]`,
	}
}

func (d *dockerCLI) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, d.path, args...)
	cmd.Env = d.env
	cmd.WaitDelay = time.Second
	return cmd
}

// run runs a short docker command and returns its trimmed stdout; a
// failure carries what docker printed on stderr.
func (d *dockerCLI) run(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := d.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("docker %s: %s", args[0], msg)
	}
	return strings.TrimSpace(string(out)), nil
}

// serverVersion asks the daemon its version: the daemon-reachable check.
func (d *dockerCLI) serverVersion(ctx context.Context) (string, error) {
	v, err := d.run(ctx, 15*time.Second, "version", "--format", "{{.Server.Version}}")
	if err != nil || v == "" {
		if err == nil {
			err = errors.New("no server version")
		}
		return "", &jail.HintError{
			Err:     fmt.Errorf("the Docker daemon is unreachable (%v), and warden never runs a sandboxed workspace unsandboxed: %w", err, jail.ErrBackendUnavailable),
			HintMsg: "start it (systemctl start docker), or point DOCKER_HOST at a running daemon on this machine; `warden doctor` checks it",
		}
	}
	return v, nil
}

// Probe says whether the docker backend can start here (for warden
// doctor): "ok: server VERSION" or why not.
func Probe(ctx context.Context) string {
	d, err := newDockerCLI(os.Environ())
	if err != nil {
		return "unavailable: no docker client on PATH"
	}
	v, err := d.serverVersion(ctx)
	if err != nil {
		var h *jail.HintError
		if errors.As(err, &h) {
			err = h.Err
		}
		return "unavailable: " + err.Error()
	}
	return "ok: server " + v
}

// dockerProc is the `docker run -i` client attached to the container, and
// what warden made on the host for it.
type dockerProc struct {
	cli    *dockerCLI
	name   string
	cmd    *exec.Cmd
	stderr *jail.Tail
	tmp    string // empty mask sources and the seccomp profile
	// reaper removes the container if warden dies without cleaning up: it
	// waits for the end of a pipe only warden holds open.
	reaper  *exec.Cmd
	reaperW *os.File
}

func (p *dockerProc) Kill() {
	// Remove the container first: killing only the client would close the
	// worker's stdin and let it finish what is in flight.
	p.cli.run(context.Background(), 30*time.Second, "rm", "-f", p.name)
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *dockerProc) Wait() error        { return p.cmd.Wait() }
func (p *dockerProc) StderrTail() string { return p.stderr.String() }

func (p *dockerProc) Cleanup() error {
	var err error
	// --rm removes the container when the worker exits normally; after a
	// kill the daemon may still hold it.
	if _, rerr := p.cli.run(context.Background(), 30*time.Second, "rm", "-f", p.name); rerr != nil && !strings.Contains(rerr.Error(), "No such container") {
		err = fmt.Errorf("failed to remove container %s: %w", p.name, rerr)
	}
	p.stopReaper()
	if p.tmp != "" {
		if rerr := os.RemoveAll(p.tmp); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

func (p *dockerProc) stopReaper() {
	if p.reaper == nil {
		return
	}
	p.reaper.Process.Kill()
	p.reaper.Wait()
	p.reaperW.Close()
	p.reaper = nil
}

// startReaper starts a host process, in its own session, that runs
// `docker rm -f NAME` once the pipe warden holds is closed: when warden
// exits or is killed without removing the container. /bin/sh does the
// waiting; without it, stale containers are removed by the next start.
func (p *dockerProc) startReaper() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", `read _ ; exec "$0" rm -f "$1" >/dev/null 2>&1`, p.cli.path, p.name)
	cmd.Env = p.cli.env
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	p.reaper, p.reaperW = cmd, w
	return nil
}

// ownerLabel identifies this warden process: boot id, pid and the pid's
// start time, so a container whose warden is gone can be told from one
// another live warden still uses.
func ownerLabel(pid int) string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(boot)) + "/" + strconv.Itoa(pid) + "/" + procStart(pid)
}

// procStart is field 22 of /proc/PID/stat, the process's start time ("" if
// the process does not exist).
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; it ends at the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerGone reports whether the warden named by an owner label has exited.
// A container started on another boot of this machine is stale; one
// started from another machine (a shared DOCKER_HOST) is left alone.
func ownerGone(label string) bool {
	boot, pidStart, ok := strings.Cut(label, "/")
	if !ok {
		return false
	}
	pidS, start, ok := strings.Cut(pidStart, "/")
	pid, err := strconv.Atoi(pidS)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	ours, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if strings.TrimSpace(string(ours)) != boot {
		return false
	}
	return procStart(pid) != start
}

// removeStaleContainers removes the containers of workspace ws left by a warden that
// died before it could remove them.
func removeStaleContainers(ctx context.Context, d *dockerCLI, ws string) error {
	out, err := d.run(ctx, 30*time.Second, "ps", "-a", "--no-trunc",
		"--filter", "label="+labelWorkspace+"="+ws,
		"--format", `{{.ID}} {{.Label "`+labelOwner+`"}}`)
	if err != nil {
		return err
	}
	// Each one is tried, twice: one the daemon is still busy with must not
	// keep the others.
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		id, owner, _ := strings.Cut(strings.TrimSpace(line), " ")
		if id == "" || !ownerGone(owner) {
			continue
		}
		var err error
		for try := 0; try < 2; try++ {
			if _, err = d.run(ctx, 30*time.Second, "rm", "-f", id); err == nil || strings.Contains(err.Error(), "No such container") {
				err = nil
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// mountArg renders one --mount value; fields are CSV, so paths holding
// commas or quotes survive. A field the docker client would read back
// otherwise (encoding/csv turns a quoted CR LF into LF) is refused: the
// mount would land on another path and leave the named one uncovered.
func mountArg(fields ...string) (string, error) {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write(fields)
	w.Flush()
	v := strings.TrimSuffix(b.String(), "\n")
	back, err := csv.NewReader(strings.NewReader(v)).Read()
	if err != nil || !slices.Equal(back, fields) {
		return "", fmt.Errorf("cannot pass %q to docker --mount (a path holding CR LF?); warden will not start a container that would mount another path", fields)
	}
	return v, nil
}

func bindMount(src, dst string, readonly bool) (string, error) {
	f := []string{"type=bind", "source=" + src, "target=" + dst, "bind-propagation=rprivate"}
	if readonly {
		f = append(f, "readonly")
	}
	return mountArg(f...)
}

// Start runs the worker in a container of sandbox.docker_image, as l
// describes.
func Start(ctx context.Context, op *jail.Launch) (_ *jail.Started, err error) {
	l := *op
	s := l.Settings
	log := l.Log()
	image := ""
	memMB := 0
	if l.Sandbox != nil {
		image, memMB = l.Sandbox.DockerImage, l.Sandbox.MemoryMB
	}
	if image == "" {
		return nil, &jail.HintError{
			Err:     fmt.Errorf("backend docker needs docker_image in [sandbox]; warden never runs a sandboxed workspace unsandboxed: %w", jail.ErrBackendUnavailable),
			HintMsg: `set docker_image in the [sandbox] section of your user config to an image with glibc, e.g. docker_image = "debian:12"`,
		}
	}
	cli, err := newDockerCLI(l.HostEnv)
	if err != nil {
		return nil, err
	}
	version, err := cli.serverVersion(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := cli.run(ctx, 30*time.Second, "image", "inspect", "--format", "{{.Id}}", image); err != nil {
		return nil, &jail.HintError{
			Err:     fmt.Errorf("docker image %s is not on the Docker daemon (%v): %w", image, err, jail.ErrBackendUnavailable),
			HintMsg: fmt.Sprintf("fetch or build it first (docker pull %s); warden never pulls images itself", image),
		}
	}
	if err := l.ResolvePaths(); err != nil {
		return nil, err
	}
	ws := l.Workspace
	if err := jail.MayBind(ws, true); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	st, err := os.Stat(ws)
	if err != nil {
		return nil, fmt.Errorf("failed to open workspace %s: %w", ws, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("cannot tell who owns workspace %s", ws)
	}
	uid, gid := sys.Uid, sys.Gid
	if uid == 0 {
		return nil, &jail.HintError{
			Err:     fmt.Errorf("workspace %s is owned by root; the docker backend runs commands as the workspace's owner and never as root", ws),
			HintMsg: "give the workspace to an unprivileged user (chown -R USER: " + ws + "), or use the local backend",
		}
	}
	layout, err := l.Layout()
	if err != nil {
		return nil, err
	}
	profile, err := seccompProfile(s.Lockdown)
	if err != nil {
		return nil, fmt.Errorf("failed to build the seccomp profile: %w", err)
	}

	var rnd [6]byte
	rand.Read(rnd[:])
	sum := sha256.Sum256([]byte(ws))
	p := &dockerProc{
		cli:    cli,
		name:   "warden-" + hex.EncodeToString(sum[:4]) + "-" + hex.EncodeToString(rnd[:]),
		stderr: jail.NewTail(8<<10, log),
	}
	started := false // once the jail is handed over, its Cleanup owns p
	defer func() {
		if err != nil && !started {
			p.stopReaper()
			os.RemoveAll(p.tmp)
		}
	}()
	if p.tmp, err = os.MkdirTemp("", "warden-docker-"); err != nil {
		return nil, err
	}
	emptyFile, emptyDir, seccompFile := filepath.Join(p.tmp, "empty"), filepath.Join(p.tmp, "emptydir"), filepath.Join(p.tmp, "seccomp.json")
	if err = errors.Join(
		os.Chmod(p.tmp, 0o755),
		os.WriteFile(emptyFile, nil, 0o444),
		os.Mkdir(emptyDir, 0o555),
		os.WriteFile(seccompFile, profile, 0o600),
	); err != nil {
		return nil, fmt.Errorf("failed to prepare the container's mounts: %w", err)
	}
	if err := removeStaleContainers(ctx, cli, ws); err != nil {
		log.Warn("could not remove stale containers", "workspace", ws, "error", err)
	}

	pidsMax := jail.PidsMax
	if s.Lockdown {
		pidsMax = jail.PidsMaxLockdown
	}
	if memMB <= 0 {
		memMB = DefaultMemoryMB
	}
	network := "none"
	if s.Network && !s.Lockdown {
		// As the local backend: network = true shares the host's network.
		network = "host"
	}
	args := []string{
		"run", "-i", "--rm", "--init", "--name", p.name,
		"--label", labelWorkspace + "=" + ws,
		"--label", labelOwner + "=" + ownerLabel(os.Getpid()),
		"--network", network, "--hostname", "warden",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--security-opt", "seccomp=" + seccompFile,
		"--read-only",
		"--pids-limit", strconv.Itoa(pidsMax),
		"--memory", fmt.Sprintf("%dm", memMB), "--memory-swap", fmt.Sprintf("%dm", memMB),
		"--ulimit", "core=0",
		"--user", fmt.Sprintf("%d:%d", uid, gid),
		"--workdir", ws,
		"--log-driver", "none",
	}
	mounts, err := mountArgs(layout, uid, gid, emptyFile, emptyDir)
	if err != nil {
		return nil, err
	}
	args = append(args, mounts...)
	for _, kv := range l.Env() {
		args = append(args, "--env", kv)
	}
	spec, err := json.Marshal(proto.WorkerSpec{
		Workspace: ws, Mask: l.WorkerMask(), Protected: l.Protected,
		Lockdown: s.Lockdown, Landlock: s.Landlock, Writable: layout.Writable, Readable: layout.Readable,
		// Docker's profile goes through libseccomp, which drops the system
		// calls it does not know (open_tree_attr on Debian 12): the worker
		// stacks warden's own filter on top.
		Seccomp: true,
		Egress:  l.EgressEnv(),
	})
	if err != nil {
		return nil, err
	}
	args = append(args, "--entrypoint", jail.JailExe, image, "worker", "--spec", string(spec))

	if err := p.startReaper(); err != nil {
		log.Warn("no reaper for the container; if warden is killed, the next start removes it", "error", err)
	}
	cmd := cli.command(context.Background(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err = cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start docker: %w", err)
	}
	p.cmd, started = cmd, true
	info := jail.Info{
		Workspace: ws, Backend: s.Backend, Lockdown: s.Lockdown, Forced: s.Forced, Network: network != "none",
		Seccomp: "profile passed to docker", PidsMax: pidsMax, PID: cmd.Process.Pid, Masked: layout.Masked,
		Detail: fmt.Sprintf("container %s from %s on Docker %s, user %d:%d, memory %d MiB", p.name, image, version, uid, gid, memMB),
	}
	return &jail.Started{
		Proc: p, Stdin: stdin, Stdout: stdout, Info: info, WantSeccomp: true,
		Finish: func(_ *jail.Info, err error) error {
			if err != nil {
				return startHint(err)
			}
			return nil
		},
	}, nil
}

// mountArgs translates the jail's layout into docker run flags. A bind of
// an optional path that does not exist is left out (as bubblewrap's
// --bind-try). Docker orders mounts parents first itself, which keeps the
// layout's order but for one case: a rw_path below a protected path.
func mountArgs(l *jail.Layout, uid, gid uint32, emptyFile, emptyDir string) ([]string, error) {
	var args []string
	for _, m := range l.Mounts {
		var v string
		var err error
		switch m.Kind {
		case jail.Tmpfs:
			opts := "rw,nosuid,nodev,mode=1777"
			if m.Private {
				opts = fmt.Sprintf("rw,nosuid,nodev,mode=0700,uid=%d,gid=%d", uid, gid)
			}
			args = append(args, "--tmpfs", m.Target+":"+opts)
			continue
		case jail.Bind:
			if m.Optional {
				if _, serr := os.Stat(m.Source); serr != nil {
					continue
				}
			}
			v, err = bindMount(m.Source, m.Target, m.ReadOnly)
		case jail.EmptyDir:
			v, err = bindMount(emptyDir, m.Target, true)
		case jail.EmptyFile:
			v, err = bindMount(emptyFile, m.Target, true)
		default:
			err = fmt.Errorf("mount of kind %v has no docker equivalent", m.Kind)
		}
		if err != nil {
			return nil, err
		}
		args = append(args, "--mount", v)
	}
	return args, nil
}

// startHint explains the usual reason the worker does not start in a
// container: the image has no glibc for the (dynamically linked) warden
// binary, so exec fails with "no such file or directory".
func startHint(err error) error {
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, jail.JailExe) && (strings.Contains(msg, "no such file or directory") || strings.Contains(msg, "not found")) {
		return &jail.HintError{
			Err: fmt.Errorf("the worker cannot run in the container (the image lacks the C library the warden binary needs): %w", err),
			HintMsg: "use an image with glibc (debian:12, ubuntu:24.04…): warden's binary is bound into the container and needs " +
				"/lib64/ld-linux-x86-64.so.2 and libc.so.6; busybox-only and musl (alpine) images cannot run it",
		}
	}
	return err
}
