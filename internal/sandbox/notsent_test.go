package sandbox

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandbox/proto"
)

// fakeProc is a process that is already gone or never answers.
type fakeProc struct{ exited chan struct{} }

func (p *fakeProc) Kill()              {}
func (p *fakeProc) Wait() error        { <-p.exited; return errors.New("exited") }
func (p *fakeProc) StderrTail() string { return "" }
func (p *fakeProc) Cleanup() error     { return nil }

// A call that fails before its request left is marked as not sent (the
// Manager may hand it to a new worker); one that was sent never is.
func TestCallNotSent(t *testing.T) {
	t.Parallel()
	o := Options{StartTimeout: time.Second, RequestTimeout: time.Second}

	// The worker is gone before the call.
	gone := &fakeProc{exited: make(chan struct{})}
	close(gone.exited)
	_, pw := io.Pipe()
	w := newWorker(o, Settings{}, gone, pw, nil)
	<-w.Done()
	_, err := w.call(context.Background(), &proto.Request{Op: proto.OpPing}, time.Second)
	if !errors.Is(err, ErrWorkerGone) || !errors.Is(err, errNotSent) {
		t.Errorf("call on a dead worker: %v, want ErrWorkerGone and not sent", err)
	}

	// Its input is closed: not a byte left.
	live := &fakeProc{exited: make(chan struct{})}
	pr, pw := io.Pipe()
	pr.Close()
	w = newWorker(o, Settings{}, live, pw, nil)
	_, err = w.call(context.Background(), &proto.Request{Op: proto.OpPing}, time.Second)
	if !errors.Is(err, ErrWorkerGone) || !errors.Is(err, errNotSent) {
		t.Errorf("call with a closed input: %v, want ErrWorkerGone and not sent", err)
	}
	close(live.exited)

	// Sent, then the worker died: it may have run, so it is not "not sent".
	dying := &fakeProc{exited: make(chan struct{})}
	pr, pw = io.Pipe()
	w = newWorker(o, Settings{}, dying, pw, nil)
	go func() {
		buf := make([]byte, 4096)
		pr.Read(buf) // the request arrives
		close(dying.exited)
	}()
	_, err = w.call(context.Background(), &proto.Request{Op: proto.OpPing}, 5*time.Second)
	if !errors.Is(err, ErrWorkerGone) || errors.Is(err, errNotSent) {
		t.Errorf("call whose worker died after the send: %v, want ErrWorkerGone, not marked unsent", err)
	}
}
