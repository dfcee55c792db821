package egress

import (
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/testenv"
)

// curl is the client most jailed commands are: it must see the real
// server through the proxy, the brokered secret swapped in, and a refusal
// it can show.
func TestCurl(t *testing.T) {
	t.Parallel()
	curl := testenv.Need(t, "curl")[0]
	up := startOrigin(t, "tcp", "127.0.0.1:0", "api.test", "allowed.test")
	plain := startOrigin(t, "tcp", "127.0.0.1:0")
	p := startProxy(t, brokerFixture())
	ph, _ := p.broker.Placeholder("GITHUB_TOKEN")
	port, pport := strconv.Itoa(int(up.port())), strconv.Itoa(int(plain.port()))

	// The bundle a jail trusts: the system's CAs (here the test origin's) and
	// the workspace CA.
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: originCA(t).cert.Raw})
	os.WriteFile(bundle, append(ca, p.broker.CACertPEM()...), 0o644)

	run := func(args ...string) (string, int) {
		cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "15", "--noproxy", ""}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	proxyURL := "http://" + p.addr

	out, code := run("-x", proxyURL, "--cacert", bundle, "-H", "Authorization: Bearer "+ph, "https://api.test:"+port+"/")
	must(t, code == 0 && strings.Contains(out, "authorization=Bearer "+realToken), "curl https with a brokered secret: %d %s", code, out)
	p.ev.next(t)

	out, code = run("-x", proxyURL, "http://denied.test:"+pport+"/")
	must(t, code == 0 && strings.Contains(out, `deny "denied.test"`), "curl http to a denied host: %d %s", code, out)
	p.ev.next(t)

	out, code = run("-x", proxyURL, "--cacert", bundle, "https://denied.test:"+port+"/")
	must(t, code != 0 && strings.Contains(out, "403"), "curl https to a denied host: %d %s", code, out)
	p.ev.next(t)

	out, code = run("--socks5-hostname", p.addr, "http://allowed.test:"+pport+"/")
	must(t, code == 0 && strings.Contains(out, "host=allowed.test"), "curl through SOCKS5: %d %s", code, out)
	ev := p.ev.next(t)
	must(t, ev.Proto == "socks5" && ev.Decision == "allow", "event %+v", ev)

	out, code = run("--socks5-hostname", p.addr, "http://unknown.test:"+pport+"/")
	must(t, code != 0, "curl through SOCKS5 to an unknown host: %d %s", code, out)
	p.ev.next(t)
}
