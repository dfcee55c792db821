package sandboxtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// InheritDescriptors opens, in this process and without close-on-exec, a
// descriptor reading secret and one appending to appendTo, at the first
// free pair from 20 up (20 and 21 unless this process holds them): what an
// agent host that leaks descriptors into warden hands it. They are closed
// when the test ends.
func InheritDescriptors(t testing.TB, secret, appendTo string) (rfd, wfd int) {
	t.Helper()
	r, err := unix.Open(secret, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := unix.Open(appendTo, unix.O_WRONLY|unix.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	free := func(fd int) bool {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		return err == unix.EBADF
	}
	rfd = 20
	for !free(rfd) || !free(rfd+1) {
		rfd++
	}
	wfd = rfd + 1
	// dup2 leaves the new descriptor without close-on-exec.
	if err := unix.Dup2(r, rfd); err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup2(w, wfd); err != nil {
		t.Fatal(err)
	}
	unix.Close(r)
	unix.Close(w)
	t.Cleanup(func() { unix.Close(rfd); unix.Close(wfd) })
	return rfd, wfd
}

// testInheritedFDs: descriptors the process that starts the jail inherited
// reach neither the jail nor its commands.
func testInheritedFDs(t *testing.T, f *Fixture) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	appendTo := filepath.Join(outside, "log")
	os.WriteFile(secret, []byte("fd-secret-canary\n"), 0o600)
	os.WriteFile(appendTo, []byte("log\n"), 0o600)
	rfd, wfd := InheritDescriptors(t, secret, appendTo)
	w, _ := f.start(t, nil, nil, nil)
	r, wr := strconv.Itoa(rfd), strconv.Itoa(wfd)
	res := run(t, w, "cat <&"+r+"; echo x >&"+wr+"; ls -l /proc/self/fd /proc/$PPID/fd 2>/dev/null")
	if strings.Contains(res.Output, "fd-secret-canary") {
		t.Errorf("a jailed command read the inherited descriptor %s:\n%s", r, res.Output)
	}
	for _, p := range []string{secret, appendTo} {
		if strings.Contains(res.Output, p) {
			t.Errorf("%s is open in the jail:\n%s", p, res.Output)
		}
	}
	if b, _ := os.ReadFile(appendTo); string(b) != "log\n" {
		t.Errorf("a jailed command appended through the inherited descriptor %s: %q", wr, b)
	}
	for _, fd := range []string{r, wr} {
		if got := strings.TrimSpace(f.probe(t, w, "fd", fd).Output); !strings.HasPrefix(got, "closed") {
			t.Errorf("descriptor %s in the jail: %s", fd, got)
		}
	}
	// Seen from the host: no process of the jail's tree (bubblewrap, its
	// init, the worker; the docker client) holds them either.
	if pid := w.Info().PID; pid > 0 {
		for _, p := range processTree(pid) {
			for _, target := range openFiles(p) {
				if target == secret || target == appendTo {
					t.Errorf("process %d of the jail's tree holds %s", p, target)
				}
			}
		}
	}
	// The descriptors are still this process's: only children lost them.
	if _, err := unix.FcntlInt(uintptr(rfd), unix.F_GETFD, 0); err != nil {
		t.Errorf("descriptor %d was closed in the process that started the jail: %v", rfd, err)
	}
}

// processTree lists pid and its descendants.
func processTree(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(out[i]) + "/task")
		for _, task := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(out[i]) + "/task/" + task.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// openFiles lists what the descriptors of process pid point to.
func openFiles(pid int) []string {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, l)
		}
	}
	return out
}
