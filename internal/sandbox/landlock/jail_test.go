//go:build linux && (amd64 || arm64)

package landlock

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden/internal/sandbox/seccomp"
	"github.com/wardenhq/warden/internal/testenv"
)

// TestRestrictInsideJail runs Restrict where the worker runs it: inside
// bwrap, under warden's seccomp filter, which must leave the Landlock
// system calls alone.
func TestRestrictInsideJail(t *testing.T) {
	requireLandlock(t)
	bwrap := testenv.Need(t, "bwrap")[0]
	t.Parallel()
	prog, err := seccomp.Program(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := seccomp.Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	f, err := seccomp.MemFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	rw := t.TempDir()
	plan, err := json.Marshal(victimPlan{Mode: ModeOn, RW: []string{rw}, Probes: []probe{
		{Op: "write", Path: filepath.Join(rw, "x")},
		{Op: "read", Path: "/etc/hostname"},
		{Op: "exec", Path: "/bin/sh", Args: []string{"-c", "ls / >/dev/null"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
		"--bind", rw, rw, "--dev", "/dev", "--proc", "/proc", "--seccomp", "3", os.Args[0])
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = append(os.Environ(), victimEnv+"="+string(plan))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if bytes.Contains(stderr.Bytes(), []byte("bwrap:")) {
			testenv.Skip(t, "bwrap cannot run here: %s", stderr.Bytes())
		}
		t.Fatalf("jailed victim: %v\n%s", err, stderr.Bytes())
	}
	var rep victimReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("victim output %q: %v", out, err)
	}
	if rep.Err != "" {
		t.Fatalf("Restrict inside the jail: %s", rep.Err)
	}
	if diff := cmp.Diff([]string{"ok", "EACCES", "exit 2"}, rep.Results); diff != "" {
		t.Errorf("probes inside the jail (-want +got):\n%s\nstatus %s", diff, rep.Status)
	}
}
