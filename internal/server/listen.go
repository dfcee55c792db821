package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ListenOptions configure ListenAndServe. Addr is required.
type ListenOptions struct {
	// Addr is host:port to listen on (port 0 picks a free one).
	Addr string
	// CertFile and KeyFile serve TLS when both are set.
	CertFile, KeyFile string
	// Listening is told the scheme and the address once the server
	// listens (the address has the port when Addr asked for port 0).
	Listening func(scheme string, addr net.Addr)
	// Stopping is called when ctx ends, before the graceful shutdown.
	Stopping func()
	// OnShutdown runs once serving ends, gracefully or not: it releases
	// what the handler holds open (its event streams), so that the
	// shutdown does not wait for them.
	OnShutdown func()
	// ShutdownTimeout bounds the graceful shutdown; default 10 s, after
	// which connections still open are closed.
	ShutdownTimeout time.Duration
}

// ListenAndServe serves h on o.Addr until ctx ends, then shuts down
// gracefully: it stops listening, lets requests in flight finish (up to
// ShutdownTimeout) and returns nil. It returns the error when it cannot
// listen or serving fails. The server bounds what a slow or hostile client
// can hold: headers within 10 s, a request within 30 s, idle connections
// for 2 minutes, headers up to 16 KiB.
func ListenAndServe(ctx context.Context, h http.Handler, o ListenOptions) error {
	onShutdown := o.OnShutdown
	if onShutdown == nil {
		onShutdown = func() {}
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	tls := o.CertFile != "" || o.KeyFile != ""
	if tls && (o.CertFile == "" || o.KeyFile == "") {
		onShutdown()
		return errors.New("TLS needs both a certificate and a key file")
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		onShutdown()
		return fmt.Errorf("failed to listen on %s: %w", o.Addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	srv.RegisterOnShutdown(onShutdown)
	scheme := "http"
	if tls {
		scheme = "https"
	}
	if o.Listening != nil {
		o.Listening(scheme, ln.Addr())
	}
	errc := make(chan error, 1)
	go func() {
		if tls {
			errc <- srv.ServeTLS(ln, o.CertFile, o.KeyFile)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		onShutdown()
		return err
	case <-ctx.Done():
	}
	if o.Stopping != nil {
		o.Stopping()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if err != nil {
		srv.Close() // past the deadline: drop what is still open
	}
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// CheckAddr refuses to listen beyond loopback without TLS, unless the user
// said --insecure-public.
func CheckAddr(addr string, tls, insecurePublic bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if IsLoopback(host) || tls || insecurePublic {
		return nil
	}
	return fmt.Errorf("--addr %s is not a loopback address: supervisors' tokens would cross the network in clear; give --tls-cert and --tls-key, or --insecure-public if something else encrypts the traffic", addr)
}

// IsLoopback reports whether host names only this machine.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
