package jailworker

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Requests answered one after another run on a goroutine kept between
// them (a fresh goroutine each would start max of them); stop ends it.
func TestHandlersReuseGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t)
	const max = 32
	h := newHandlers(max)
	for range 100 {
		done := make(chan struct{})
		h.run(func() { close(done) })
		<-done
		// Time for the goroutine to get back to waiting for work; on a
		// loaded machine it may not, and the next request starts another.
		time.Sleep(2 * time.Millisecond)
	}
	if h.started > max/4 {
		t.Errorf("100 requests one after another started %d goroutines, want about 1", h.started)
	}
	h.stop()
}

// With max requests in flight no more goroutines start: the next request
// waits for one of them to end, as the server's slots make it.
func TestHandlersBoundedByMax(t *testing.T) {
	defer goleak.VerifyNone(t)
	const max = 3
	h := newHandlers(max)
	slots := make(chan struct{}, max)
	release := make(chan struct{})
	var ran sync.WaitGroup
	job := func() {
		defer func() { <-slots }()
		defer ran.Done()
		<-release
	}
	for range max {
		slots <- struct{}{}
		ran.Add(1)
		h.run(job)
	}
	if h.started != max {
		t.Fatalf("%d requests in flight started %d goroutines, want %d", max, h.started, max)
	}
	queued := make(chan struct{})
	go func() {
		slots <- struct{}{} // waits for a slot, as Serve does
		ran.Add(1)
		h.run(job)
		close(queued)
	}()
	close(release)
	<-queued
	ran.Wait()
	if h.started != max {
		t.Errorf("started %d goroutines, want %d", h.started, max)
	}
	h.stop()
}
