package workspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const (
	writerEnv = "WARDEN_WORKSPACE_TEST_WRITER"
	bigSize   = 8 << 20
)

// TestMain lets the test binary act as the writer that TestWriteKilled kills.
func TestMain(m *testing.M) {
	if dir := os.Getenv(writerEnv); dir != "" {
		writer(dir)
		return
	}
	os.Exit(m.Run())
}

// writer rewrites big forever, alternating between two full contents, and
// says "ready" on stdout once the first write is under way.
func writer(dir string) {
	w, err := Open(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("ready")
	for i := 0; ; i++ {
		if err := w.WriteFile("big", bytes.Repeat([]byte{"AB"[i%2]}, bigSize), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// TestWriteKilled kills a process in the middle of WriteFile, again and
// again, and checks that the file always holds one full version.
func TestWriteKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	exe, err := os.Executable()
	must(t, err)
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	must(t, os.WriteFile(big, bytes.Repeat([]byte{'A'}, bigSize), 0o644))
	seen := map[byte]int{}
	for i := range 12 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		must(t, err)
		cmd.Stderr = os.Stderr
		must(t, cmd.Start())
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil {
			t.Fatalf("writer did not start: %v", err)
		}
		time.Sleep(time.Duration(20+rand.IntN(300)) * time.Millisecond)
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		got, err := os.ReadFile(big)
		must(t, err)
		if len(got) != bigSize {
			t.Fatalf("kill %d: big is %d bytes, want %d: torn", i, len(got), bigSize)
		}
		c := got[0]
		if bytes.Count(got, got[:1]) != bigSize {
			t.Fatalf("kill %d: big mixes versions: torn", i)
		}
		seen[c]++
	}
	t.Logf("versions seen after kills: A=%d B=%d", seen['A'], seen['B'])
	// Stray temporary files are allowed (a crash leaves them), torn files are not.
	ents, _ := os.ReadDir(dir)
	t.Logf("%d entries left in the directory", len(ents))
}
