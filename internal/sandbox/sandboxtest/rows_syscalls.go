package sandboxtest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
)

// syscallRows are the system calls a jailed command tries, and what it
// must get back: the filter's errno, or the call's own answer where the
// filter lets a harmless form through.
var syscallRows = []struct{ probe, want string }{
	{"ptrace", "EPERM"},
	{"io_uring", "EPERM"},
	{"bpf", "EPERM"},
	{"tiocsti", "EPERM"},
	{"ioctl-tiocsti-highbits", "EPERM"},
	{"personality", "EPERM"},
	{"personality-query", "ok"},
	{"personality-linux", "ok"},
	{"clone3", "ENOSYS"},
	{"clone-newuser", "EPERM"},
	{"unshare", "EPERM"},
	{"mount", "EPERM"},
	{"keyctl", "EPERM"},
	// libseccomp drops it from Docker's profile; warden's own filter,
	// stacked by the worker there, denies it.
	{"open_tree_attr", "EPERM"},
}

// testSyscalls: the dangerous system calls are refused with the filter's
// errno in every backend.
func testSyscalls(t *testing.T, f *Fixture) {
	w, _ := f.start(t, nil, nil, nil)
	for _, tc := range syscallRows {
		want := tc.want
		if w, ok := f.Expect[tc.probe]; ok {
			want = w
		}
		res := f.probe(t, w, tc.probe)
		if got := strings.TrimSpace(res.Output); got != want {
			t.Errorf("%s: got %q (exit %d), want %s", tc.probe, got, res.ExitCode, want)
		}
	}
}

// testForeignArch: a system call made under a foreign architecture (x32,
// i386 through int 0x80) never runs: the filter kills the thread (Docker's
// libseccomp profile) or the process (warden's filter).
func testForeignArch(t *testing.T, f *Fixture) {
	if !hasI386 {
		t.Skip("this architecture has no i386 entry point; the seccomp package's BPF tests cover its foreign ABI")
	}
	w, _ := f.start(t, nil, nil, nil)
	killed := func(res command.Result) bool {
		got := strings.TrimSpace(res.Output)
		return got == "thread killed" || (got == "" && res.ExitCode != 0)
	}
	if res := f.probe(t, w, "x32"); !killed(res) {
		t.Errorf("x32: exit %d, output %q; want the call killed", res.ExitCode, strings.TrimSpace(res.Output))
	}
	// Without a filter, int 0x80 reaches the i386 entry where the kernel
	// has one; where it has none (it faults on the host too) the row proves
	// nothing and is only logged.
	host, _ := exec.Command(os.Args[0], probeArg, "int80").Output()
	res := f.probe(t, w, "int80")
	switch {
	case strings.TrimSpace(string(host)) != "ok":
		t.Logf("int 0x80 does not reach the kernel on this host (%.40q); the x32 row covers the guard", host)
	case !killed(res):
		t.Errorf("int80: exit %d, output %.80q; want the call killed", res.ExitCode, strings.TrimSpace(res.Output))
	}
}

// testNetwork: under lockdown, with network off and with an invalid
// section, nothing on the host's loopback is reachable; network = true
// reaches it (so that the other rows can fail).
func testNetwork(t *testing.T, f *Fixture) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("reached"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	for _, tc := range []struct {
		name  string
		tweak func(*config.Sandbox)
		reach bool
	}{
		{"network off", func(*config.Sandbox) {}, false},
		{"lockdown", func(s *config.Sandbox) { s.Lockdown, s.Network = true, true }, false},
		{"invalid section", func(s *config.Sandbox) { s.Network, s.Invalid = true, "sandbox.netwrk: unknown key" }, false},
		{"network on reaches", func(s *config.Sandbox) { s.Network = true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := f.Sandbox()
			tc.tweak(sb)
			w, _ := f.start(t, sb, nil, nil)
			res := f.probe(t, w, "connect", addr)
			if got := strings.TrimSpace(res.Output) == "reached"; got != tc.reach {
				t.Errorf("connect to the host's loopback: %q, want reached=%v", res.Output, tc.reach)
			}
			if !tc.reach && w.Info().Network {
				t.Errorf("Info says the network is shared: %+v", w.Info())
			}
		})
	}
}

// testLockdownReadOnly: under lockdown (asked for, or forced by an invalid
// section) the workspace is read-only but for rw_paths.
func testLockdownReadOnly(t *testing.T, f *Fixture) {
	for _, tc := range []struct {
		name   string
		tweak  func(*config.Sandbox)
		forced bool
	}{
		{"asked for", func(s *config.Sandbox) { s.Lockdown = true }, false},
		{"forced by an invalid section", func(s *config.Sandbox) { s.Invalid = "sandbox: wrong type for lockdown" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := f.Sandbox()
			tc.tweak(sb)
			sb.RWPaths = []string{"build"}
			w, dir := f.start(t, sb, map[string]string{"src/a.go": "package a\n", "build/.keep": ""}, nil)
			if info := w.Info(); !info.Lockdown || (info.Forced != "") != tc.forced {
				t.Fatalf("Info: %+v", info)
			}
			mustFail(t, w, "echo x > src/a.go")
			mustFail(t, w, "touch new.txt")
			if err := w.FS().WriteFile("new.txt", []byte("x"), 0o644); err == nil {
				t.Error("FS.WriteFile succeeded in a read-only workspace")
			}
			if res := run(t, w, "echo ok > build/out.txt && cat build/out.txt"); res.ExitCode != 0 {
				t.Errorf("rw_paths are not writable under lockdown: %q", res.Output)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "src/a.go")); string(b) != "package a\n" {
				t.Errorf("src/a.go changed: %q", b)
			}
		})
	}
}
