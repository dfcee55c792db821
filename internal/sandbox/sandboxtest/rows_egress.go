package sandboxtest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/egress/egresstest"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/testenv"
)

// egressToken is the real value of the brokered secret of testEgress: it
// must reach api.test and nothing in the jail.
const egressToken = "ghp_egress_real_token_7d1f"

// egressEvents collects the audit events of a jail's gateway.
type egressEvents struct {
	mu  sync.Mutex
	evs []egress.Event
}

func (e *egressEvents) EgressEvent(ev egress.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

// find waits a little for an event about host with the decision.
func (e *egressEvents) find(host, decision string) (egress.Event, bool) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		e.mu.Lock()
		for _, ev := range e.evs {
			if ev.Host == host && ev.Decision == decision {
				e.mu.Unlock()
				return ev, true
			}
		}
		e.mu.Unlock()
	}
	return egress.Event{}, false
}

// tokenHandler says whether the brokered token arrived, without echoing a
// real token (an API would not either).
func tokenHandler(w http.ResponseWriter, r *http.Request) {
	switch got := r.Header.Get("Authorization"); got {
	case "Bearer " + egressToken:
		fmt.Fprint(w, "token ok")
	case "":
		fmt.Fprintf(w, "host=%s no token", r.Host)
	default:
		fmt.Fprintf(w, "token bad: %q", got)
	}
}

// testEgress: under network = "allowlist" the jail reaches exactly what
// [sandbox.egress] admits, through the proxy; every other way out (raw
// TCP, UDP, DNS, IPv6, a denied or unknown host, an address literal, a
// relayed CONNECT, the gateway's socket spoken to directly, a program that
// drops the proxy variables) is held, and audited where it reached the
// proxy; a brokered secret reaches its host and never the jail. The ssh
// backend refuses allowlist at start.
func testEgress(t *testing.T, f *Fixture) {
	if f.Name == jail.BackendSSH {
		sb := f.Sandbox()
		sb.NetworkMode = config.NetworkAllowlist
		dir := f.workspace(t, nil)
		w, err := sandbox.Start(t.Context(), f.options(dir, sb))
		if err == nil {
			w.Close()
			t.Fatal(`backend ssh started a jail under network = "allowlist"; it must refuse`)
		}
		if !errors.Is(err, jail.ErrBackendUnavailable) || !strings.Contains(err.Error(), "allowlist") {
			t.Errorf("the refusal does not name the limitation: %v", err)
		}
		return
	}
	ca := egresstest.TestCA()
	plain := egresstest.Serve(t, "127.0.0.1:0", http.HandlerFunc(tokenHandler))
	secure := egresstest.Serve(t, "127.0.0.1:0", http.HandlerFunc(tokenHandler), "api.test", "open.test")
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	names := egress.StaticResolver{
		"allowed.test": lo, "api.test": lo, "open.test": lo, "denied.test": lo, "unknown.test": lo,
		"git.test": lo, "goproxy.test": lo, "npm.test": lo,
		"meta.wild.test": {netip.MustParseAddr("169.254.169.254")},
		"priv.wild.test": {netip.MustParseAddr("10.1.2.3")},
	}
	sys := filepath.Join(t.TempDir(), "system.pem")
	egresstest.WriteFile(t, sys, ca.PEM())
	events := &egressEvents{}
	sb := f.Sandbox()
	sb.NetworkMode = config.NetworkAllowlist
	sb.Egress = config.Egress{
		Allow:   []string{"allowed.test", "api.test", "open.test", "*.wild.test", "git.test", "goproxy.test", "npm.test"},
		Deny:    []string{"denied.test"},
		Unknown: "deny",
		Secrets: []config.EgressSecret{{Env: "GH_TOKEN", Hosts: []string{"api.test", "git.test"}}},
	}
	tweak := func(o *sandbox.Options) {
		o.Egress = &sandbox.EgressOptions{Auditor: events, StateDir: t.TempDir(), Resolver: names, UpstreamRoots: ca.Pool,
			SystemBundle: sys, Getenv: func(k string) (string, bool) {
				if k == "GH_TOKEN" {
					return egressToken, true
				}
				return "", false
			}}
	}
	w, _ := f.start(t, sb, nil, tweak)
	pp, sp := strconv.Itoa(int(plain.Port())), strconv.Itoa(int(secure.Port()))

	// got, audited and out report to the subtest that runs them (tt).
	var tt *testing.T
	got := func(res string, want ...string) {
		tt.Helper()
		for _, w := range want {
			if !strings.Contains(res, w) {
				tt.Errorf("got %q, want it to hold %q", res, w)
			}
		}
	}
	audited := func(host, decision string) {
		tt.Helper()
		if _, ok := events.find(host, decision); !ok {
			tt.Errorf("no audit event %s for %s", decision, host)
		}
	}
	out := func(args ...string) string { return strings.TrimSpace(f.probe(tt, w, args...).Output) }
	sub := func(name string, fn func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			tt = t
			fn(t)
		})
	}

	sub("the jail holds the placeholder, never the secret", func(t *testing.T) {
		res := run(t, w, `echo "$GH_TOKEN"; env | grep -c `+egressToken+`; cat /proc/1/environ 2>/dev/null | tr '\0' '\n' | grep -c `+egressToken+`; true`)
		got(res.Output, egress.PlaceholderPrefix)
		if strings.Contains(res.Output, egressToken) {
			t.Errorf("the real token is in the jail: %q", res.Output)
		}
	})
	sub("an allowed host over http", func(t *testing.T) {
		got(out("http-get", "http://allowed.test:"+pp+"/"), "status 200", "host=allowed.test:"+pp)
		audited("allowed.test", "allow")
	})
	sub("an allowed host over https, its SNI checked", func(t *testing.T) {
		got(out("http-get", "https://open.test:"+sp+"/"), "status 200", "no token")
		audited("open.test", "allow")
	})
	sub("the brokered secret reaches its host", func(t *testing.T) {
		got(out("http-get", "https://api.test:"+sp+"/", "Authorization: Bearer ENV:GH_TOKEN"), "status 200: token ok")
		ev, ok := events.find("api.test", "allow")
		if !ok || ev.TLS != "terminated" || len(ev.Secrets) != 1 {
			t.Errorf("event %+v", ev)
		}
		// Where the host sees the jail's processes (a pids cgroup), the
		// event names the command that opened the connection.
		if w.Info().Cgroup != "" && !strings.Contains(ev.Command, probeArg+" http-get https://api.test") {
			t.Errorf("the event does not name the command: %q", ev.Command)
		}
	})
	sub("the placeholder to another host", func(t *testing.T) {
		got(out("http-get", "http://allowed.test:"+pp+"/", "X-Token: ENV:GH_TOKEN"), "status 403", "placeholder of GH_TOKEN")
		audited("allowed.test", "deny")
	})
	sub("a denied host", func(t *testing.T) {
		got(out("http-get", "http://denied.test:"+pp+"/"), "status 403", `deny "denied.test"`)
		audited("denied.test", "deny")
	})
	sub("an unknown host", func(t *testing.T) {
		got(out("http-get", "https://unknown.test:"+sp+"/"), "Forbidden") // Go shows a refused CONNECT so
		audited("unknown.test", "deny")
	})
	sub("a name that resolves to the metadata address", func(t *testing.T) {
		got(out("http-get", "http://meta.wild.test/latest/meta-data/"), "status 403", "metadata")
		audited("meta.wild.test", "deny")
	})
	sub("a name that resolves to a private address", func(t *testing.T) {
		got(out("http-get", "http://priv.wild.test/"), "status 403", "private")
	})
	sub("CONNECT to an address literal", func(t *testing.T) {
		got(out("proxy-connect", "127.0.0.1:"+sp), "403", "loopback")
		got(out("proxy-connect", "[::ffff:127.0.0.1]:"+sp), "403")
		got(out("proxy-connect", "169.254.169.254:80"), "403", "metadata")
		audited("127.0.0.1", "deny")
	})
	sub("CONNECT with a NUL in the name", func(t *testing.T) {
		got(out("proxy-connect", "hex:"+hex.EncodeToString([]byte("allowed.test\x00.evil.test:443"))), "400", "NUL")
		got(out("proxy-connect", "allowed.test%00.evil.test:443"), "400", "'%'")
	})
	sub("a relayed CONNECT inside a tunnel", func(t *testing.T) {
		got(out("tunnel-connect", "allowed.test:"+pp, "evil.test:443"), "403")
	})
	sub("raw TCP to the host's loopback", func(t *testing.T) {
		got(out("connect", "127.0.0.1:"+pp), "refused")
	})
	sub("raw TCP to a public address", func(t *testing.T) {
		got(out("connect", "93.184.216.34:80"), "refused")
	})
	sub("IPv6", func(t *testing.T) {
		got(out("connect", "[2606:4700:4700::1111]:443"), "refused")
		got(out("connect", "[::1]:"+pp), "refused")
	})
	sub("UDP to port 53", func(t *testing.T) {
		for _, addr := range []string{"8.8.8.8:53", "127.0.0.1:53", "127.0.0.53:53", "[2001:4860:4860::8888]:53"} {
			if res := out("udp", addr); !strings.HasPrefix(res, "refused") && !strings.HasPrefix(res, "no answer") {
				t.Errorf("UDP to %s: %q", addr, res)
			}
		}
	})
	sub("a DNS lookup", func(t *testing.T) {
		got(out("lookup", "example.com"), "no answer")
		if res := run(t, w, "command -v getent >/dev/null || exit 0; getent hosts example.com && echo RESOLVED || echo held"); strings.Contains(res.Output, "RESOLVED") {
			t.Errorf("getent resolved a name in the jail: %q", res.Output)
		}
	})
	sub("the gateway's socket spoken to directly", func(t *testing.T) {
		got(out("unix-bytes", egress.JailSocketPath), `answered ""`)
	})
	sub("a program that drops the proxy variables", func(t *testing.T) {
		res := f.probe(t, w, "http-get", "http://allowed.test:"+pp+"/")
		if !strings.Contains(res.Output, "status 200") {
			t.Fatalf("with the variables: %q", res.Output)
		}
		res = run(t, w, "env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY "+f.Probe+" "+probeArg+" http-get http://allowed.test:"+pp+"/")
		got(res.Output, "error")
	})
	sub("counted", func(t *testing.T) {
		e := w.Info().Egress
		if e == nil || e.Allowed == 0 || e.Denied == 0 {
			t.Errorf("Info().Egress = %+v", e)
		}
	})
	egressTools(t, w, names, pp, sp)
}

// egressTools runs the programs people run, where the jail has them: curl
// (the brokered secret over https), git over https with the token, go
// modules through GOPROXY, npm from a registry.
func egressTools(t *testing.T, w *sandbox.Worker, _ egress.StaticResolver, pp, sp string) {
	has := func(prog string) bool {
		return run(t, w, "command -v "+prog+" >/dev/null && echo yes").Output == "yes\n"
	}
	t.Run("curl", func(t *testing.T) {
		if !has("curl") {
			t.Skip("no curl in this jail")
		}
		res := run(t, w, `curl -sS -H "Authorization: Bearer $GH_TOKEN" https://api.test:`+sp+`/`)
		if !strings.Contains(res.Output, "token ok") {
			t.Errorf("curl with the brokered token: %q", res.Output)
		}
		res = run(t, w, `curl -sS http://denied.test:`+pp+`/`)
		if !strings.Contains(res.Output, "egress refused") {
			t.Errorf("curl to a denied host: %q", res.Output)
		}
	})
	t.Run("git", func(t *testing.T) {
		gitPath := testenv.Look("git")
		if gitPath == "" || !has("git") {
			t.Skip("no git here or in this jail")
		}
		// git fetches over https through a helper program (and libcurl);
		// an image with the git binary alone cannot.
		if run(t, w, `test -x "$(git --exec-path)/git-remote-https" && echo yes`).Output != "yes\n" {
			t.Skip("this jail's git has no https transport (git-remote-https)")
		}
		repos := egresstest.GitRepo(t, gitPath, "through the jail's proxy\n")
		srv := egresstest.Serve(t, "127.0.0.1:0", egresstest.GitHandler(gitPath, repos, egressToken), "git.test")
		res := run(t, w, `cd /tmp && git clone -q "https://x-access-token:$GH_TOKEN@git.test:`+strconv.Itoa(int(srv.Port()))+`/repo.git" r && cat r/README`)
		if !strings.Contains(res.Output, "through the jail's proxy") {
			t.Errorf("git clone: %d %q", res.ExitCode, res.Output)
		}
	})
	t.Run("go modules", func(t *testing.T) {
		if !has("/usr/local/go/bin/go") {
			t.Skip("no Go toolchain in this jail")
		}
		gp := egresstest.Serve(t, "127.0.0.1:0", egresstest.GoProxyHandler("hello from the jail's GOPROXY"), "goproxy.test")
		res := run(t, w, `cd /tmp && mkdir -p m && cd m && printf 'module m\n\ngo 1.21\n' > go.mod && `+
			`GOPROXY=https://goproxy.test:`+strconv.Itoa(int(gp.Port()))+` GOSUMDB=off GOFLAGS=-modcacherw GOTOOLCHAIN=local GOENV=off `+
			`GOPATH=/tmp/gopath GOCACHE=/tmp/gocache /usr/local/go/bin/go mod download `+egresstest.GoModule+`@`+egresstest.GoModuleVersion+
			` && cat /tmp/gopath/pkg/mod/`+egresstest.GoModule+`@`+egresstest.GoModuleVersion+`/hello.go`)
		if !strings.Contains(res.Output, "hello from the jail's GOPROXY") {
			t.Errorf("go mod download: %d %q", res.ExitCode, res.Output)
		}
	})
	t.Run("npm", func(t *testing.T) {
		if !has("npm") {
			t.Skip("no npm in this jail")
		}
		h := &lateHandler{}
		reg := egresstest.Serve(t, "127.0.0.1:0", h, "npm.test")
		base := "https://npm.test:" + strconv.Itoa(int(reg.Port()))
		h.set(egresstest.NPMRegistryHandler(base, "hello from the jail's registry"))
		res := run(t, w, `cd /tmp && mkdir -p p && cd p && echo '{"name":"p","version":"1.0.0"}' > package.json && `+
			`npm_config_registry=`+base+`/ npm_config_cache=/tmp/npmcache npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false `+
			`npm install --no-progress `+egresstest.NPMPackage+` >/dev/null && node -e "console.log(require('`+egresstest.NPMPackage+`'))"`)
		if !strings.Contains(res.Output, "hello from the jail's registry") {
			t.Errorf("npm install: %d %q", res.ExitCode, res.Output)
		}
	})
}

// lateHandler is a handler set after its server started (a registry needs
// its own URL for its links).
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
