package egress

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/egress/policy"
	"github.com/wardenhq/warden/internal/egress/relay"
)

// A gateway and a relay are the whole path a jail uses, minus the jail.
func TestGateway(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0", "api.test")
	pol, _ := policy.New([]string{"api.test"}, nil, "deny")
	sys := filepath.Join(t.TempDir(), "system.pem")
	os.WriteFile(sys, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: originCA(t).cert.Raw}), 0o644)
	ev := newEvents()
	g, err := StartGateway(GatewayOptions{
		Server: Options{Policy: pol, Resolver: StaticResolver{"api.test": lo}, Auditor: ev, Workspace: "/ws",
			UpstreamRoots: originCA(t).pool},
		Secrets: []SecretSpec{{Env: "TOKEN", Hosts: []string{"api.test"}}}, StateDir: t.TempDir(), RunDir: shortTempDir(t),
		Getenv: func(string) (string, bool) { return "real-value", true }, SystemBundle: sys,
	})
	must(t, err == nil, "%v", err)
	ph, _ := g.Broker.Placeholder("TOKEN")
	must(t, slices.Contains(g.Env, "TOKEN="+ph) && slices.Contains(g.Env, "SSL_CERT_FILE="+JailBundlePath), "env %q", g.Env)
	st, err := os.Stat(filepath.Dir(g.Socket))
	must(t, err == nil && st.Mode().Perm() == 0o700, "socket directory %v %v", st.Mode(), err)

	r := &relay.Relay{Socket: g.Socket}
	defer r.Close()
	addr, err := r.Listen("127.0.0.1:0")
	must(t, err == nil, "%v", err)
	p := &proxy{roots: originCA(t).pool.Clone()}
	bundle, _ := os.ReadFile(g.BundleFile)
	must(t, p.roots.AppendCertsFromPEM(bundle), "the bundle holds no certificate")
	code, body := do(t, p.client(addr.String()), "GET", "https://api.test:"+strconv.Itoa(int(up.port()))+"/", "", "Authorization", "token "+ph)
	must(t, code == 200 && strings.Contains(body, "authorization=token real-value"), "got %d %q", code, body)
	e := ev.next(t)
	must(t, e.TLS == "terminated" && e.Decision == "allow", "event %+v", e)

	dir := filepath.Dir(g.Socket)
	g.Close()
	_, err = os.Stat(dir)
	must(t, os.IsNotExist(err), "the gateway's directory outlived it: %v", err)
}
