package bwrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// maskHelperArg, as the only argument, makes the warden binary the mask
// helper (see init): a process nsenter(1) started in a jail's user and
// mount namespaces and root, which mounts masks there as the host asks,
// each in a few system calls instead of a new nsenter and mount(8). It is
// checked in an init function, so that every program that can start a
// jail (warden itself, and test binaries that stand in for it) serves it
// without its main knowing.
const maskHelperArg = "warden-mask-helper-5f0c"

func init() {
	if len(os.Args) == 2 && os.Args[1] == maskHelperArg {
		if err := serveMasks(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "mask helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// serveMasks reads requests ("KIND QUOTED-PATH" lines) until EOF and
// answers each with "ok" or "error MESSAGE".
func serveMasks(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		kind, quoted, _ := strings.Cut(sc.Text(), " ")
		path, err := strconv.Unquote(quoted)
		if err == nil {
			var k int
			if k, err = strconv.Atoi(kind); err == nil {
				err = mountMask(path, jail.MountKind(k))
			}
		}
		reply := "ok\n"
		if err != nil {
			reply = "error " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
		}
		if _, err := io.WriteString(out, reply); err != nil {
			return err
		}
	}
	return sc.Err()
}

// mountMask mounts over path, in the mount namespace this process is in, a
// mount built detached and read-only first (the new mount API): nothing in
// the jail ever sees it writable, and move_mount does not follow a symbolic
// link at path.
func mountMask(path string, kind jail.MountKind) error {
	var fd int
	var err error
	switch kind {
	case jail.EmptyFile, jail.Bind:
		src := MaskSource
		if kind == jail.Bind {
			src = path
		}
		fd, err = unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			return fmt.Errorf("open_tree %s: %w", src, err)
		}
		defer unix.Close(fd)
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
			return fmt.Errorf("mount_setattr: %w", err)
		}
	case jail.EmptyDir:
		fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
		if err != nil {
			return fmt.Errorf("fsopen tmpfs: %w", err)
		}
		defer unix.Close(fs)
		if err := unix.FsconfigSetString(fs, "mode", "0755"); err != nil {
			return fmt.Errorf("fsconfig: %w", err)
		}
		if err := unix.FsconfigCreate(fs); err != nil {
			return fmt.Errorf("fsconfig create: %w", err)
		}
		fd, err = unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		if err != nil {
			return fmt.Errorf("fsmount: %w", err)
		}
		defer unix.Close(fd)
	default:
		return fmt.Errorf("no mask of kind %v", kind)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount onto %s: %w", path, err)
	}
	return nil
}

// maskHelper is the host's end of a running mask helper.
type maskHelper struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	outRaw io.ReadCloser
	out    *bufio.Reader
	dead   bool
}

// maskHelperTimeout bounds one request: a helper that does not answer is
// taken for gone (the jail's teardown waits for the guard, which waits for
// the answer).
const maskHelperTimeout = 10 * time.Second

// startMaskHelper starts the helper in the jail r opened, as the jail's
// copy of the warden binary (jail.JailExe: the host's, bound read-only).
func startMaskHelper(r *remasker) (*maskHelper, error) {
	cmd := exec.Command(r.nsenter, r.nsenterArgs(jail.JailExe, maskHelperArg)...)
	cmd.ExtraFiles = []*os.File{r.userns, r.mntns, r.root}
	cmd.Env = []string{}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &maskHelper{cmd: cmd, in: in, outRaw: out, out: bufio.NewReader(out)}
	// A request it must refuse proves it runs and answers.
	if err := h.ask(MaskSource, -1); err == nil || !strings.Contains(err.Error(), "no mask of kind") {
		h.Close()
		return nil, fmt.Errorf("the mask helper did not start: %v", err)
	}
	return h, nil
}

// ask asks the helper to mount a mask of kind over path.
func (h *maskHelper) ask(path string, kind jail.MountKind) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead {
		return errors.New("the mask helper is gone")
	}
	if _, err := fmt.Fprintf(h.in, "%d %s\n", kind, strconv.Quote(path)); err != nil {
		h.dead = true
		return err
	}
	if f, ok := h.outRaw.(*os.File); ok {
		f.SetReadDeadline(time.Now().Add(maskHelperTimeout))
	}
	line, err := h.out.ReadString('\n')
	if err != nil {
		h.dead = true
		h.cmd.Process.Kill()
		return fmt.Errorf("the mask helper is gone: %w", err)
	}
	line = strings.TrimSpace(line)
	if line == "ok" {
		return nil
	}
	return errors.New(strings.TrimPrefix(line, "error "))
}

// Close ends the helper (EOF on its input) and waits for it; one that
// does not answer in time is killed.
func (h *maskHelper) Close() {
	h.in.Close()
	t := time.AfterFunc(maskHelperTimeout, func() { h.cmd.Process.Kill() })
	h.cmd.Wait()
	t.Stop()
}
