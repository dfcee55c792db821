package egress

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wardenhq/warden/internal/egress/policy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testCA issues certificates for the origin test servers, which the
// server verifies through Options.UpstreamRoots.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var (
	caOnce sync.Once
	theCA  *testCA
)

func originCA(t testing.TB) *testCA {
	caOnce.Do(func() {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test origin CA"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		cert, _ := x509.ParseCertificate(der)
		pool := x509.NewCertPool()
		pool.AddCert(cert)
		theCA = &testCA{cert: cert, key: key, pool: pool}
	})
	return theCA
}

func (ca *testCA) leaf(names ...string) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// echoHandler answers with what it received, so tests can see exactly
// what reached the server.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/redirect" {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		return
	}
	if r.URL.Path == "/slow" {
		time.Sleep(300 * time.Millisecond)
	}
	if r.URL.Path == "/big" {
		w.Header().Set("Content-Type", "application/octet-stream")
		chunk := make([]byte, 64<<10)
		for range 16 {
			w.Write(chunk)
		}
		return
	}
	fmt.Fprintf(w, "host=%s\nauthorization=%s\nx-token=%s\nuser-agent=%s\nbody=%s\n",
		r.Host, r.Header.Get("Authorization"), r.Header.Get("X-Token"), r.Header.Get("User-Agent"), body)
}

// origin is a real HTTP or HTTPS server on loopback.
type origin struct {
	addr netip.AddrPort
	srv  *http.Server
	l    net.Listener
}

func startOrigin(t testing.TB, network, addr string, tlsNames ...string) *origin {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	u := &origin{addr: l.Addr().(*net.TCPAddr).AddrPort(), l: l,
		srv: &http.Server{Handler: http.HandlerFunc(echoHandler), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: log.New(io.Discard, "", 0)}}
	if len(tlsNames) > 0 {
		c := originCA(t).leaf(tlsNames...)
		u.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{c}, NextProtos: []string{"http/1.1"}}
		l = tls.NewListener(l, u.srv.TLSConfig)
	}
	go u.srv.Serve(l)
	t.Cleanup(func() { u.srv.Close() })
	return u
}

func (u *origin) port() uint16 { return u.addr.Port() }

// events collects audit events.
type events struct {
	mu   sync.Mutex
	list []Event
	ch   chan Event
}

func newEvents() *events { return &events{ch: make(chan Event, 1000)} }

func (e *events) EgressEvent(ev Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
	select {
	case e.ch <- ev:
	default: // a benchmark's thousands of events: the list keeps them
	}
}

// next waits for the next event.
func (e *events) next(t testing.TB) Event {
	t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no audit event")
		return Event{}
	}
}

// proxy is a running Server with its listeners.
type proxy struct {
	s      *Server
	addr   string // TCP: HTTP and SOCKS5
	socket string // the relay's unix socket
	ev     *events
	roots  *x509.CertPool // origin CA (+ the broker's CA, when there is one)
	broker *Broker
}

type fixture struct {
	allow, deny []string
	unknown     string
	names       StaticResolver
	asker       Asker
	secrets     []SecretSpec
	env         map[string]string
	opts        func(*Options)
}

func startProxy(t testing.TB, f fixture) *proxy {
	t.Helper()
	pol, err := policy.New(f.allow, f.deny, f.unknown)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ev: newEvents(), roots: originCA(t).pool.Clone()}
	opts := &Options{Policy: pol, Resolver: f.names, Asker: f.asker, Auditor: p.ev, Workspace: "/ws",
		UpstreamRoots: originCA(t).pool, AskTimeout: 5 * time.Second}
	if len(f.secrets) > 0 {
		b, err := NewBroker(BrokerOptions{Dir: filepath.Join(t.TempDir(), "state"), Secrets: f.secrets,
			Getenv: func(k string) (string, bool) { v, ok := f.env[k]; return v, ok }})
		if err != nil {
			t.Fatal(err)
		}
		opts.Broker, p.broker = b, b
		p.roots.AppendCertsFromPEM(b.CACertPEM())
	}
	if f.opts != nil {
		f.opts(opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	p.s = s
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = l.Addr().String()
	p.socket = filepath.Join(shortTempDir(t), "egress.sock")
	ul, err := net.Listen("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(l)
	go s.ServeRelay(ul)
	t.Cleanup(func() { s.Close() })
	return p
}

// shortTempDir is a directory whose path fits in a unix socket address.
func shortTempDir(t testing.TB) string {
	d, err := os.MkdirTemp("/tmp", "egr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// client is an HTTP client using the proxy for http and https, trusting
// the origin CA and (when set) the broker's CA.
func (p *proxy) client(proxyAddr string) *http.Client {
	u, _ := url.Parse("http://" + proxyAddr)
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: p.roots},
			DisableKeepAlives: true, ForceAttemptHTTP2: false},
		Timeout: 15 * time.Second,
	}
}

// raw sends bytes to the proxy and returns all it answers until it closes.
func (p *proxy) raw(t testing.TB, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, req)
	b, _ := io.ReadAll(c)
	return string(b)
}

// connect opens a CONNECT tunnel and returns the connection after the 200,
// or the status line and body of a refusal.
func (p *proxy) connect(t testing.TB, target string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, "error: " + err.Error()
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		return nil, resp.Status + " " + string(b)
	}
	return &bufConn{Conn: c, r: br}, ""
}

func get(t testing.TB, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func must(t testing.TB, cond bool, format string, a ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, a...)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

var _ = context.Background

// bufConn reads through the reader that read the CONNECT answer (a
// server-first protocol's bytes may already be in it).
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// lateHandler is a handler set after its server has started (a registry
// needs its own URL for its links).
type lateHandler struct {
	mu sync.Mutex
	h  http.Handler
}

func (l *lateHandler) set(h http.Handler) { l.mu.Lock(); l.h = h; l.mu.Unlock() }

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	h := l.h
	l.mu.Unlock()
	h.ServeHTTP(w, r)
}
