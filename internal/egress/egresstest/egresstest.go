// Package egresstest gives the egress tests real servers to reach through
// the proxy, on loopback, under test host names: an HTTPS origin with a
// test CA, a git smart-HTTP server (git http-backend behind net/http/cgi),
// a Go module proxy and an npm registry. Real git, go and npm talk to them
// through the proxy, on the host and in a jail. Only tests import it; it
// does not import internal/egress.
package egresstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// CA issues the origins' certificates; clients (and the broker, through
// UpstreamRoots) trust it.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	Pool *x509.CertPool
}

var (
	caOnce sync.Once
	theCA  *CA
)

// TestCA is one CA for the whole test binary.
func TestCA() *CA {
	caOnce.Do(func() {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress test origin CA"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour), IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		cert, _ := x509.ParseCertificate(der)
		pool := x509.NewCertPool()
		pool.AddCert(cert)
		theCA = &CA{Cert: cert, key: key, Pool: pool}
	})
	return theCA
}

// PEM is the CA certificate in PEM.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Leaf issues a server certificate for names.
func (ca *CA) Leaf(names ...string) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Origin is a real server on loopback.
type Origin struct {
	Addr netip.AddrPort
	srv  *http.Server
}

// Port is the origin's port.
func (o *Origin) Port() uint16 { return o.Addr.Port() }

// Serve starts h on addr ("127.0.0.1:0"), over TLS for names when any are
// given (a certificate from TestCA), and stops it when t ends.
func Serve(t testing.TB, addr string, h http.Handler, names ...string) *Origin {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	o := &Origin{Addr: l.Addr().(*net.TCPAddr).AddrPort(),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}}
	if len(names) > 0 {
		o.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{TestCA().Leaf(names...)}, NextProtos: []string{"http/1.1"}}
		l = tls.NewListener(l, o.srv.TLSConfig)
	}
	go o.srv.Serve(l)
	t.Cleanup(func() { o.srv.Close() })
	return o
}

// WriteFile writes a file for a test, failing it on error.
func WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
