package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A mask is a mount over a dentry of the workspace. When that dentry is
// unlinked or renamed over on the host (an editor saving through a
// temporary file, `mv new .env`, `rm .env`), the kernel detaches the mount
// in every other mount namespace (Linux 3.18 and later), and the jail sees
// whatever now has the name. A MaskGuard watches, with inotify, every
// directory between the workspace and a masked path, and when a masked name
// changes it checks what the jail sees there: where the jail reaches the
// host's file, the mask is mounted again (Remask), and where that fails, or
// a process of the jail holds the exposed file open, the jail is killed.

// MaskEvent is one thing a MaskGuard did.
type MaskEvent struct {
	// Path is the masked path (absolute, as on the host and in the jail).
	Path string
	// Action is "remasked" (the mask is mounted again) or "killed" (the
	// mask could not be restored, or a process of the jail held the
	// exposed file open: the jail was killed).
	Action string
	// Exposed is from the inotify event being read to the mask in place
	// again (or the kill); the rename itself came earlier, by the time the
	// kernel took to wake the guard.
	Exposed time.Duration
	// At is when the mask was in place again (or the jail killed).
	At time.Time
	// Err says why the jail was killed.
	Err error
}

// GuardConfig is what a MaskGuard needs from the backend.
type GuardConfig struct {
	// Layout is the jail's layout: its EmptyFile and EmptyDir mounts in
	// the workspace are the masks guarded, and its read-only binds of a
	// path of the workspace onto itself (protected paths, git's control
	// files, ro_paths) are kept read-only the same way.
	Layout *Layout
	// Root is the jail's root directory as the host reaches it
	// (/proc/PID/root of a process of the jail).
	Root string
	// Remask mounts, over path in the jail, an empty read-only file
	// (EmptyFile), directory (EmptyDir), or path itself read-only (Bind).
	Remask func(path string, kind MountKind) error
	// Holds reports whether a process of the jail still reaches the host's
	// file host at path (an open descriptor, a mapping, its working
	// directory); nil: nobody is looked for.
	Holds func(path string, host os.FileInfo) (bool, error)
	// Kill kills every process of the jail.
	Kill func()
	// Report, when set, is told every event (the log gets them too).
	Report func(MaskEvent)
	Log    *slog.Logger
}

// MaskGuard keeps a running jail's masks over the names they cover.
type MaskGuard struct {
	cfg    GuardConfig
	ws     string
	masks  map[string]MountKind // guarded path -> what covers it
	root   *os.File             // the jail's root, O_PATH
	in     *os.File             // the inotify descriptor
	inRaw  syscall.RawConn      // in's descriptor, held open while a watch is added
	mu     sync.Mutex
	wds    map[int32]string // watch descriptor -> directory
	done   chan struct{}
	stop   sync.Once
	killed bool
}

// watchMask is what a MaskGuard hears about in a watched directory: a name
// arriving (created, renamed to) or leaving (deleted, renamed away).
const watchMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_DELETE | unix.IN_MOVED_FROM |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// GuardMasks starts guarding the masks of a running jail. It checks every
// mask once before it returns (a rename between the jail's mounts and the
// watches is caught). Stop it once the jail has exited, before the Hold on
// the placeholders is released (a placeholder removed while the guard runs
// is a mask gone from the host, and nothing to cover).
func GuardMasks(cfg GuardConfig) (_ *MaskGuard, err error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	g := &MaskGuard{
		cfg: cfg, ws: cfg.Layout.Workspace, masks: map[string]MountKind{},
		wds: map[int32]string{}, done: make(chan struct{}),
	}
	for _, m := range cfg.Layout.Mounts {
		if !Within(g.ws, m.Target) || m.Target == g.ws {
			continue
		}
		switch {
		case m.Kind == EmptyFile || m.Kind == EmptyDir:
			g.masks[m.Target] = m.Kind
		case m.Kind == Bind && m.ReadOnly && m.Source == m.Target:
			g.masks[m.Target] = Bind
		}
	}
	if len(g.masks) == 0 {
		close(g.done)
		return g, nil
	}
	fd, err := unix.Open(cfg.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the jail's root %s: %w", cfg.Root, err)
	}
	g.root = os.NewFile(uintptr(fd), cfg.Root)
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		g.root.Close()
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// Non-blocking: reads park in the runtime's poller, and Close wakes them.
	g.in = os.NewFile(uintptr(ifd), "inotify")
	if g.inRaw, err = g.in.SyscallConn(); err != nil {
		g.in.Close()
		g.root.Close()
		return nil, fmt.Errorf("inotify: %w", err)
	}
	for p := range g.masks {
		if err := g.watchAbove(p); err != nil {
			g.in.Close()
			g.root.Close()
			return nil, err
		}
	}
	g.check(g.all(), time.Now())
	go g.run()
	return g, nil
}

// Stop stops the guard and waits for it. Safe to call more than once.
func (g *MaskGuard) Stop() {
	if g == nil || g.in == nil {
		return
	}
	g.stop.Do(func() {
		g.in.Close()
		<-g.done
		g.root.Close()
	})
}

// Watches counts the directories watched.
func (g *MaskGuard) Watches() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.wds)
}

// watchAbove watches every directory from the workspace down to p's parent
// (a rename of any of them on the host brings a new dentry to p's path).
func (g *MaskGuard) watchAbove(p string) error {
	for d := filepath.Dir(p); Within(g.ws, d); d = filepath.Dir(d) {
		// Through the RawConn, not Fd(): Stop may close the descriptor
		// meanwhile, and a number read before the close could name
		// another file by the time the watch is added.
		var wd int
		var err error
		if cerr := g.inRaw.Control(func(fd uintptr) { wd, err = unix.InotifyAddWatch(int(fd), d, watchMask) }); cerr != nil {
			return nil // stopped: nothing left to watch for
		}
		switch {
		case err == nil:
			g.mu.Lock()
			g.wds[int32(wd)] = d
			g.mu.Unlock()
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			// Not there now: its parent's watch sees it arrive.
		case errors.Is(err, unix.ENOSPC):
			return fmt.Errorf("watch %s for renames over masked paths: the inotify watch limit (fs.inotify.max_user_watches) is reached: %w", d, err)
		default:
			return fmt.Errorf("watch %s for renames over masked paths: %w", d, err)
		}
		if d == g.ws {
			break
		}
	}
	return nil
}

func (g *MaskGuard) all() []string {
	out := make([]string, 0, len(g.masks))
	for p := range g.masks {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (g *MaskGuard) run() {
	defer close(g.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := g.in.Read(buf)
		if err != nil {
			return // closed by Stop
		}
		at := time.Now()
		var touched []string
		overflow := false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			start := off + unix.SizeofInotifyEvent
			off = min(start+int(ev.Len), n)
			name := strings.TrimRight(string(buf[start:off]), "\x00")
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				overflow = true
				continue
			}
			g.mu.Lock()
			dir, ok := g.wds[ev.Wd]
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(g.wds, ev.Wd)
			}
			g.mu.Unlock()
			if ok && name != "" {
				touched = append(touched, filepath.Join(dir, name))
			}
		}
		var affected []string
		if overflow {
			affected = g.all()
		} else {
			for p := range g.masks {
				if slices.ContainsFunc(touched, func(t string) bool { return Within(t, p) }) {
					affected = append(affected, p)
				}
			}
			slices.Sort(affected)
		}
		for _, p := range affected {
			// A directory above p that arrived is watched from now on.
			if err := g.watchAbove(p); err != nil {
				g.kill(p, at, err)
			}
		}
		g.check(affected, at)
	}
}

// check looks at what the jail sees at each of paths and restores the
// masks the host's changes removed. at is when the change was heard of.
func (g *MaskGuard) check(paths []string, at time.Time) {
	for _, p := range paths {
		if g.killed {
			return
		}
		action, err := g.fix(p)
		switch {
		case err != nil:
			g.kill(p, at, err)
		case action != "":
			g.report(MaskEvent{Path: p, Action: action, Exposed: time.Since(at), At: time.Now()})
		}
	}
}

// fix restores the mask at p if the jail reaches the host's file there, and
// says what it did ("" when the mask held). The host may be renaming over p
// again while it works (an editor saving in a burst): it looks again, a few
// times, until the jail sees a mask.
func (g *MaskGuard) fix(p string) (string, error) {
	action := ""
	var err error
	for i := range 8 {
		if i > 1 {
			time.Sleep(time.Duration(i) * 2 * time.Millisecond)
		}
		var done bool
		var a string
		if a, done, err = g.fixOnce(p); a != "" {
			action = a
		}
		if done {
			return action, err
		}
	}
	return "", fmt.Errorf("the host keeps replacing %s: %w", p, err)
}

// fixOnce is one look at p; done is false when the jail still reaches the
// host's file after a mask was mounted (a later rename detached it).
func (g *MaskGuard) fixOnce(p string) (action string, done bool, err error) {
	host, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		// Gone from the host: nothing to cover; masked again when the
		// name is back. No placeholder is made in its place: it would
		// fight the user's own rm -r or mv of the directory (which would
		// fail, or move into it).
		return "", true, nil
	}
	if err != nil {
		return action, true, fmt.Errorf("stat %s: %w", p, err)
	}
	exposed, err := g.exposed(p, host)
	if errors.Is(err, fs.ErrNotExist) {
		return action, true, nil // the jail sees no such name (a directory above moved there)
	}
	if err != nil {
		return action, true, err
	}
	if !exposed {
		return action, true, nil // the jail sees the mask
	}
	if host.Mode()&fs.ModeSymlink != 0 {
		// A mount lands on a link's target, which the jail could choose.
		return action, true, fmt.Errorf("%s is now a symbolic link, which cannot be masked safely", p)
	}
	if action == "" {
		action = "remasked"
	}
	// A rename on the host after this look brings its own event: a
	// failure on a file the host has replaced since is left to it.
	kind := g.masks[p]
	if kind != Bind {
		kind = EmptyFile
		if host.IsDir() {
			kind = EmptyDir
		}
	}
	err = g.cfg.Remask(p, kind)
	if err == nil {
		if still, serr := g.exposed(p, host); serr == nil && still {
			err = errors.New("the jail still reaches the host's file")
		}
	}
	if err != nil {
		if !sameAsBefore(p, host) {
			return action, true, nil
		}
		return action, false, fmt.Errorf("mask %s again: %w", p, err)
	}
	// A process that opened the file before the mask came back would keep
	// reading it: the jail goes.
	if g.cfg.Holds != nil && kind != Bind {
		held, err := g.cfg.Holds(p, host)
		if err != nil {
			return action, true, fmt.Errorf("look for processes holding %s: %w", p, err)
		}
		if held {
			return action, true, fmt.Errorf("a process of the jail opened %s while it was exposed", p)
		}
	}
	return action, true, nil
}

// sameAsBefore reports whether p is still the file st.
func sameAsBefore(p string, st os.FileInfo) bool {
	now, err := os.Lstat(p)
	return err == nil && os.SameFile(now, st)
}

// exposed reports whether the jail reaches the host's file host at p as
// the host does: the same file for a mask, or writable for a protected
// path (a read-only bind of itself).
func (g *MaskGuard) exposed(p string, host os.FileInfo) (bool, error) {
	fd, err := g.openInJail(p)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	hs, ok := host.Sys().(*syscall.Stat_t)
	same := ok && uint64(hs.Dev) == st.Dev && hs.Ino == st.Ino
	if g.masks[p] != Bind || !same {
		return same, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return false, err
	}
	return sfs.Flags&unix.ST_RDONLY == 0, nil
}

// openInJail opens p (O_PATH) as the jail resolves it: from the jail's
// root, with its mounts, and its symbolic links kept inside it. RESOLVE_IN_ROOT
// fails with EAGAIN when a rename or mount anywhere raced the lookup: it is
// tried again.
func (g *MaskGuard) openInJail(p string) (int, error) {
	for i := 0; ; i++ {
		fd, err := unix.Openat2(int(g.root.Fd()), strings.TrimPrefix(p, "/"), &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EAGAIN) && i < 16 {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open in the jail", Path: p, Err: err}
		}
		return fd, nil
	}
}

func (g *MaskGuard) kill(p string, at time.Time, err error) {
	g.cfg.Kill()
	g.killed = true
	g.report(MaskEvent{Path: p, Action: "killed", Exposed: time.Since(at), At: time.Now(), Err: err})
}

func (g *MaskGuard) report(ev MaskEvent) {
	if ev.Action == "killed" {
		g.cfg.Log.Error("sandbox killed: a masked path was replaced on the host and could not be masked again",
			"path", ev.Path, "error", ev.Err, "exposed", ev.Exposed)
	} else {
		g.cfg.Log.Warn("sandbox mask restored: a masked path was replaced on the host",
			"path", ev.Path, "action", ev.Action, "exposed", ev.Exposed)
	}
	if g.cfg.Report != nil {
		g.cfg.Report(ev)
	}
}

// ProcessesHold reports whether any of pids (processes of a jail, as the
// host numbers them) reaches a host file at p other than through the mask:
// a descriptor or a mapping of a file the kernel names p (or, for a
// directory, anything below it), or a working directory there, on the
// host's file system (host is what the host has at p now; the masks are on
// a tmpfs of their own). The file may be one the host has since replaced
// again ("p (deleted)"): an editor saving twice. A process that is gone, or
// whose /proc entries cannot be read, is passed over: the host user owns the
// jail, so only a process that exited is unreadable.
func ProcessesHold(pids []int, p string, host os.FileInfo) bool {
	hs, ok := host.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	reaches := func(link string) bool {
		target, err := os.Readlink(link)
		if err != nil {
			return false
		}
		target = strings.TrimSuffix(target, " (deleted)")
		if target != p && !(host.IsDir() && Within(p, target)) {
			return false
		}
		st, err := os.Stat(link)
		if err != nil {
			return false
		}
		ss, ok := st.Sys().(*syscall.Stat_t)
		return ok && ss.Dev == hs.Dev
	}
	for _, pid := range pids {
		proc := fmt.Sprintf("/proc/%d", pid)
		if reaches(proc + "/cwd") {
			return true
		}
		for _, sub := range []string{"fd", "map_files"} {
			ents, err := os.ReadDir(filepath.Join(proc, sub))
			if err != nil {
				continue
			}
			for _, e := range ents {
				if reaches(filepath.Join(proc, sub, e.Name())) {
					return true
				}
			}
		}
	}
	return false
}
