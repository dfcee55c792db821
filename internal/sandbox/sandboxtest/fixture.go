package sandboxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
)

// Fixture is how the suite reaches one backend: a new backend gets the
// whole suite by filling one in and calling Run from its tests.
type Fixture struct {
	// Name is the backend's name, as [sandbox] backend gives it.
	Name string
	// Sandbox returns a new, enabled [sandbox] section for this backend;
	// the rows add lockdown, network, rw_paths and the like to it.
	Sandbox func() *config.Sandbox
	// Workspace makes a new, empty workspace directory the way the backend
	// needs it (owned by the user its jail runs as), symlinks resolved.
	// Nil: a t.TempDir().
	Workspace func(t *testing.T) string
	// HostEnv is the environment the jail's is picked from (nil: this
	// process's), before the rows add their canaries.
	HostEnv []string
	// Probe is the path of this test binary inside the jail: the rows run
	// it to make system calls and connections.
	Probe string
	// Secrets are host paths outside the workspace the jail must not read
	// nor list, beyond those every backend is tried with.
	Secrets []string
	// Processes counts the jail's processes as the host sees them; nil
	// when the host cannot.
	Processes func(t *testing.T, w *sandbox.Worker) int
	// Leftovers lists what the backend left on the host for the workspace
	// dir (containers) once its worker is gone; nil: nothing but
	// processes, which the suite looks for itself.
	Leftovers func(t *testing.T, dir string) []string
	// Expect overrides a probe's answer where the backend is known to
	// differ (each difference is documented in the backend's doc.go).
	Expect map[string]string
	// StartTimeout bounds each start (default 30 s).
	StartTimeout time.Duration
}

// workspace makes a workspace holding files, owned as the fixture needs.
func (f *Fixture) workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	var dir string
	if f.Workspace != nil {
		dir = f.Workspace(t)
	} else {
		var err error
		if dir, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	WriteFiles(t, dir, files)
	return dir
}

// options are the options of a worker for the workspace dir under sb.
func (f *Fixture) options(dir string, sb *config.Sandbox) *sandbox.Options {
	if sb == nil {
		sb = f.Sandbox()
	}
	timeout := f.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	env := f.HostEnv
	if env == nil {
		env = os.Environ()
	}
	return &sandbox.Options{Workspace: dir, Sandbox: sb, HostEnv: append([]string{}, env...), StartTimeout: timeout}
}

// start starts a worker on a new workspace holding files; tweak may change
// its options. The worker is closed when the test ends.
func (f *Fixture) start(t *testing.T, sb *config.Sandbox, files map[string]string, tweak func(*sandbox.Options)) (*sandbox.Worker, string) {
	t.Helper()
	dir := f.workspace(t, files)
	return f.startIn(t, dir, sb, tweak), dir
}

// startIn starts a worker on the workspace dir, closed when the test ends.
func (f *Fixture) startIn(t *testing.T, dir string, sb *config.Sandbox, tweak func(*sandbox.Options)) *sandbox.Worker {
	t.Helper()
	o := f.options(dir, sb)
	if tweak != nil {
		tweak(o)
	}
	w, err := sandbox.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start (%s): %v", f.Name, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// WriteFiles writes files (name → contents) into dir, making directories
// as needed, all owned like dir: a backend that runs as the workspace's
// owner (docker) sees them as its own.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) == os.Getuid() {
		return
	}
	err = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, int(sys.Uid), int(sys.Gid))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, w *sandbox.Worker, shell string) command.Result {
	t.Helper()
	res, err := w.Runner().Run(context.Background(), command.Spec{Shell: shell, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("run %q: %v", shell, err)
	}
	return res
}

// mustFail runs shell in the jail and fails the test if it exits 0.
func mustFail(t *testing.T, w *sandbox.Worker, shell string) command.Result {
	t.Helper()
	res := run(t, w, shell)
	if res.ExitCode == 0 {
		t.Errorf("escape: %q succeeded in the jail; output:\n%s", shell, res.Output)
	}
	return res
}

// probe runs this test binary in the jail to make one attempt.
func (f *Fixture) probe(t *testing.T, w *sandbox.Worker, args ...string) command.Result {
	t.Helper()
	res, err := w.Runner().Run(context.Background(), command.Spec{Argv: append([]string{f.Probe, probeArg}, args...), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("probe %v: %v", args, err)
	}
	return res
}

// marked is a command line that sleeps in a bash whose command line holds
// m (exec -a would not do: a busybox image picks its applet by argv[0]).
func marked(m string) string { return "bash -c 'sleep 1000; :' " + m }

// marker is a name no other process carries.
func marker(what string) string {
	var b [6]byte
	rand.Read(b[:])
	return "warden-" + what + "-" + hex.EncodeToString(b[:])
}

// pidsWith lists the live processes on this host (zombies aside) whose
// command line holds s, this one excepted.
func pidsWith(s string) []string {
	var out []string
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' || e.Name() == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		if st, _ := os.ReadFile("/proc/" + e.Name() + "/stat"); bytes.Contains(st, []byte(") Z ")) {
			continue
		}
		out = append(out, e.Name()+":"+strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " "))
	}
	return out
}

// waitNoPids waits until no process carries s.
func waitNoPids(t *testing.T, s string, within time.Duration) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if left = pidsWith(s); len(left) == 0 {
			return
		}
	}
	t.Errorf("processes holding %q outlived their jail: %q", s, left)
}
