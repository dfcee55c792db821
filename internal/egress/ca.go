package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// authority is a workspace's CA: it signs the certificates warden shows
// the jail when it terminates TLS for a brokered secret. Its key never
// leaves warden's state directory (0600); the jail gets the certificate.
//
// The CA is name-constrained to the secrets' hosts (and to no IP address),
// so even a stolen key could not vouch for any other site to a verifier
// that honours constraints (OpenSSL, Go, NSS). When the hosts change, a new
// CA is made and the jail trusts the new one from its next start.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	now     func() time.Time

	leafKey *ecdsa.PrivateKey
	mu      sync.Mutex
	leaves  map[string]*tls.Certificate
}

const (
	caKeyFile  = "ca.key"
	caCertFile = "ca.pem"
	caLifetime = 365 * 24 * time.Hour
	// A CA this close to expiry is replaced at load.
	caRenewBefore = 30 * 24 * time.Hour
	leafLifetime  = 24 * time.Hour
)

func loadAuthority(dir string, hosts []string, now func() time.Time) (*authority, error) {
	if len(hosts) == 0 {
		return nil, errors.New("egress broker: no secret lists a host")
	}
	a, err := readAuthority(dir, hosts, now)
	if err != nil {
		if a, err = newAuthority(dir, hosts, now); err != nil {
			return nil, err
		}
	}
	a.leafKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress broker: generate a key: %w", err)
	}
	a.leaves = map[string]*tls.Certificate{}
	return a, nil
}

// readAuthority loads the CA on file; any reason not to use it (missing,
// unreadable, expiring, not covering every host, key and certificate not a
// pair) is an error, and a new CA is made.
func readAuthority(dir string, hosts []string, now func() time.Time) (*authority, error) {
	keyPath := filepath.Join(dir, caKeyFile)
	st, err := os.Stat(keyPath)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others", keyPath)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	cb, _ := pem.Decode(certPEM)
	if kb == nil || cb == nil {
		return nil, errors.New("not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an ECDSA key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("key and certificate differ")
	}
	if now().Add(caRenewBefore).After(cert.NotAfter) {
		return nil, errors.New("expiring")
	}
	for _, h := range hosts {
		if !slices.Contains(cert.PermittedDNSDomains, h) {
			return nil, errors.New("does not cover " + h)
		}
	}
	return &authority{cert: cert, key: key, certPEM: certPEM, now: now}, nil
}

func newAuthority(dir string, hosts []string, now func() time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress broker: generate the CA key: %w", err)
	}
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{Organization: []string{"warden"}, CommonName: "warden egress CA (" + filepath.Base(dir) + ")"},
		NotBefore:             t.Add(-time.Hour),
		NotAfter:              t.Add(caLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,

		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         slices.Clone(hosts),
		ExcludedIPRanges: []*net.IPNet{
			{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)},
		},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress broker: create the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := writeFileAtomic(filepath.Join(dir, caKeyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(dir, caCertFile), certPEM, 0o644); err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: certPEM, now: now}, nil
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1))
}

// leaf returns a certificate for host, signed by the CA (cached until an
// hour before it expires).
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if c, ok := a.leaves[host]; ok && now.Add(time.Hour).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	tmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("egress broker: sign a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey, Leaf: leaf}
	a.leaves[host] = c
	return c, nil
}

// serverConfig is what the jail's client sees when TLS is terminated:
// only HTTP/1.1 is offered in ALPN, since requests are read and rewritten
// as HTTP/1.1 (an h2 client falls back to it).
func (a *authority) serverConfig(host string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return a.leaf(host)
		},
	}
}
