package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/testenv"
)

// peerEnv makes this test binary a control client for
// TestControlPeerHelper: run as another user, or inside a jail.
const peerEnv = "WARDEN_TEST_CONTROL_PEER"

// TestControlPeerHelper is not a test on its own: a child process runs it
// (as another uid, or inside a jail) to knock on a control socket with a
// raw HTTP request, printing the answer for the parent to judge.
func TestControlPeerHelper(t *testing.T) {
	sock := os.Getenv(peerEnv)
	if sock == "" {
		t.Skip("helper process for the control peer tests; runs only when they start it")
	}
	fmt.Println("peer-uid", os.Getuid())
	conn, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Println("dial-error", err)
		return
	}
	defer conn.Close()
	body := os.Getenv(peerEnv + "_BODY")
	fmt.Fprintf(conn, "POST /v1/exec HTTP/1.1\r\nHost: warden\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	resp, _ := io.ReadAll(bufio.NewReader(conn))
	fmt.Println("answer", strings.ReplaceAll(string(resp), "\r\n", " | "))
}

// controlFixture is a sandbox.Manager behind a control endpoint, as warden serve
// holds it.
type controlFixture struct {
	m      *sandbox.Manager
	opts   *sandbox.Options
	ws     string // the workspace, resolved
	ctlDir string
	cs     *Server
}

func newControlFixture(t *testing.T, ctlDir string, tweak func(*sandbox.Options)) *controlFixture {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ctlDir == "" {
		ctlDir = filepath.Join(t.TempDir(), "run")
	}
	f := &controlFixture{
		m:      sandbox.NewManager(nil),
		opts:   &sandbox.Options{Workspace: ws, Sandbox: &config.Sandbox{Enabled: true, Backend: "local"}, StartTimeout: 20 * time.Second},
		ws:     ws,
		ctlDir: ctlDir,
	}
	if tweak != nil {
		tweak(f.opts)
	}
	t.Cleanup(func() { f.m.Close() })
	f.cs, err = Listen(ctlDir, []Target{{Options: f.opts, Manager: f.m}}, nil)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { f.cs.Close() })
	return f
}

// exec runs argv through the control endpoint, as warden exec does.
func (f *controlFixture) exec(t *testing.T, argv ...string) command.Result {
	t.Helper()
	res, pid, err := ExecViaServe(context.Background(), f.ctlDir, f.opts, command.Spec{Argv: argv, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("ExecViaServe %q: %v", argv, err)
	}
	if pid != os.Getpid() {
		t.Fatalf("ran through serve pid %d, want this process %d", pid, os.Getpid())
	}
	return res
}

func TestControlListAndExec(t *testing.T) {
	testenv.Need(t, "bwrap")
	t.Parallel()
	f := newControlFixture(t, "", nil)

	serves, err := FindServes(f.ctlDir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Serve{{PID: os.Getpid(), Socket: f.cs.Path()}}, serves); diff != "" {
		t.Fatalf("FindServes (-want +got):\n%s", diff)
	}
	st, err := serves[0].Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{f.ws}, st.Workspaces); diff != "" || len(st.Workers) != 0 {
		t.Fatalf("status before any use: workspaces (-want +got) %s; workers %v", diff, st.Workers)
	}

	// The command runs in the jail: the workspace is writable, host
	// secrets and the control socket itself are not there.
	res := f.exec(t, "sh", "-c", "echo $$; echo made > made.txt; exit 7")
	if res.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7; output %q", res.ExitCode, res.Output)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the command's file: %q %v", b, err)
	}
	first := strings.TrimSpace(res.Output)
	st, err = serves[0].Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Workers) != 1 || st.Workers[0].Workspace != f.ws || st.Workers[0].Seccomp != "enforced" || st.Workers[0].Backend != jail.BackendLocal {
		t.Fatalf("status after an exec: %+v", st.Workers)
	}
	worker := st.Workers[0].PID

	res = f.exec(t, "sh", "-c", "echo $$")
	second := strings.TrimSpace(res.Output)
	if first == second {
		t.Errorf("both commands had pid %s in the jail: each got a fresh jail, not the held worker", first)
	}
	if got := f.m.List(); len(got) != 1 || got[0].PID != worker {
		t.Errorf("worker changed between two execs: was pid %d, now %+v", worker, got)
	}
	for _, argv := range [][]string{
		{"cat", "/etc/shadow"},
		{"test", "-e", f.cs.Path()},
		{"test", "-e", f.ctlDir},
	} {
		if res := f.exec(t, argv...); res.ExitCode == 0 {
			t.Errorf("escape: %q succeeded through the control endpoint: %q", argv, res.Output)
		}
	}
}

func TestControlSocketPermissions(t *testing.T) {
	t.Parallel()
	f := newControlFixture(t, "", nil)
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{f.ctlDir, 0o700}, {f.cs.Path(), 0o600}} {
		fi, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.want {
			t.Errorf("%s has mode %v, want %v", c.path, fi.Mode().Perm(), c.want)
		}
	}
	if fi, _ := os.Lstat(f.cs.Path()); fi.Mode().Type() != os.ModeSocket {
		t.Errorf("%s is not a socket", f.cs.Path())
	}
	path := f.cs.Path()
	if err := f.cs.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlived its server: %v", err)
	}
}

func TestControlDirRefused(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	priv := filepath.Join(base, "private")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(priv, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	for _, dir := range []string{open, link, file} {
		if cs, err := Listen(dir, nil, nil); err == nil {
			cs.Close()
			t.Errorf("Listen accepted %s", dir)
		}
		if _, err := FindServes(dir); err == nil {
			t.Errorf("FindServes trusted %s", dir)
		}
	}
	if s, err := FindServes(filepath.Join(base, "missing")); err != nil || len(s) != 0 {
		t.Errorf("a missing directory: %v %v, want none", s, err)
	}
}

func TestControlNotHeld(t *testing.T) {
	t.Parallel()
	// Nothing starts a worker here: every request is answered before.
	f := newControlFixture(t, "", nil)
	other := t.TempDir()
	ctx := context.Background()
	spec := command.Spec{Argv: []string{"touch", "ran"}}
	for _, c := range []struct {
		name string
		opts *sandbox.Options
	}{
		{"another workspace", &sandbox.Options{Workspace: other, Sandbox: f.opts.Sandbox}},
		{"other options", &sandbox.Options{Workspace: f.ws, Sandbox: &config.Sandbox{Enabled: true, Backend: "local", Lockdown: true}, StartTimeout: f.opts.StartTimeout}},
		{"another allowlist", &sandbox.Options{Workspace: f.ws, Sandbox: f.opts.Sandbox, EnvAllowlist: []string{"AWS_SECRET"}, StartTimeout: f.opts.StartTimeout}},
	} {
		_, _, err := ExecViaServe(ctx, f.ctlDir, c.opts, spec)
		if !errors.Is(err, ErrNotHeld) {
			t.Errorf("%s: err %v, want ErrNotHeld", c.name, err)
		}
	}
	// Straight to the server too: it says why.
	_, err := Serve{PID: os.Getpid(), Socket: f.cs.Path()}.Exec(ctx, &Request{
		Workspace: other, Fingerprint: sandbox.OptionsFingerprint(f.opts), Argv: []string{"true"},
	})
	if !errors.Is(err, ErrNotHeld) || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("unknown workspace: %v", err)
	}
	if _, _, err := ExecViaServe(ctx, filepath.Join(t.TempDir(), "none"), f.opts, spec); !errors.Is(err, ErrNotHeld) {
		t.Errorf("no server at all: %v", err)
	}
	for _, d := range []string{f.ws, other} {
		if _, err := os.Stat(filepath.Join(d, "ran")); err == nil {
			t.Errorf("a refused command ran in %s", d)
		}
	}
	if got := f.m.List(); len(got) != 0 {
		t.Errorf("a worker was started: %+v", got)
	}
}

func TestControlStaleSockets(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A process that has exited, and its socket left behind.
	p := exec.Command("true")
	if err := p.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, fmt.Sprintf("serve-%d.sock", p.Process.Pid))
	leave := func(path string) {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
	}
	leave(dead)
	// This process's own name, left by an earlier process with its pid.
	mine := filepath.Join(dir, fmt.Sprintf("serve-%d.sock", os.Getpid()))
	leave(mine)
	// Not ours to touch: another name, and a plain file.
	other := filepath.Join(dir, "notes.sock")
	leave(other)
	plain := filepath.Join(dir, "serve-1.sock.txt")
	os.WriteFile(plain, nil, 0o600)

	serves, err := FindServes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead process's socket is still there: %v", err)
	}
	// The live name without a listener is listed (its process lives) but
	// cannot take a command: the caller moves on.
	if len(serves) != 1 || serves[0].PID != os.Getpid() {
		t.Errorf("FindServes: %+v", serves)
	}
	opts := &sandbox.Options{Workspace: t.TempDir(), Sandbox: &config.Sandbox{Enabled: true}}
	if _, _, err := ExecViaServe(context.Background(), dir, opts, command.Spec{Argv: []string{"true"}}); !errors.Is(err, ErrNotHeld) {
		t.Errorf("a socket without a server: %v, want ErrNotHeld", err)
	}
	cs, err := Listen(dir, nil, nil)
	if err != nil {
		t.Fatalf("Listen over a stale socket of its own pid: %v", err)
	}
	defer cs.Close()
	if _, err := (Serve{PID: os.Getpid(), Socket: mine}).Status(context.Background()); err != nil {
		t.Errorf("the new server does not answer on %s: %v", mine, err)
	}
	for _, p := range []string{other, plain} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}

func TestControlCancelKillsCommand(t *testing.T) {
	testenv.Need(t, "bwrap")
	t.Parallel()
	f := newControlFixture(t, "", nil)
	f.exec(t, "true")
	worker := f.m.List()[0].PID
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := ExecViaServe(ctx, f.ctlDir, f.opts, command.Spec{Argv: []string{"sh", "-c", "echo started > started; sleep 60; echo finished > finished"}, Timeout: 120 * time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled exec: err %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the cancelled exec took %v", d)
	}
	// The worker that ran the command is killed with it (a protocol reset).
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(worker, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("worker %d still runs after its remote exec was cancelled", worker)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "started")); err != nil {
		t.Fatalf("the command never started, so the test proved nothing: %v", err)
	}
	// A later exec gets a new worker.
	if res := f.exec(t, "true"); res.ExitCode != 0 {
		t.Fatalf("exec after a cancel: %+v", res)
	}
	if got := f.m.List(); len(got) != 1 || got[0].PID == worker {
		t.Errorf("workers after the reset: %+v (old pid %d)", got, worker)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(f.ws, "finished")); err == nil {
		t.Error("the cancelled command ran to its end")
	}
}

// TestControlRefusesOtherUser connects as nobody. The directory is opened
// up on purpose: the peer credential check must hold by itself.
func TestControlRefusesOtherUser(t *testing.T) {
	testenv.Need(t, "root") // to run a client as another user
	t.Parallel()
	base, err := os.MkdirTemp("", "warden-ctl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	f := newControlFixture(t, filepath.Join(base, "run"), nil)
	os.Chmod(f.ctlDir, 0o711)
	os.Chmod(f.cs.Path(), 0o666)
	bin := filepath.Join(base, "peer.test")
	copyFile(t, mustExecutable(t), bin)

	body, _ := json.Marshal(Request{Workspace: f.ws, Fingerprint: sandbox.OptionsFingerprint(f.opts), Argv: []string{"touch", "pwned"}})
	child := exec.Command(bin, "-test.run=^TestControlPeerHelper$", "-test.count=1")
	child.Env = []string{peerEnv + "=" + f.cs.Path(), peerEnv + "_BODY=" + string(body), "PATH=/usr/bin:/bin"}
	child.Dir = "/"
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("peer as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "peer-uid 65534") {
		t.Fatalf("the peer did not run as nobody:\n%s", out)
	}
	if !strings.Contains(string(out), "403 Forbidden") || !strings.Contains(string(out), "peer uid 65534 is not this server's uid 0") {
		t.Errorf("another user's request was not refused:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "pwned")); err == nil {
		t.Error("another user's command ran")
	}
	if got := f.m.List(); len(got) != 0 {
		t.Errorf("another user's request started a worker: %+v", got)
	}
}

func TestCheckPeer(t *testing.T) {
	t.Parallel()
	nsOf := func(pid int32) (string, error) {
		switch pid {
		case 10:
			return "user:[1] pid:[1]", nil
		case 11:
			return "user:[2] pid:[2]", nil
		case 13:
			return "user:[1] pid:[3]", nil
		}
		return "", os.ErrNotExist
	}
	for _, c := range []struct {
		name string
		cred *unix.Ucred
		ok   bool
	}{
		{"same user, same namespace", &unix.Ucred{Pid: 10, Uid: 1000}, true},
		{"other uid", &unix.Ucred{Pid: 10, Uid: 0}, false},
		{"other namespace (a jail)", &unix.Ucred{Pid: 11, Uid: 1000}, false},
		{"same user namespace, other PID namespace (a container)", &unix.Ucred{Pid: 13, Uid: 1000}, false},
		{"process not visible", &unix.Ucred{Pid: 0, Uid: 1000}, false},
		{"namespace unreadable", &unix.Ucred{Pid: 12, Uid: 1000}, false},
		{"no credentials", nil, false},
	} {
		err := checkPeer(c.cred, 1000, "user:[1] pid:[1]", nsOf)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrPeerRefused)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestDecodeControlRequest(t *testing.T) {
	t.Parallel()
	fp := strings.Repeat("ab", 32)
	ok := `{"workspace":"/w","fingerprint":"` + fp + `","argv":["make","test"],"cwd":"sub","timeout_ms":1000}`
	if r, err := DecodeRequest([]byte(ok)); err != nil || r.Cwd != "sub" {
		t.Fatalf("valid request: %+v %v", r, err)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`,
		ok + ` {}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":["true"],"env":["A=1"]}`,
		`{"workspace":"w","fingerprint":"` + fp + `","argv":["true"]}`,
		`{"workspace":"/w/../etc","fingerprint":"` + fp + `","argv":["true"]}`,
		`{"workspace":"/w","fingerprint":"xyz","argv":["true"]}`,
		`{"workspace":"/w","fingerprint":"` + strings.ToUpper(fp) + `","argv":["true"]}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":[]}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":[""]}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":["a\u0000b"]}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":["true"],"cwd":"../x"}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":["true"],"cwd":"/etc"}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":["true"],"timeout_ms":-1}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":["true"],"timeout_ms":600001}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":["true"]` + strings.Repeat(" ", maxControlBody) + `}`,
		`{"workspace":"/w","fingerprint":"` + fp + `","argv":[` + strings.Repeat(`"a",`, maxControlArgs) + `"a"]}`,
	} {
		if r, err := DecodeRequest([]byte(bad)); err == nil {
			t.Errorf("accepted %.120q as %+v", bad, r)
		}
	}
}

func FuzzControlRequest(f *testing.F) {
	fp := strings.Repeat("0f", 32)
	f.Add([]byte(`{"workspace":"/w","fingerprint":"` + fp + `","argv":["make","test"],"cwd":"sub","timeout_ms":1000}`))
	f.Add([]byte(`{"workspace":"/","fingerprint":"` + fp + `","argv":["sh","-c","echo $$"]}`))
	f.Add([]byte(`{"workspace":"/w","fingerprint":"` + fp + `","argv":["x"],"cwd":"a/../.."}`))
	f.Add([]byte(`{"workspace":"/w/","fingerprint":"` + fp + `","argv":["x"]}`))
	f.Add([]byte(`{"argv":null}`))
	f.Add([]byte(`{"workspace":"/w","fingerprint":"` + fp + `","argv":["x"]}{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		if !filepath.IsAbs(r.Workspace) || len(r.Argv) == 0 || len(r.Argv) > maxControlArgs || r.Argv[0] == "" ||
			(r.Cwd != "" && !filepath.IsLocal(r.Cwd)) || r.TimeoutMS < 0 || r.TimeoutMS > proto.MaxExecTimeout.Milliseconds() {
			t.Fatalf("accepted an unbounded request: %+v", r)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeRequest(again)
		if err != nil {
			t.Fatalf("re-encoded request refused: %v\n%s", err, again)
		}
		if diff := cmp.Diff(r, r2); diff != "" {
			t.Fatalf("round trip changed the request (-first +second):\n%s", diff)
		}
	})
}

func mustExecutable(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkControlExecTrue is `true` in a held worker through the control
// socket (what warden exec pays, less its own start) and straight through
// the sandbox.Manager (what serve's own tool calls pay).
func BenchmarkControlExecTrue(b *testing.B) {
	testenv.Need(b, "bwrap")
	ws := b.TempDir()
	m := sandbox.NewManager(nil)
	defer m.Close()
	opts := &sandbox.Options{Workspace: ws, Sandbox: &config.Sandbox{Enabled: true, Backend: "local"}, StartTimeout: 20 * time.Second}
	ctlDir := filepath.Join(b.TempDir(), "run")
	cs, err := Listen(ctlDir, []Target{{Options: opts, Manager: m}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	spec := command.Spec{Argv: []string{"true"}, Timeout: 10 * time.Second}
	b.Run("control", func(b *testing.B) {
		for b.Loop() {
			if res, _, err := ExecViaServe(context.Background(), ctlDir, opts, spec); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("manager", func(b *testing.B) {
		r := m.Runner(opts)
		for b.Loop() {
			if res, err := r.Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
}
