package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

// originServer serves the API (and a stand-in MCP endpoint behind Guard)
// on network ("tcp4" or "tcp6") loopback, with policy.
func originServer(t *testing.T, network string, policy OriginPolicy) (srv *httptest.Server, port string) {
	t.Helper()
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.New(t.Context(), approval.Options{Store: st, Supervisors: []string{"alice"}, Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Broker: b, Tokens: map[string]string{aliceTok: "alice"}, Origins: policy})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp/", s.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "mcp ok") })))
	mux.Handle("/", s.Handler())
	addr := "127.0.0.1:0"
	if network == "tcp6" {
		addr = "[::1]:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s loopback here: %v", network, err)
	}
	srv = httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() { srv.Close(); s.Close(); st.Close() })
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return srv, port
}

// rawRequest sends a request exactly as written (lines joined with CRLF)
// and returns the status and body.
func rawRequest(t *testing.T, addr string, lines ...string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, strings.Join(lines, "\r\n")+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHostAndOrigin: every endpoint but /healthz answers only requests that
// name this server in Host and, when they carry an Origin, come from this
// server's own pages or an origin the user allowed.
func TestHostAndOrigin(t *testing.T) {
	t.Parallel()
	srv, port := originServer(t, "tcp4", OriginPolicy{Hosts: []string{"warden.example", "proxy.example:443"}, Origins: []string{"https://proxy.example"}})
	other := strconv.Itoa(mustAtoi(t, port) + 1)
	auth := "Authorization: Bearer " + aliceTok
	tests := []struct {
		name    string
		host    string   // "" sends no Host header
		headers []string // extra header lines
		want    int
		body    string // a piece of the 403 body
	}{
		// Host.
		{name: "loopback address", host: "127.0.0.1:" + port, want: 200},
		{name: "localhost", host: "localhost:" + port, want: 200},
		{name: "LOCALHOST", host: "LOCALHOST:" + port, want: 200},
		{name: "a name under .localhost", host: "warden.localhost:" + port, want: 200},
		{name: "evil host", host: "evil.example:" + port, want: 403, body: "is not a name this server answers to"},
		{name: "evil host without port", host: "evil.example", want: 403},
		{name: "loopback address as a subdomain", host: "127.0.0.1.evil.example:" + port, want: 403},
		{name: "localhost with a trailing dot", host: "localhost.:" + port, want: 403},
		{name: ".localhost alone", host: ".localhost:" + port, want: 403},
		{name: "localhost as a suffix", host: "evillocalhost:" + port, want: 403},
		{name: "IPv6 loopback on an IPv4 connection", host: "[::1]:" + port, want: 403},
		{name: "another loopback address", host: "127.0.0.2:" + port, want: 403},
		{name: "port mismatch", host: "127.0.0.1:" + other, want: 403},
		{name: "no port (80 implied)", host: "127.0.0.1", want: 403},
		{name: "bad port", host: "127.0.0.1:99999", want: 403},
		{name: "configured name, any port", host: "warden.example:1234", want: 200},
		{name: "configured name:port", host: "proxy.example:443", want: 200},
		{name: "configured name:port, another port", host: "proxy.example:8443", want: 403},
		{name: "configured name, no port", host: "proxy.example", want: 403},
		{name: "no Host (HTTP/1.0)", host: "", want: 403},
		// Origin.
		{name: "no Origin (a CLI)", host: "127.0.0.1:" + port, want: 200},
		{name: "own origin", host: "127.0.0.1:" + port, headers: []string{"Origin: http://127.0.0.1:" + port}, want: 200},
		{name: "own origin by localhost", host: "127.0.0.1:" + port, headers: []string{"Origin: http://localhost:" + port}, want: 200},
		{name: "origin on another port", host: "127.0.0.1:" + port, headers: []string{"Origin: http://127.0.0.1:" + other}, want: 403, body: "another port"},
		{name: "localhost on another port", host: "localhost:" + port, headers: []string{"Origin: http://localhost:" + other}, want: 403},
		{name: "https origin on a plain-http server", host: "127.0.0.1:" + port, headers: []string{"Origin: https://127.0.0.1:" + port}, want: 403},
		{name: "evil origin", host: "127.0.0.1:" + port, headers: []string{"Origin: http://evil.example"}, want: 403},
		{name: "evil origin with our port", host: "127.0.0.1:" + port, headers: []string{"Origin: http://evil.example:" + port}, want: 403},
		{name: "origin null", host: "127.0.0.1:" + port, headers: []string{"Origin: null"}, want: 403, body: "opaque origin"},
		{name: "origin null, cross-site", host: "127.0.0.1:" + port, headers: []string{"Origin: null", "Sec-Fetch-Site: cross-site"}, want: 403},
		{name: "origin null from the page's own form", host: "127.0.0.1:" + port, headers: []string{"Origin: null", "Sec-Fetch-Site: same-origin"}, want: 200},
		{name: "origin with a path", host: "127.0.0.1:" + port, headers: []string{"Origin: http://127.0.0.1:" + port + "/x"}, want: 403},
		{name: "two origins", host: "127.0.0.1:" + port, headers: []string{"Origin: http://127.0.0.1:" + port, "Origin: http://evil.example"}, want: 403},
		{name: "not an origin", host: "127.0.0.1:" + port, headers: []string{"Origin: javascript:alert(1)"}, want: 403},
		{name: "configured origin", host: "127.0.0.1:" + port, headers: []string{"Origin: https://proxy.example"}, want: 200},
		{name: "configured origin, explicit default port", host: "127.0.0.1:" + port, headers: []string{"Origin: https://PROXY.example:443"}, want: 200},
		{name: "configured origin, http", host: "127.0.0.1:" + port, headers: []string{"Origin: http://proxy.example"}, want: 403},
		{name: "a configured host's own origin", host: "warden.example:1234", headers: []string{"Origin: http://warden.example:1234"}, want: 200},
	}
	for _, tt := range tests {
		for _, path := range []string{"/api/approvals", "/mcp/ws", "/signin"} {
			t.Run(tt.name+path, func(t *testing.T) {
				t.Parallel()
				lines := []string{"GET " + path + " HTTP/1.1"}
				if tt.host == "" {
					lines[0] = "GET " + path + " HTTP/1.0"
				} else {
					lines = append(lines, "Host: "+tt.host)
				}
				lines = append(append(lines, auth, "Connection: close"), tt.headers...)
				code, body := rawRequest(t, srv.Listener.Addr().String(), lines...)
				if code != tt.want {
					t.Fatalf("%s: status %d, want %d; body %s", path, code, tt.want, body)
				}
				if tt.want == 403 {
					if !strings.Contains(body, "refused: ") || !strings.Contains(body, tt.body) {
						t.Errorf("403 body %q does not say why (want %q in it)", body, tt.body)
					}
					if strings.HasPrefix(path, "/api/") && !strings.HasPrefix(body, `{"error":`) {
						t.Errorf("an /api refusal is not JSON: %s", body)
					}
				}
			})
		}
	}
	// /healthz answers whatever the Host (load balancers call it by address).
	if code, _ := rawRequest(t, srv.Listener.Addr().String(), "GET /healthz HTTP/1.1", "Host: evil.example", "Connection: close"); code != 200 {
		t.Errorf("/healthz with another Host: %d", code)
	}
}

// TestHostIPv6 serves on [::1]: its own address in brackets is accepted,
// the IPv4 loopback address is another server's.
func TestHostIPv6(t *testing.T) {
	t.Parallel()
	srv, port := originServer(t, "tcp6", OriginPolicy{})
	for host, want := range map[string]int{
		"[::1]:" + port: 200, "localhost:" + port: 200, "127.0.0.1:" + port: 403, "[::1]": 403, "::1:" + port: 403,
	} {
		code, body := rawRequest(t, srv.Listener.Addr().String(), "GET /api/approvals HTTP/1.1", "Host: "+host,
			"Authorization: Bearer "+aliceTok, "Origin: http://[::1]:"+port, "Connection: close")
		if code != want {
			t.Errorf("Host %s: %d, want %d (%s)", host, code, want, body)
		}
	}
}

// TestOriginPolicyRefusesBadConfig: allowed hosts and origins are checked
// when the server is built.
func TestOriginPolicyRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, p := range []OriginPolicy{
		{Origins: []string{"proxy.example"}}, {Origins: []string{"https://proxy.example/path"}},
		{Origins: []string{"ftp://proxy.example"}}, {Origins: []string{"null"}},
		{Hosts: []string{"http://x"}}, {Hosts: []string{"x:0"}}, {Hosts: []string{""}},
	} {
		if _, err := newOriginGuard(p, nil); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// FuzzOriginCheck sends arbitrary Host and Origin values through the check
// of a server reached at 127.0.0.1:8080 that also answers warden.example.
// Nothing may panic, and what passes must be this server by an independent
// reading: the loopback address (any spelling of it), localhost or a name
// under .localhost, on port 8080; or the configured name.
func FuzzOriginCheck(f *testing.F) {
	for _, s := range [][2]string{
		{"127.0.0.1:8080", ""}, {"localhost:8080", "http://localhost:8080"}, {"evil.example:8080", ""},
		{"127.0.0.1.evil.example:8080", ""}, {"localhost.:8080", ""}, {"[::1]:8080", ""}, {"[::ffff:127.0.0.1]:8080", ""},
		{"127.0.0.1:8080", "null"}, {"127.0.0.1:8080", "http://127.0.0.1:8081"}, {"warden.example", "http://warden.example"},
		{"x.localhost:8080", "http://x.localhost:8080/"}, {"127.0.0.1:08080", ""}, {":8080", ""}, {"[]:8080", ""},
	} {
		f.Add(s[0], s[1])
	}
	g, err := newOriginGuard(OriginPolicy{Hosts: []string{"warden.example"}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest("GET", "/api/approvals", nil)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if g.check(r) != "" {
			return
		}
		for _, v := range []string{host, strings.TrimPrefix(strings.TrimPrefix(origin, "http://"), "https://")} {
			if v == "" || v == "null" && origin == "null" || v == host && v == "" {
				continue
			}
			if v != host && strings.HasPrefix(origin, "https://") {
				t.Fatalf("Host %q, Origin %q accepted: an https origin on a plain-http server", host, origin)
			}
			v = strings.TrimSuffix(v, ":80")
			if !thisServer(v) {
				t.Fatalf("Host %q, Origin %q accepted: %q is not this server", host, origin, v)
			}
		}
	})
}

// thisServer is the fuzz oracle: hostport names 127.0.0.1:8080 or the
// configured warden.example (any port).
func thisServer(hostport string) bool {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		h, p = hostport, "80"
	}
	h = strings.ToLower(h)
	if h == "warden.example" {
		return true
	}
	if n, err := strconv.Atoi(p); err != nil || n != 8080 {
		return false
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap() == netip.MustParseAddr("127.0.0.1")
	}
	return h == "localhost" || strings.HasSuffix(h, ".localhost") && h != ".localhost"
}
