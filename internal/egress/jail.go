package egress

import (
	"bytes"
	"fmt"
	"os"

	"github.com/wardenhq/warden/internal/egress/relay"
)

// The relay's ports on the jail's loopback (relay.ListenJail).
const (
	JailHTTPPort  = relay.HTTPPort
	JailSOCKSPort = relay.SOCKSPort
)

// JailBundlePath is where the CA bundle (the system's CAs and the
// workspace CA) is bound in the jail.
const JailBundlePath = relay.BundlePath

// SystemBundle is the system's CA bundle on Debian and its derivatives,
// which OpenSSL, GnuTLS, Go and curl read by default.
const SystemBundle = "/etc/ssl/certs/ca-certificates.crt"

// JailEnv is the environment that points a jail's programs at the proxy:
// the proxy variables in the forms curl, git, Go, Python, npm, pip and
// cargo read; and, when bundle is set (a broker terminates TLS), the CA
// bundle in each variable a TLS stack reads it from. NO_PROXY keeps the
// jail's own loopback direct (a dev server in the jail); a host service
// named in allow (e.g. "localhost:5432") is reached through the proxy
// explicitly (SOCKS5), never by a name the jail resolves.
func JailEnv(bundle string) []string {
	return ProxyEnv(fmt.Sprintf("127.0.0.1:%d", JailHTTPPort), fmt.Sprintf("127.0.0.1:%d", JailSOCKSPort), bundle)
}

// ProxyEnv is JailEnv for a proxy at other addresses (tests on the host
// give the same programs the same variables).
func ProxyEnv(httpAddr, socksAddr, bundle string) []string {
	httpProxy := "http://" + httpAddr
	socks := "socks5h://" + socksAddr
	noProxy := "localhost,127.0.0.1,::1"
	env := []string{
		// curl reads only the lower-case http_proxy (httpoxy); Go, Python and
		// most others read both.
		"http_proxy=" + httpProxy, "HTTP_PROXY=" + httpProxy,
		"https_proxy=" + httpProxy, "HTTPS_PROXY=" + httpProxy,
		"all_proxy=" + socks, "ALL_PROXY=" + socks,
		"no_proxy=" + noProxy, "NO_PROXY=" + noProxy,
		// npm's own configuration (it does not read the variables above).
		"npm_config_proxy=" + httpProxy, "npm_config_https_proxy=" + httpProxy, "npm_config_noproxy=" + noProxy,
		// pip, cargo: their own spellings.
		"PIP_PROXY=" + httpProxy, "CARGO_HTTP_PROXY=" + httpProxy,
		// Node 24+ fetch() follows the variables only when asked.
		"NODE_USE_ENV_PROXY=1",
	}
	if bundle != "" {
		for _, k := range []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "PIP_CERT",
			"GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS", "npm_config_cafile", "CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE"} {
			env = append(env, k+"="+bundle)
		}
	}
	return env
}

// Bundle is the system's CA bundle (read from system; a missing file is
// an empty bundle) followed by the workspace CA: what the jail trusts when
// TLS is terminated for brokered secrets.
func (b *Broker) Bundle(system string) ([]byte, error) {
	sys, err := os.ReadFile(system)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read the system CA bundle %s: %w", system, err)
	}
	var buf bytes.Buffer
	buf.Write(sys)
	if len(sys) > 0 && sys[len(sys)-1] != '\n' {
		buf.WriteByte('\n')
	}
	buf.WriteString("# warden egress: the workspace CA (TLS terminated for brokered secrets only)\n")
	buf.Write(b.CACertPEM())
	return buf.Bytes(), nil
}
