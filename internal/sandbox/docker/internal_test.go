package docker

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestDockerSeccompProfile(t *testing.T) {
	t.Parallel()
	for _, lockdown := range []bool{false, true} {
		b, err := seccompProfile(lockdown)
		if err != nil {
			t.Fatal(err)
		}
		var p dockerSeccomp
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if p.DefaultAction != "SCMP_ACT_ALLOW" || len(p.Architectures) != 1 {
			t.Errorf("profile head: %+v", p)
		}
		find := func(name string) []dockerSeccompEntry {
			var out []dockerSeccompEntry
			for _, e := range p.Syscalls {
				if e.Names[0] == name {
					out = append(out, e)
				}
			}
			return out
		}
		for _, name := range []string{"ptrace", "mount", "unshare", "bpf", "io_uring_setup", "keyctl", "open_by_handle_at", "chroot"} {
			e := find(name)
			if len(e) != 1 || e[0].Action != "SCMP_ACT_ERRNO" || *e[0].ErrnoRet != uint(syscall.EPERM) || len(e[0].Args) != 0 {
				t.Errorf("%s: %+v", name, e)
			}
		}
		if e := find("clone3"); len(e) != 1 || *e[0].ErrnoRet != uint(syscall.ENOSYS) {
			t.Errorf("clone3: %+v", e)
		}
		// clone: one entry per CLONE_NEW* bit.
		if e := find("clone"); len(e) != 7 {
			t.Errorf("clone: %d entries, want 7: %+v", len(e), e)
		}
		// ioctl TIOCSTI: a 32-bit masked match, so high bits do not slip past.
		want := []dockerSeccompArg{{Index: 1, Value: 0xffffffff, ValueTwo: unix.TIOCSTI, Op: "SCMP_CMP_MASKED_EQ"}}
		if e := find("ioctl"); len(e) == 0 || !cmp.Equal(e[0].Args, want) {
			t.Errorf("ioctl: %+v", e)
		}
		inet := 0
		for _, e := range find("socket") {
			if len(e.Args) == 1 && e.Args[0].ValueTwo == unix.AF_INET {
				inet++
			}
		}
		if lockdown != (inet == 1) {
			t.Errorf("lockdown %v: %d AF_INET rows", lockdown, inet)
		}
	}
}

// FuzzOwnerGone feeds container labels (anyone who can reach the daemon can
// set them) to the stale-container check: it must never panic, and must
// never call the running test process gone, whatever follows its label.
func FuzzOwnerGone(f *testing.F) {
	self := ownerLabel(os.Getpid())
	f.Add(self)
	f.Add(self + "/extra")
	f.Add("boot/1/2")
	f.Add("//")
	f.Add("x/-1/")
	f.Add(strings.Repeat("/", 100))
	boot, _, _ := strings.Cut(self, "/")
	f.Fuzz(func(t *testing.T, label string) {
		gone := ownerGone(label)
		if ownerGone(self) {
			t.Fatal("the live process is called gone")
		}
		// A container from another machine or boot id is never removed
		// unless the boot id is ours.
		if b, _, _ := strings.Cut(label, "/"); gone && b != boot {
			t.Fatalf("label %q of another boot id called gone", label)
		}
	})
}

func TestDockerMountArg(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"/w/plain", true}, {"/w/a,b", true}, {`/w/"q"`, true}, {"/w/x=y,readonly=false", true},
		{"/w/ lead", true}, {"/w/nl\nx", true}, {"/w/cr\rx", true}, {"/w/trail\r", true},
		{"/w/crlf\r\nx", false}, {"/w/end\r\n", false},
	} {
		v, err := bindMount(c.path, c.path, true)
		if (err == nil) != c.ok {
			t.Errorf("bindMount(%q): %q, %v", c.path, v, err)
			continue
		}
		if err != nil {
			continue
		}
		// What the docker client reads back.
		back, err := csv.NewReader(strings.NewReader(v)).Read()
		want := []string{"type=bind", "source=" + c.path, "target=" + c.path, "bind-propagation=rprivate", "readonly"}
		if err != nil || !cmp.Equal(back, want) {
			t.Errorf("bindMount(%q) = %q reads back as %q, %v", c.path, v, back, err)
		}
	}
}
