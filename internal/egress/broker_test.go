package egress

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/wardenhq/warden/internal/egress/policy"
	"github.com/wardenhq/warden/internal/testenv"
)

const (
	realToken = "ghp_REALsecretVALUE0123456789"
	realOther = "sk-other-REAL-4242"
)

func brokerFixture() fixture {
	f := baseFixture()
	f.allow = append(f.allow, "api.test", "other-api.test")
	f.names["api.test"] = lo
	f.names["other-api.test"] = lo
	f.secrets = []SecretSpec{{Env: "GITHUB_TOKEN", Hosts: []string{"api.test"}}, {Env: "OTHER_TOKEN", Hosts: []string{"Other-API.test."}}}
	f.env = map[string]string{"GITHUB_TOKEN": realToken, "OTHER_TOKEN": realOther}
	return f
}

func do(t *testing.T, c *http.Client, method, url string, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestBroker(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0", "api.test", "other-api.test", "allowed.test")
	plain := startOrigin(t, "tcp", "127.0.0.1:0")
	p := startProxy(t, brokerFixture())
	ph, _ := p.broker.Placeholder("GITHUB_TOKEN")
	port := strconv.Itoa(int(up.port()))
	pport := strconv.Itoa(int(plain.port()))
	c := p.client(p.addr)

	must(t, strings.HasPrefix(ph, PlaceholderPrefix) && !contains(strings.Join(p.broker.Env(), " "), realToken),
		"the jail's environment: %v", p.broker.Env())

	t.Run("the real value reaches the secret's host", func(t *testing.T) {
		code, body := do(t, c, "GET", "https://api.test:"+port+"/", "", "Authorization", "Bearer "+ph, "X-Token", ph)
		must(t, code == 200 && contains(body, "authorization=Bearer "+realToken) && contains(body, "x-token="+realToken) && !contains(body, ph),
			"got %d %q", code, body)
		ev := p.ev.next(t)
		must(t, ev.TLS == "terminated" && ev.Decision == "allow" && len(ev.Secrets) == 1 && ev.Secrets[0] == "GITHUB_TOKEN" && ev.BytesDown > 0,
			"event %+v", ev)
	})
	t.Run("inside Basic credentials, as git sends a token", func(t *testing.T) {
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph))
		code, body := do(t, c, "GET", "https://api.test:"+port+"/", "", "Authorization", basic)
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+realToken))
		must(t, code == 200 && contains(body, "authorization="+want), "got %d %q", code, body)
		p.ev.next(t)
	})
	t.Run("in a body to its own host it stays a placeholder", func(t *testing.T) {
		code, body := do(t, c, "POST", "https://api.test:"+port+"/", "token="+ph)
		must(t, code == 200 && contains(body, "body=token="+ph) && !contains(body, realToken), "got %d %q", code, body)
		p.ev.next(t)
	})
	t.Run("to another secret's host", func(t *testing.T) {
		code, body := do(t, c, "GET", "https://other-api.test:"+port+"/", "", "Authorization", "Bearer "+ph)
		must(t, code == 403 && contains(body, "placeholder of GITHUB_TOKEN") && !contains(body, "authorization="), "got %d %q", code, body)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Rule == "[[sandbox.egress.secrets]]", "event %+v", ev)
		p.ev.next(t) // the tunnel's own event
	})
	t.Run("in a body to another secret's host", func(t *testing.T) {
		big := strings.Repeat("x", 100<<10) + ph + "tail"
		code, body := do(t, c, "POST", "https://other-api.test:"+port+"/", big)
		must(t, code == 403 && contains(body, "request body"), "got %d %.200q", code, body)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && contains(ev.Reason, "GITHUB_TOKEN"), "event %+v", ev)
		p.ev.next(t)
	})
	t.Run("in clear text to its own host", func(t *testing.T) {
		p2 := startProxy(t, fixture{allow: []string{"api.test"}, names: StaticResolver{"api.test": lo},
			secrets: brokerFixture().secrets, env: brokerFixture().env})
		ph2, _ := p2.broker.Placeholder("GITHUB_TOKEN")
		code, body := do(t, p2.client(p2.addr), "GET", "http://api.test:"+pport+"/", "", "Authorization", "Bearer "+ph2)
		must(t, code == 403 && contains(body, "clear text"), "got %d %q", code, body)
		p2.ev.next(t)
	})
	t.Run("in clear text to another host", func(t *testing.T) {
		code, body := do(t, c, "GET", "http://allowed.test:"+pport+"/?q="+ph, "")
		must(t, code == 403 && contains(body, "not one of its hosts"), "got %d %q", code, body)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Host == "allowed.test", "event %+v", ev)
	})
	t.Run("in a clear-text body to another host", func(t *testing.T) {
		code, body := do(t, c, "POST", "http://allowed.test:"+pport+"/", strings.Repeat("a", 40000)+ph)
		must(t, code == 403 && contains(body, "request body"), "got %d %q", code, body)
		p.ev.next(t)
	})
	t.Run("in a plain-text tunnel", func(t *testing.T) {
		conn, _ := p.connect(t, "allowed.test:"+pport)
		defer conn.Close()
		io.WriteString(conn, "GET / HTTP/1.1\r\nHost: allowed.test:"+pport+"\r\nAuthorization: Bearer "+ph+"\r\n\r\n")
		b, _ := io.ReadAll(conn)
		must(t, strings.HasPrefix(string(b), "HTTP/1.1 403") && !contains(string(b), "authorization="), "answer %q", b)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && contains(ev.Reason, "GITHUB_TOKEN"), "event %+v", ev)
	})
	t.Run("inside TLS to another host it is not seen (and worthless)", func(t *testing.T) {
		code, body := do(t, c, "GET", "https://allowed.test:"+port+"/", "", "Authorization", "Bearer "+ph)
		must(t, code == 200 && contains(body, "authorization=Bearer "+ph), "got %d %q", code, body)
		ev := p.ev.next(t)
		must(t, ev.TLS == "sni" && len(ev.Secrets) == 0, "event %+v", ev)
	})
	t.Run("a brokered host takes TLS only", func(t *testing.T) {
		conn, _ := p.connect(t, "api.test:"+port)
		defer conn.Close()
		io.WriteString(conn, "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
		b, _ := io.ReadAll(conn)
		must(t, strings.HasPrefix(string(b), "HTTP/1.1 403") && contains(string(b), "only TLS"), "answer %q", b)
		p.ev.next(t)
	})
	t.Run("Host fronting inside terminated TLS", func(t *testing.T) {
		conn, _ := p.connect(t, "api.test:"+port)
		defer conn.Close()
		tc := tls.Client(conn, &tls.Config{ServerName: "api.test", RootCAs: p.roots})
		io.WriteString(tc, "GET / HTTP/1.1\r\nHost: evil.test\r\nAuthorization: Bearer "+ph+"\r\n\r\n")
		b, _ := io.ReadAll(tc)
		must(t, strings.HasPrefix(string(b), "HTTP/1.1 403") && !contains(string(b), realToken), "answer %q", b)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Rule == "Host header", "event %+v", ev)
		p.ev.next(t)
	})
	t.Run("only HTTP/1.1 is offered", func(t *testing.T) {
		conn, _ := p.connect(t, "api.test:"+port)
		defer conn.Close()
		tc := tls.Client(conn, &tls.Config{ServerName: "api.test", RootCAs: p.roots, NextProtos: []string{"h2", "http/1.1"}})
		must(t, tc.Handshake() == nil, "handshake")
		must(t, tc.ConnectionState().NegotiatedProtocol == "http/1.1", "ALPN %q", tc.ConnectionState().NegotiatedProtocol)
		tc.Close()
		p.ev.next(t)
	})
}

// The real server is verified as any client would: a certificate the
// system (here: the test roots) does not trust is a 502 naming why, and
// the secret is never sent.
func TestBrokerVerifiesServer(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0", "not-api.test") // wrong name
	p := startProxy(t, brokerFixture())
	ph, _ := p.broker.Placeholder("GITHUB_TOKEN")
	code, body := do(t, p.client(p.addr), "GET", "https://api.test:"+strconv.Itoa(int(up.port()))+"/", "", "Authorization", "Bearer "+ph)
	must(t, code == 502 && contains(body, "verify the TLS certificate") && contains(body, "api.test"), "got %d %q", code, body)
	ev := p.ev.next(t)
	must(t, ev.TLS == "terminated" && contains(ev.Reason, "certificate"), "event %+v", ev)
}

func TestBrokerState(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "egress", "ws")
	env := func(k string) (string, bool) { return map[string]string{"A": "aaa", "B": "bbb"}[k], true }
	specs := []SecretSpec{{Env: "A", Hosts: []string{"a.test"}}}
	b1, err := NewBroker(BrokerOptions{Dir: dir, Secrets: specs, Getenv: env})
	must(t, err == nil, "%v", err)
	for name, mode := range map[string]os.FileMode{"": 0o700, caKeyFile: 0o600, "placeholder.seed": 0o600, caCertFile: 0o644} {
		st, err := os.Stat(filepath.Join(dir, name))
		must(t, err == nil && st.Mode().Perm() == mode, "%s: %v %v", name, st.Mode(), err)
	}
	b2, err := NewBroker(BrokerOptions{Dir: dir, Secrets: specs, Getenv: env})
	must(t, err == nil, "%v", err)
	ph1, _ := b1.Placeholder("A")
	ph2, _ := b2.Placeholder("A")
	must(t, ph1 == ph2 && bytes.Equal(b1.CACertPEM(), b2.CACertPEM()), "state not kept across restarts")

	other, _ := NewBroker(BrokerOptions{Dir: filepath.Join(t.TempDir(), "x"), Secrets: specs, Getenv: env})
	pho, _ := other.Placeholder("A")
	must(t, pho != ph1, "two workspaces share a placeholder")

	// A new host means a new CA, name-constrained to the new set.
	b3, err := NewBroker(BrokerOptions{Dir: dir, Secrets: append(specs, SecretSpec{Env: "B", Hosts: []string{"b.test"}}), Getenv: env})
	must(t, err == nil, "%v", err)
	must(t, !bytes.Equal(b3.CACertPEM(), b1.CACertPEM()), "the CA was not renewed for a new host")

	// A key others can read is not used.
	os.Chmod(filepath.Join(dir, caKeyFile), 0o644)
	b4, err := NewBroker(BrokerOptions{Dir: dir, Secrets: specs, Getenv: env})
	must(t, err == nil && !bytes.Equal(b4.CACertPEM(), b3.CACertPEM()), "a readable key was reused: %v", err)

	for _, bad := range []struct {
		spec SecretSpec
		env  map[string]string
		want string
	}{
		{SecretSpec{Env: "UNSET", Hosts: []string{"a.test"}}, nil, "not set"},
		{SecretSpec{Env: "A", Hosts: []string{"a.test"}}, map[string]string{"A": "x\r\nEvil: 1"}, "control bytes"},
		{SecretSpec{Env: "A", Hosts: []string{"10.0.0.1"}}, map[string]string{"A": "x"}, "host name"},
		{SecretSpec{Env: "A", Hosts: nil}, map[string]string{"A": "x"}, "no hosts"},
	} {
		_, err := NewBroker(BrokerOptions{Dir: t.TempDir(), Secrets: []SecretSpec{bad.spec},
			Getenv: func(k string) (string, bool) { v, ok := bad.env[k]; return v, ok }})
		must(t, err != nil && contains(err.Error(), bad.want), "NewBroker(%+v) = %v; want %q", bad.spec, err, bad.want)
	}
}

// The CA vouches for its secrets' hosts only: a certificate it signed for
// any other name (or an address) fails verification in Go and in OpenSSL.
func TestBrokerCAIsNameConstrained(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := NewBroker(BrokerOptions{Dir: dir, Secrets: []SecretSpec{{Env: "A", Hosts: []string{"a.test"}}},
		Getenv: func(string) (string, bool) { return "v", true }})
	must(t, err == nil, "%v", err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(b.CACertPEM())
	for _, c := range []struct {
		name string
		ok   bool
	}{{"a.test", true}, {"sub.a.test", true}, {"evil.test", false}, {"aa.test", false}} {
		leaf, err := b.ca.leaf(c.name)
		must(t, err == nil, "%v", err)
		_, err = leaf.Leaf.Verify(x509.VerifyOptions{DNSName: c.name, Roots: roots})
		must(t, (err == nil) == c.ok, "Go verify %s: %v", c.name, err)

		if path := testenv.Look("openssl"); path != "" {
			leafPEM := filepath.Join(dir, c.name+".pem")
			os.WriteFile(leafPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Leaf.Raw}), 0o600)
			out, err := exec.Command(path, "verify", "-CAfile", filepath.Join(dir, caCertFile), "-verify_hostname", c.name, leafPEM).CombinedOutput()
			must(t, (err == nil) == c.ok, "openssl verify %s: %v %s", c.name, err, out)
		}
	}
}

// scanReader finds a placeholder wherever reads split it, and never lets
// its last byte through.
func TestScanBody(t *testing.T) {
	t.Parallel()
	b := &Broker{secrets: []*secret{{env: "A", placeholder: PlaceholderPrefix + "0123456789abcdef0123456789abcdef", hosts: []string{"a.test"}}}}
	ph := b.secrets[0].placeholder
	h := policy.Host{Name: "other.test"}
	for _, body := range []string{ph, "x" + ph, strings.Repeat("y", 32<<10-5) + ph + "z", strings.Repeat("q", 70000) + ph} {
		for _, wrap := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader, iotest.HalfReader} {
			r := b.scanBody(io.NopCloser(wrap(strings.NewReader(body))), h, false)
			got, err := io.ReadAll(r)
			must(t, err != nil && contains(err.Error(), "placeholder of A"), "no error for a body with the placeholder at %d", strings.Index(body, ph))
			must(t, !strings.Contains(string(got), ph) && len(got) < strings.Index(body, ph)+len(ph), "the placeholder went through")
		}
	}
	clean := strings.Repeat("warden-placeholder-", 5000)
	got, err := io.ReadAll(b.scanBody(io.NopCloser(iotest.HalfReader(strings.NewReader(clean))), h, false))
	must(t, err == nil && string(got) == clean, "a clean body changed: %v", err)
	// To its own host over terminated TLS, a body may hold it.
	r := b.scanBody(io.NopCloser(strings.NewReader(ph)), policy.Host{Name: "a.test"}, true)
	got, err = io.ReadAll(r)
	must(t, err == nil && string(got) == ph, "own host: %v", err)
}

var (
	_ = netip.Addr{}
	_ = time.Second
)
