package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/config"
)

// httpEnv returns an Env whose config allows allow and has the given
// limits (0: defaults).
func httpEnv(allow []string, timeoutSecs int, maxBody int64) *Env {
	cfg := config.Default()
	cfg.Security.HTTP.AllowHosts = allow
	if timeoutSecs > 0 {
		cfg.Security.HTTP.TimeoutSecs = timeoutSecs
	}
	if maxBody > 0 {
		cfg.Security.HTTP.MaxBodyBytes = maxBody
	}
	return &Env{Config: cfg}
}

// runHTTPDirect runs http_request without its Guard, to show that the
// connect-time check holds on its own.
func runHTTPDirect(t *testing.T, env *Env, args map[string]any) (string, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	return HTTPRequest().Run(context.Background(), env, b)
}

func testServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "got %s %s x-test=%q cookie=%q", r.Method, body, r.Header.Get("X-Test"), r.Header.Get("Cookie"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, strings.Repeat("é", 500))
	})
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0x89, 'P', 'N', 'G', 0, 1, 2})
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/cookie", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s3cret"})
		http.Redirect(w, r, "/echo", http.StatusFound)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/hops/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/hops/"), "%d", &n)
		if n == 0 {
			io.WriteString(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPLoopbackRefusedByDefault(t *testing.T) {
	t.Parallel()
	srv := testServer(t)
	env := httpEnv(nil, 0, 0)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	want := "http_request refused: 127.0.0.1 is a loopback address; add it to security.http.allow_hosts to allow it"
	if _, err := runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/echo"}); err == nil || err.Error() != want {
		t.Errorf("through the guard: err = %v, want %q", err, want)
	}
	if _, err := runHTTPDirect(t, env, map[string]any{"url": srv.URL + "/echo"}); err == nil || err.Error() != want {
		t.Errorf("at connect time: err = %v, want %q", err, want)
	}
	// A name that resolves to loopback passes the argument check and is
	// refused on the dialled address: the DNS-rebinding case.
	for _, host := range []string{"localhost", "LocalHost", "[::ffff:127.0.0.1]", "[::1]", "[0:0:0:0:0:ffff:7f00:1]"} {
		_, err := runHTTPDirect(t, env, map[string]any{"url": "http://" + host + ":" + port + "/echo"})
		if err == nil || !strings.HasPrefix(err.Error(), "http_request refused: ") || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: err = %v, want a loopback refusal", host, err)
		}
	}
}

func TestHTTPURLRefusals(t *testing.T) {
	t.Parallel()
	env := httpEnv(nil, 0, 0)
	for _, tc := range []struct{ url, want string }{
		{"http://2130706433/", "not a canonical IP address"},
		{"http://0177.0.0.1/", "not a canonical IP address"},
		{"http://0x7f.0.0.1/", "not a canonical IP address"},
		{"http://0x7f000001/", "not a canonical IP address"},
		{"http://127.1/", "not a canonical IP address"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://[fd00:ec2::254]/", "cloud metadata"},
		{"http://metadata.google.internal/computeMetadata/v1/", "cloud metadata service"},
		{"http://10.0.0.1/", "private"},
		{"http://[fe80::1%25eth0]/", "link-local"},
		{"http://100.64.1.1/", "carrier-grade NAT"},
		{"http://0.0.0.0:8080/", "unspecified"},
		{"http://[64:ff9b::7f00:1]/", "NAT64"},
		{"file:///etc/passwd", "only http:// and https://"},
		{"ftp://example.com/", "only http:// and https://"},
		{"gopher://127.0.0.1/", "only http:// and https://"},
		{"http:///nohost", "has no host"},
		{"http:opaque", "has no host"},
		{"://bad", "not a valid URL"},
	} {
		for name, run := range map[string]func() (string, error){
			"guard":  func() (string, error) { return runTool(t, HTTPRequest(), env, map[string]any{"url": tc.url}) },
			"direct": func() (string, error) { return runHTTPDirect(t, env, map[string]any{"url": tc.url}) },
		} {
			if _, err := run(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: err = %v, want it to mention %q", name, tc.url, err, tc.want)
			}
		}
	}
	if _, err := runTool(t, HTTPRequest(), env, map[string]any{"url": "http://example.com/", "proxy": "x"}); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("extra field: err = %v", err)
	}
	if _, err := runTool(t, HTTPRequest(), env, map[string]any{"url": "http://example.com/", "method": "TRACE"}); err == nil || !strings.Contains(err.Error(), "not one of") {
		t.Errorf("TRACE: err = %v", err)
	}
	if _, err := runTool(t, HTTPRequest(), httpEnv([]string{"not a host"}, 0, 0), map[string]any{"url": "http://example.com/"}); err == nil || !strings.Contains(err.Error(), "allow_hosts") {
		t.Errorf("bad allowlist: err = %v", err)
	}
}

func TestHTTPAllowlisted(t *testing.T) {
	t.Parallel()
	srv := testServer(t)
	env := httpEnv([]string{"127.0.0.1"}, 5, 100)
	got, err := runTool(t, HTTPRequest(), env, map[string]any{
		"url": srv.URL + "/echo", "method": "POST", "body": "hello", "headers": map[string]string{"X-Test": "yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HTTP/1.1 200 OK\n", "X-Method: POST\n", "Content-Type: text/plain\n", "\n\ngot POST hello x-test=\"yes\" cookie=\"\"\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("response %q lacks %q", got, want)
		}
	}
	got, err = runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/big"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got, "\n\n"+strings.Repeat("é", 50)+"\n[body cut: first 100 bytes shown of 1000 (security.http.max_body_bytes)]\n") {
		t.Errorf("size cap: got %q", got)
	}
	got, err = runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/binary"})
	if err != nil || !strings.Contains(got, "[binary body of 7 bytes (application/octet-stream) not shown]") {
		t.Errorf("binary: got %q, %v", got, err)
	}
	got, err = runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/echo", "method": "HEAD"})
	if err != nil || !strings.HasSuffix(got, "X-Method: HEAD\n\n") {
		t.Errorf("HEAD: got %q, %v", got, err)
	}
	// No cookie jar: the cookie set before the redirect is not sent after it.
	got, err = runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/cookie"})
	if err != nil || !strings.Contains(got, `cookie=""`) || !strings.HasPrefix(got, "[redirected to "+srv.URL+"/echo]\n") {
		t.Errorf("cookie: got %q, %v", got, err)
	}
	// Exactly 5 redirects are followed, a sixth is refused.
	if got, err := runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/hops/5"}); err != nil || !strings.Contains(got, "arrived") {
		t.Errorf("5 redirects: got %q, %v", got, err)
	}
	if _, err := runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/hops/6"}); err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Errorf("6 redirects: err = %v", err)
	}
	// The allowlisted name "localhost" lets its resolution through.
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	if got, err := runTool(t, HTTPRequest(), httpEnv([]string{"localhost"}, 5, 0), map[string]any{"url": "http://localhost:" + port + "/echo"}); err != nil || !strings.Contains(got, "200 OK") {
		t.Errorf("allowlisted name: got %q, %v", got, err)
	}
}

// TestHTTPRedirectRechecked: a permitted server redirecting to a forbidden
// address (or scheme) is refused at the redirect.
func TestHTTPRedirectRechecked(t *testing.T) {
	t.Parallel()
	srv := testServer(t)
	env := httpEnv([]string{"127.0.0.1"}, 5, 0)
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	for _, tc := range []struct{ to, want string }{
		{"http://127.0.0.2:" + port + "/echo", "127.0.0.2 is a loopback address"},
		{"http://[::ffff:127.0.0.2]:" + port + "/", "127.0.0.2, a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"http://2130706434/", "not a canonical IP address"},
		{"file:///etc/passwd", "only http:// and https://"},
	} {
		_, err := runTool(t, HTTPRequest(), env, map[string]any{"url": srv.URL + "/redirect?to=" + tc.to})
		if err == nil || !strings.HasPrefix(err.Error(), "http_request refused: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("redirect to %s: err = %v, want a refusal mentioning %q", tc.to, err, tc.want)
		}
	}
}

func TestHTTPTimeout(t *testing.T) {
	t.Parallel()
	srv := testServer(t)
	start := time.Now()
	_, err := runTool(t, HTTPRequest(), httpEnv([]string{"127.0.0.1"}, 1, 0), map[string]any{"url": srv.URL + "/slow"})
	if err == nil || !strings.Contains(err.Error(), "within 1s") {
		t.Errorf("err = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("timeout took %v", d)
	}
}

// TestHTTPIgnoresProxyEnv: a proxy from the environment would dial on the
// tool's behalf, unchecked; it is never used.
func TestHTTPIgnoresProxyEnv(t *testing.T) {
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "via proxy")
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	srv := testServer(t)
	got, err := runTool(t, HTTPRequest(), httpEnv([]string{"127.0.0.1"}, 5, 0), map[string]any{"url": srv.URL + "/echo"})
	if err != nil || strings.Contains(got, "via proxy") || proxied.Load() != 0 {
		t.Errorf("got %q, %v; proxy used %d times", got, err, proxied.Load())
	}
}

func TestToolContracts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool      *Tool
		group     string
		sensitive bool
		required  []string
	}{
		{ListFiles(), GroupFSRead, false, nil},
		{SearchCode(), GroupFSRead, false, []string{"pattern"}},
		{Grep(), GroupFSRead, false, []string{"pattern"}},
		{FindFiles(), GroupFSRead, false, []string{"pattern"}},
		{HTTPRequest(), GroupNetwork, true, []string{"url"}},
	} {
		tl := tc.tool
		if tl.Group != tc.group || tl.Sensitive != tc.sensitive || tl.Annotations.ReadOnly == tc.sensitive {
			t.Errorf("%s: group %q sensitive %v readOnly %v", tl.Name, tl.Group, tl.Sensitive, tl.Annotations.ReadOnly)
		}
		b, err := json.Marshal(tl.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"additionalProperties":false`) {
			t.Errorf("%s: schema does not refuse extra fields: %s", tl.Name, b)
		}
		if fmt.Sprint(tl.Schema.Required) != fmt.Sprint(tc.required) {
			t.Errorf("%s: required %v, want %v", tl.Name, tl.Schema.Required, tc.required)
		}
		resolved, err := tl.Schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		if err := resolved.Validate(map[string]any{"pattern": "x", "url": "http://e.com", "extra": 1}); err == nil {
			t.Errorf("%s: schema accepted an extra field", tl.Name)
		}
	}
}
