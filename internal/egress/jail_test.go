package egress

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestJailEnv(t *testing.T) {
	t.Parallel()
	env := JailEnv("")
	for _, want := range []string{"http_proxy=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
		"ALL_PROXY=socks5h://127.0.0.1:1080", "npm_config_https_proxy=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !slices.Contains(env, want) {
			t.Errorf("JailEnv lacks %s", want)
		}
	}
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SSL_CERT_FILE=") }) {
		t.Error("a CA variable without a broker")
	}
	env = JailEnv(JailBundlePath)
	for _, k := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"} {
		if !slices.Contains(env, k+"="+JailBundlePath) {
			t.Errorf("JailEnv lacks %s", k)
		}
	}
}

func TestBundle(t *testing.T) {
	t.Parallel()
	b, err := NewBroker(BrokerOptions{Dir: t.TempDir(), Secrets: []SecretSpec{{Env: "A", Hosts: []string{"a.test"}}},
		Getenv: func(string) (string, bool) { return "v", true }})
	if err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(t.TempDir(), "sys.pem")
	os.WriteFile(sys, []byte("-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----"), 0o644)
	got, err := b.Bundle(sys)
	if err != nil || !strings.HasPrefix(string(got), "-----BEGIN CERTIFICATE-----\nnot really") || !strings.HasSuffix(string(got), string(b.CACertPEM())) {
		t.Fatalf("bundle %q %v", got, err)
	}
	if _, err := os.Stat(SystemBundle); err == nil {
		got, err := b.Bundle(SystemBundle)
		pool := x509.NewCertPool()
		if err != nil || !pool.AppendCertsFromPEM(got) || strings.Count(string(got), "BEGIN CERTIFICATE") < 2 {
			t.Fatalf("system bundle + CA: %v", err)
		}
	}
	got, err = b.Bundle(filepath.Join(t.TempDir(), "missing"))
	if err != nil || !strings.HasSuffix(string(got), string(b.CACertPEM())) {
		t.Fatalf("missing system bundle: %v", err)
	}
}
