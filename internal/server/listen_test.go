package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A request in flight when ctx ends still gets its answer; then the server
// stops listening and ListenAndServe returns nil, having run OnShutdown.
func TestListenAndServeGraceful(t *testing.T) {
	t.Parallel()
	inside, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inside)
		<-release
		io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan net.Addr, 1)
	var shut, stopping atomic.Int64
	errc := make(chan error, 1)
	go func() {
		errc <- ListenAndServe(ctx, h, ListenOptions{Addr: "127.0.0.1:0",
			Listening:  func(scheme string, a net.Addr) { addrc <- a },
			Stopping:   func() { stopping.Add(1) },
			OnShutdown: func() { shut.Add(1) }})
	}()
	addr := (<-addrc).String()
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			body <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body <- string(b)
	}()
	<-inside
	cancel()
	// The server stops listening before the request in flight ends.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections after ctx ended")
		}
	}
	close(release)
	if b := <-body; b != "done" {
		t.Errorf("request in flight got %q", b)
	}
	if err := <-errc; err != nil {
		t.Errorf("ListenAndServe: %v", err)
	}
	if shut.Load() != 1 || stopping.Load() != 1 {
		t.Errorf("OnShutdown ran %d times, Stopping %d; want 1 and 1", shut.Load(), stopping.Load())
	}
}

// A request that outlives ShutdownTimeout is cut off: the shutdown ends on
// time with the deadline's error.
func TestListenAndServeShutdownTimeout(t *testing.T) {
	t.Parallel()
	inside := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inside)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- ListenAndServe(ctx, h, ListenOptions{Addr: "127.0.0.1:0", ShutdownTimeout: 100 * time.Millisecond,
			Listening: func(_ string, a net.Addr) { addrc <- a }})
	}()
	go http.Get("http://" + (<-addrc).String() + "/")
	<-inside
	start := time.Now()
	cancel()
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err %v, want the shutdown deadline", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("shutdown took %s", el)
	}
}

func TestListenAndServeErrors(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var shut atomic.Int64
	for _, c := range []struct {
		o    ListenOptions
		want string
	}{
		{ListenOptions{Addr: ln.Addr().String()}, "failed to listen on " + ln.Addr().String()},
		{ListenOptions{Addr: "127.0.0.1:0", CertFile: "cert.pem"}, "both a certificate and a key"},
		{ListenOptions{Addr: "127.0.0.1:0", CertFile: "/nonexistent/cert.pem", KeyFile: "/nonexistent/key.pem"}, "/nonexistent/cert.pem"},
	} {
		c.o.OnShutdown = func() { shut.Add(1) }
		err := ListenAndServe(t.Context(), http.NotFoundHandler(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if shut.Load() != 3 {
		t.Errorf("OnShutdown ran %d times for 3 failures", shut.Load())
	}
}
