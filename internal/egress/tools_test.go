package egress

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/egress/egresstest"
	"github.com/wardenhq/warden/internal/egress/policy"
	"github.com/wardenhq/warden/internal/egress/relay"
	"github.com/wardenhq/warden/internal/testenv"
)

// toolsPath is a gateway and a relay, with the proxy variables a jail gets
// pointed at the relay, for real programs run on the host.
type toolsPath struct {
	g   *Gateway
	env []string
	ev  *events
}

func startToolsPath(t *testing.T, allow []string, names StaticResolver, secrets []SecretSpec, values map[string]string) *toolsPath {
	t.Helper()
	pol, err := policy.New(allow, []string{"denied.test"}, "deny")
	if err != nil {
		t.Fatal(err)
	}
	// The jail's bundle starts from the system's CAs; here the test CA is
	// the system's.
	sys := filepath.Join(t.TempDir(), "system.pem")
	egresstest.WriteFile(t, sys, egresstest.TestCA().PEM())
	ev := newEvents()
	g, err := StartGateway(GatewayOptions{
		Server:  Options{Policy: pol, Resolver: names, Auditor: ev, Workspace: "/ws", UpstreamRoots: egresstest.TestCA().Pool},
		Secrets: secrets, StateDir: t.TempDir(), RunDir: shortTempDir(t), SystemBundle: sys,
		Getenv: func(k string) (string, bool) { v, ok := values[k]; return v, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	r := &relay.Relay{Socket: g.Socket}
	t.Cleanup(func() { r.Close() })
	httpAddr, err := r.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	socksAddr, err := r.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bundle := g.BundleFile
	if bundle == "" {
		bundle = sys
	}
	home := t.TempDir()
	env := append([]string{"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + t.TempDir()},
		ProxyEnv(httpAddr.String(), socksAddr.String(), bundle)...)
	if g.Broker != nil {
		env = append(env, g.Broker.Env()...)
	}
	return &toolsPath{g: g, env: env, ev: ev}
}

func (p *toolsPath) run(t *testing.T, dir string, extra []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, p.env...), extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// git clones over https through the proxy: from a host whose token is
// brokered (the placeholder in the URL becomes Basic credentials, which
// warden swaps for the real token), and from a plain host (TLS carried,
// checked by SNI); a denied host is refused where git shows it.
func TestGitThroughProxy(t *testing.T) {
	t.Parallel()
	git := testenv.Need(t, "git")[0]
	const token = "ghp_real_token_0123456789"
	repos := egresstest.GitRepo(t, git, "hello through the proxy\n")
	brokered := egresstest.Serve(t, "127.0.0.1:0", egresstest.GitHandler(git, repos, token), "git.test")
	open := egresstest.Serve(t, "127.0.0.1:0", egresstest.GitHandler(git, repos, ""), "open.test")
	p := startToolsPath(t, []string{"git.test", "open.test"}, StaticResolver{"git.test": lo, "open.test": lo, "denied.test": lo},
		[]SecretSpec{{Env: "GIT_TOKEN", Hosts: []string{"git.test"}}}, map[string]string{"GIT_TOKEN": token})
	ph, _ := p.g.Broker.Placeholder("GIT_TOKEN")
	dir := t.TempDir()

	out, err := p.run(t, dir, nil, git, "clone", "-q", "https://x-access-token:"+ph+"@git.test:"+strconv.Itoa(int(brokered.Port()))+"/repo.git", "b")
	must(t, err == nil, "clone with the brokered token: %v\n%s", err, out)
	readme, _ := os.ReadFile(filepath.Join(dir, "b", "README"))
	must(t, string(readme) == "hello through the proxy\n", "README %q", readme)
	cfg, _ := os.ReadFile(filepath.Join(dir, "b", ".git", "config"))
	must(t, !strings.Contains(string(cfg), token), "the real token reached the clone's config")

	out, err = p.run(t, dir, nil, git, "clone", "-q", "https://open.test:"+strconv.Itoa(int(open.Port()))+"/repo.git", "o")
	must(t, err == nil, "clone from an allowed host: %v\n%s", err, out)

	out, err = p.run(t, dir, nil, git, "clone", "-q", "https://denied.test:"+strconv.Itoa(int(open.Port()))+"/repo.git", "d")
	must(t, err != nil && strings.Contains(out, "403"), "clone from a denied host: %v\n%s", err, out)

	// The placeholder sent to a host that is not its own is refused.
	basic := base64.StdEncoding.EncodeToString([]byte("x:" + ph))
	out, err = p.run(t, dir, []string{"GIT_TERMINAL_PROMPT=0"}, git, "-c", "http.extraHeader=Authorization: Basic "+basic,
		"clone", "-q", "https://open.test:"+strconv.Itoa(int(open.Port()))+"/repo.git", "leak")
	must(t, err == nil, "clone with the placeholder to an unbrokered host over TLS (not seen, worthless): %v\n%s", err, out)

	var sawSecret, sawDeny bool
	for {
		select {
		case e := <-p.ev.ch:
			sawSecret = sawSecret || (len(e.Secrets) == 1 && e.Secrets[0] == "GIT_TOKEN" && e.TLS == "terminated")
			sawDeny = sawDeny || (e.Host == "denied.test" && e.Decision == "deny")
			continue
		case <-time.After(time.Second):
		}
		break
	}
	must(t, sawSecret && sawDeny, "events: secret sent %v, denial %v", sawSecret, sawDeny)
}

// go fetches a module through GOPROXY over https, through the proxy.
func TestGoModulesThroughProxy(t *testing.T) {
	t.Parallel()
	goBin := testenv.Need(t, "go")[0]
	gp := egresstest.Serve(t, "127.0.0.1:0", egresstest.GoProxyHandler("hello from the module proxy"), "goproxy.test")
	p := startToolsPath(t, []string{"goproxy.test"}, StaticResolver{"goproxy.test": lo}, nil, nil)
	dir := t.TempDir()
	egresstest.WriteFile(t, filepath.Join(dir, "go.mod"), []byte("module m\n\ngo 1.21\n\nrequire "+egresstest.GoModule+" "+egresstest.GoModuleVersion+"\n"))
	gopath := t.TempDir()
	extra := []string{"GOPROXY=https://goproxy.test:" + strconv.Itoa(int(gp.Port())), "GOSUMDB=off", "GOFLAGS=-mod=mod -modcacherw",
		"GOPATH=" + gopath, "GOMODCACHE=" + filepath.Join(gopath, "mod"), "GOTOOLCHAIN=local", "GOENV=off",
		"GOCACHE=" + filepath.Join(gopath, "cache"), "CGO_ENABLED=0"}
	// go mod download fetches and verifies the module without compiling.
	out, err := p.run(t, dir, extra, goBin, "mod", "download", egresstest.GoModule)
	must(t, err == nil, "go mod download: %v\n%s", err, out)
	src, err := os.ReadFile(filepath.Join(gopath, "mod", egresstest.GoModule+"@"+egresstest.GoModuleVersion, "hello.go"))
	must(t, err == nil && strings.Contains(string(src), "hello from the module proxy"), "module source: %v %q", err, src)
	e := p.ev.next(t)
	must(t, e.Host == "goproxy.test" && e.Decision == "allow" && e.TLS == "sni", "event %+v", e)
}

// npm installs from a registry over https, through the proxy (its own
// proxy and CA variables).
func TestNPMThroughProxy(t *testing.T) {
	t.Parallel()
	npm := testenv.Need(t, "npm")[0]
	node := testenv.Need(t, "node")[0]
	h := &lateHandler{}
	reg := egresstest.Serve(t, "127.0.0.1:0", h, "npm.test")
	base := "https://npm.test:" + strconv.Itoa(int(reg.Port()))
	h.set(egresstest.NPMRegistryHandler(base, "hello from the registry"))
	p := startToolsPath(t, []string{"npm.test"}, StaticResolver{"npm.test": lo}, nil, nil)
	dir := t.TempDir()
	egresstest.WriteFile(t, filepath.Join(dir, "package.json"), []byte(`{"name":"m","version":"1.0.0"}`))
	extra := []string{"npm_config_registry=" + base + "/", "npm_config_cache=" + t.TempDir(), "npm_config_update_notifier=false",
		"npm_config_audit=false", "npm_config_fund=false"}
	out, err := p.run(t, dir, extra, npm, "install", "--no-progress", egresstest.NPMPackage)
	must(t, err == nil, "npm install: %v\n%s", err, out)
	out, err = p.run(t, dir, nil, node, "-e", "console.log(require('"+egresstest.NPMPackage+"'))")
	must(t, err == nil && strings.Contains(out, "hello from the registry"), "node: %v\n%s", err, out)
}
