package sandbox

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/proto"
)

func spawn(t *testing.T, w *Worker, argv ...string) *Process {
	t.Helper()
	p, err := w.Spawn(t.Context(), argv, "", nil)
	if err != nil {
		t.Fatalf("Spawn %q: %v", argv, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestStreamEcho(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	p := spawn(t, w, "cat")
	in := []byte("hello from the host\n")
	if _, err := p.Stdin().Write(in); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(in))
	if _, err := io.ReadFull(p.Stdout(), got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, in) {
		t.Fatalf("echo: got %q, want %q", got, in)
	}
	// Closing stdin is EOF for the process: cat exits 0, stdout ends.
	if err := p.Stdin().Close(); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(p.Stdout()); err != nil || len(rest) != 0 {
		t.Fatalf("after EOF: %q %v", rest, err)
	}
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("exit: %d %v", code, err)
	}
	if _, err := p.Stdin().Write([]byte("x")); err == nil {
		t.Fatal("a write after closing stdin succeeded")
	}
}

func TestStreamExitCodes(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	for _, tc := range []struct {
		argv []string
		code int
		out  string
	}{
		{[]string{"true"}, 0, ""},
		{[]string{"sh", "-c", "echo out; exit 3"}, 3, "out\n"},
		{[]string{"sh", "-c", "kill -9 $$"}, 137, ""},
		// Only the process's stdout is the stream; its stderr is logged.
		{[]string{"sh", "-c", "echo err >&2; pwd"}, 0, "WS\n"},
	} {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			p := spawn(t, w, tc.argv...)
			out, err := io.ReadAll(p.Stdout())
			if err != nil {
				t.Fatal(err)
			}
			code, err := p.Wait()
			want := strings.ReplaceAll(tc.out, "WS", w.Info().Workspace)
			if code != tc.code || err != nil || string(out) != want {
				t.Fatalf("got exit %d %v output %q, want %d %q", code, err, out, tc.code, want)
			}
		})
	}
	if _, err := w.Spawn(t.Context(), []string{"no-such-program"}, "", nil); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing program: %v", err)
	}
	// The working directory is confined like exec's.
	if _, err := w.Spawn(t.Context(), []string{"true"}, "../..", nil); err == nil {
		t.Error("spawn ran with a working directory outside the workspace")
	}
}

func TestStreamManyConcurrent(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := w.Spawn(t.Context(), []string{"cat"}, "", nil)
			if err != nil {
				errs <- err
				return
			}
			defer p.Close()
			data := make([]byte, 200_000+i*1000)
			rand.Read(data)
			go func() {
				p.Stdin().Write(data)
				p.Stdin().Close()
			}()
			got, err := io.ReadAll(p.Stdout())
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(got, data) {
				errs <- fmt.Errorf("stream %d: got %d bytes back, want %d (equal: false)", i, len(got), len(data))
			}
			if code, err := p.Wait(); code != 0 || err != nil {
				errs <- fmt.Errorf("stream %d: exit %d %v", i, code, err)
			}
		}()
	}
	// Ordinary requests are served while the streams run.
	for range 20 {
		if _, err := w.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStreamBackpressure: a process writing 50 MB while the host reads
// slowly is blocked on its pipe; the worker never holds more than a window.
func TestStreamBackpressure(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	const total = 50_000_000
	p := spawn(t, w, "head", "-c", strconv.Itoa(total), "/dev/zero")
	time.Sleep(700 * time.Millisecond) // the host reads nothing meanwhile
	p.mu.Lock()
	held := len(p.buf)
	p.mu.Unlock()
	if held > proto.StreamWindow+proto.StreamChunk {
		t.Fatalf("the host holds %d unread bytes, more than the window", held)
	}
	// The producer is asleep writing to its full pipe.
	{
		blocked := false
		for _, pid := range cgroupPIDs(t, w) {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
			if bytes.HasPrefix(cmd, []byte("head\x00")) {
				blocked = strings.Contains(string(wchan), "pipe_w") // pipe_write, anon_pipe_write, pipe_wait
				if !blocked {
					t.Errorf("the producer is in %q, not blocked on its pipe", wchan)
				}
			}
		}
		if !blocked {
			t.Errorf("no blocked producer among %v", cgroupPIDs(t, w))
		}
	}
	rss0 := workerRSS(t, w)
	maxRSS := rss0
	var got int64
	buf := make([]byte, 16<<10)
	for i := 0; ; i++ {
		n, err := p.Stdout().Read(buf)
		got += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%256 == 0 {
			time.Sleep(2 * time.Millisecond) // a slow reader
			maxRSS = max(maxRSS, workerRSS(t, w))
		}
	}
	if got != total {
		t.Fatalf("read %d bytes, want %d", got, total)
	}
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("exit %d %v", code, err)
	}
	t.Logf("worker RSS %d KiB before reading, at most %d KiB while 50 MB went through", rss0>>10, maxRSS>>10)
	// A worker that buffered the stream would hold 50 MB more; a window
	// and the collector's slack are far less (under the race detector,
	// up to ~24 MB was seen).
	slack := int64(16 << 20)
	if raceEnabled {
		slack = 36 << 20
	}
	if rss0 > 0 && maxRSS > rss0+slack {
		t.Errorf("worker RSS grew from %d KiB to %d KiB: it buffers the stream", rss0>>10, maxRSS>>10)
	}
}

// workerRSS is the resident size of the jail's `warden worker` process.
func workerRSS(t *testing.T, w *Worker) int64 {
	for _, pid := range cgroupPIDs(t, w) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !isWorker(cmd) {
			continue
		}
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for l := range strings.Lines(string(st)) {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				return kb << 10
			}
		}
	}
	t.Fatal("no worker process in the jail's cgroup")
	return 0
}

func isWorker(cmdline []byte) bool {
	return bytes.HasPrefix(cmdline, []byte(jail.JailExe+"\x00worker\x00--spec\x00"))
}

// jailPIDs lists the processes of the jail other than bwrap and the worker.
func jailPIDs(t *testing.T, w *Worker) []string {
	var out []string
	for _, pid := range cgroupPIDs(t, w) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		argv0, _, _ := bytes.Cut(cmd, []byte{0})
		if len(cmd) == 0 || isWorker(cmd) || filepath.Base(string(argv0)) == "bwrap" {
			continue
		}
		out = append(out, string(bytes.ReplaceAll(bytes.TrimRight(cmd, "\x00"), []byte{0}, []byte{' '})))
	}
	return out
}

func TestStreamKilledOnClose(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	for _, how := range []string{"close", "stdout-close", "kill"} {
		t.Run(how, func(t *testing.T) {
			// A child in the background and one that left the group.
			p := spawn(t, w, "sh", "-c", "sleep 1000 & setsid sleep 1001 & echo up; sleep 1002")
			line := make([]byte, 3)
			if _, err := io.ReadFull(p.Stdout(), line); err != nil {
				t.Fatal(err)
			}
			// "up" can arrive before the background children have exec'd
			// their sleeps (they still show as forks of sh): wait for them.
			var got []string
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				got = jailPIDs(t, w)
				if len(got) >= 3 && slices.Contains(got, "sleep 1000") && slices.Contains(got, "sleep 1001") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("jail processes: %q", got)
				}
			}
			switch how {
			case "close":
				p.Close()
			case "stdout-close":
				p.Stdout().Close()
			case "kill":
				p.Kill()
			}
			code, err := p.Wait()
			if code != 137 || err != nil {
				t.Errorf("exit %d %v, want 137", code, err)
			}
			// setsid's sleep left the group: it is not the stream's to kill,
			// but it dies with the worker (below).
			var left []string
			for _, c := range jailPIDs(t, w) {
				if c != "sleep 1001" {
					left = append(left, c)
				}
			}
			if len(left) > 0 {
				t.Errorf("left behind: %q", left)
			}
		})
	}
	// A worker reset (here: the worker killed) ends its streams.
	p := spawn(t, w, "sleep", "1000")
	w.Kill()
	if _, err := p.Wait(); !errors.Is(err, ErrWorkerGone) {
		t.Fatalf("after a reset: %v, want ErrWorkerGone", err)
	}
	if _, err := p.Stdin().Write([]byte("x")); err == nil {
		t.Fatal("write to a process of a dead worker succeeded")
	}
}

// TestStreamWorkerCloseEndsStreams: closing the worker's input (warden
// closing the worker) kills its streams, also the ones left behind.
func TestStreamWorkerCloseEndsStreams(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	p := spawn(t, w, "sh", "-c", "setsid sleep 1001 & sleep 1000")
	w.Close()
	// The exit line (137) may beat the worker's end (ErrWorkerGone).
	if code, err := p.Wait(); code != 137 && !errors.Is(err, ErrWorkerGone) {
		t.Errorf("stream ended with %d %v", code, err)
	}
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pids = cgroupPIDs(t, w); len(pids) == 0 {
			return
		}
	}
	t.Fatalf("processes left after the worker closed: %v", pids)
}

// TestStreamStdinNotRead: a process that never reads its stdin blocks the
// host's write, not the worker.
func TestStreamStdinNotRead(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	p := spawn(t, w, "sleep", "1000")
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Stdin().Write(make([]byte, 4<<20))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("4 MiB went into a process that reads nothing: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := w.Ping(t.Context()); err != nil {
		t.Fatalf("worker stuck behind a blocked stdin: %v", err)
	}
	res := run(t, w, "echo still serving")
	if res.Output != "still serving\n" {
		t.Fatalf("exec while a stdin write blocks: %q", res.Output)
	}
	p.Kill()
	select {
	case err := <-wrote:
		if !errors.Is(err, ErrProcessExited) {
			t.Fatalf("blocked write after kill: %v, want ErrProcessExited", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked write did not end with the process")
	}
}

// TestStreamIdleWorkerKept: a worker with a live stream is not reaped.
func TestStreamIdleWorkerKept(t *testing.T) {
	w, _ := startJail(t, nil, nil)
	p := spawn(t, w, "cat")
	w.lastUse.Store(time.Now().Add(-time.Hour).UnixNano())
	if idle := w.idleFor(); idle != 0 {
		t.Fatalf("a worker with a live stream is idle for %v", idle)
	}
	p.Close()
	w.lastUse.Store(time.Now().Add(-time.Hour).UnixNano())
	if idle := w.idleFor(); idle < time.Minute {
		t.Fatalf("idle %v after the stream ended", idle)
	}
}
