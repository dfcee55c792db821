package jailworker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// The worker starts its threads before it serves, so that a full process
// limit (a fork bomb) cannot leave it without one.
func TestReserveThreads(t *testing.T) {
	threads := func() int {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := threads()
	reserveThreads(reservedThreads)
	if after := threads(); after < reservedThreads {
		t.Errorf("%d threads after reserving %d (%d before)", after, reservedThreads, before)
	}
}

func nonblocking(t *testing.T, fd uintptr) bool {
	t.Helper()
	fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fl&unix.O_NONBLOCK != 0
}

// The worker waits for requests through the runtime's poller, not in a
// blocking read that holds a thread: its stdin and stdout pipes are put in
// non-blocking mode for as long as it serves, and back when it is done.
func TestPollablePipes(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	defer outW.Close()
	// What os.Pipe returns is already in the poller; the worker's stdin and
	// stdout are not, like any inherited descriptor: make them blocking.
	// (Fd does that, and the raw descriptors are checked below: Fd would
	// reset the flag.)
	inFD, outFD := inR.Fd(), outW.Fd()
	in, out, release := pollable(inR, outW)
	pin, ok1 := in.(*os.File)
	pout, ok2 := out.(*os.File)
	if !ok1 || !ok2 || pin == inR || pout == outW {
		t.Fatalf("pollable(pipe, pipe) = %T, %T: want new files", in, out)
	}
	if !nonblocking(t, inFD) || !nonblocking(t, outFD) {
		t.Error("the pipes are still in blocking mode")
	}
	// A request through them is served.
	s := &Server{Root: testRoot(t, nil), Hello: proto.Hello{PID: 7}}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), in, out) }()
	if _, err := inW.WriteString(`{"id":1,"op":"ping"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp proto.Response
	if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.ID != 1 || resp.Hello == nil || resp.Hello.PID != 7 {
		t.Fatalf("ping through the pollable pipes: %q (%v)", line, err)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	release()
	if nonblocking(t, inFD) || nonblocking(t, outFD) {
		t.Error("release left the pipes in non-blocking mode")
	}
	// The originals are still open: release closed only its duplicates.
	if _, err := unix.FcntlInt(inFD, unix.F_GETFD, 0); err != nil {
		t.Errorf("stdin was closed: %v", err)
	}
}

// A regular file (a test's input) cannot be polled: it is used as it is.
func TestPollableLeavesFiles(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	in, out, release := pollable(f, &buf)
	defer release()
	if in != io.Reader(f) || out != io.Writer(&buf) {
		t.Errorf("pollable(file, buffer) = %T, %T: want them unchanged", in, out)
	}
}

// Stdout that is also stderr stays blocking: the runtime writes a crash
// report there with plain writes.
func TestPollableKeepsStderrBlocking(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	saved, err := unix.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup2(int(w.Fd()), 2); err != nil {
		t.Fatal(err)
	}
	defer func() {
		unix.Dup2(saved, 2)
		unix.Close(saved)
	}()
	wFD := w.Fd() // blocking mode, as an inherited stdout is
	_, out, release := pollable(strings.NewReader(""), w)
	defer release()
	if out != io.Writer(w) || nonblocking(t, wFD) {
		t.Error("stdout shared with stderr was made non-blocking")
	}
}
