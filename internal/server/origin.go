package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// DNS rebinding: a page on evil.example whose name an attacker then points
// at 127.0.0.1 is, for the browser, still evil.example — same origin — so
// its scripts can call a server on loopback and read the answers. What
// gives it away is the Host header, which carries the attacker's name. And a
// page on any origin can send requests to a loopback server (reading the
// answer is what CORS forbids, not sending): the Origin header names it.
// So every request to the page, /api and /mcp must name this server in
// Host, and, when it carries an Origin (browsers send one with every
// cross-origin request and every POST), come from this server's own origin
// or one the user allowed. The MCP specification requires the Origin check
// for Streamable HTTP.

// OriginPolicy says which names and origins the server answers besides its
// own. The zero value allows only this server itself: a Host that is the
// address the connection reached (127.0.0.1:8080, [::1]:8080) or, on a
// loopback connection, localhost or a name under .localhost (which browsers
// resolve to loopback themselves, never through DNS), on the port the
// connection reached; and an Origin that is one of those (or a configured
// host) with the scheme the server speaks.
type OriginPolicy struct {
	// Hosts are further names requests may carry in Host: "name" (any port)
	// or "name:port". For a reverse proxy, or a DNS name the server is
	// reached by directly.
	Hosts []string
	// Origins are further origins (scheme://host[:port]) a browser may
	// send requests from, such as the page's public URL behind a proxy
	// that terminates TLS.
	Origins []string
}

// originGuard applies an OriginPolicy.
type originGuard struct {
	hosts   map[string]bool // name, or name:port
	origins map[string]bool // normalised scheme://host:port
	refused func(r *http.Request, why string)
}

func newOriginGuard(p OriginPolicy, refused func(r *http.Request, why string)) (*originGuard, error) {
	g := &originGuard{hosts: map[string]bool{}, origins: map[string]bool{}, refused: refused}
	for _, h := range p.Hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		name, port, err := net.SplitHostPort(h)
		if err != nil {
			name, port = strings.Trim(h, "[]"), ""
		}
		if name == "" || strings.ContainsAny(name, "/@ ") || port != "" && !validPort(port) {
			return nil, fmt.Errorf("allowed host %q: want a host name, optionally with :port", h)
		}
		if port != "" {
			name = net.JoinHostPort(name, port)
		}
		g.hosts[name] = true
	}
	for _, o := range p.Origins {
		n, err := normaliseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("allowed origin %q: %w", o, err)
		}
		g.origins[n] = true
	}
	return g, nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}

// normaliseOrigin returns scheme://host:port for an origin, with the
// default port made explicit, or an error for anything that is not one.
func normaliseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" ||
		u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("want scheme://host[:port] with scheme http or https")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = defaultPort(u.Scheme == "https")
	} else if !validPort(port) {
		return "", fmt.Errorf("invalid port %q", port)
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(host), port), nil
}

func defaultPort(tls bool) string {
	if tls {
		return "443"
	}
	return "80"
}

// wrap refuses, with 403 and a body saying why, a request whose Host or
// Origin is not this server's. /healthz is left alone: it says only "ok",
// and load balancers call it by address.
func (g *originGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			if why := g.check(r); why != "" {
				g.refused(r, why)
				msg := "refused: " + why
				if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/mcp/") {
					writeErr(w, http.StatusForbidden, msg)
					return
				}
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("X-Content-Type-Options", "nosniff")
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprintln(w, msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// check returns why r is refused, or "".
func (g *originGuard) check(r *http.Request) string {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return "the server cannot tell which address this request reached"
	}
	lap, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return "the server cannot tell which address this request reached"
	}
	tls := r.TLS != nil
	if r.Host == "" {
		return "the request has no Host header"
	}
	host, port, ok := splitHost(r.Host, tls)
	if !ok || !g.hostAllowed(host, port, lap) {
		return fmt.Sprintf("Host %q is not a name this server answers to (it was reached at %s); a page an attacker serves under a name pointed at this machine (DNS rebinding) sends such a Host. If it is a name you gave this server, start it with --allowed-host %s",
			r.Host, lap, displayHost(r.Host))
	}
	origin, has := r.Header["Origin"]
	if !has {
		return "" // not sent by a browser's cross-origin request: a CLI, an SDK, a same-origin GET
	}
	if len(origin) != 1 {
		return fmt.Sprintf("Origin %q is not allowed: one origin, please", strings.Join(origin, ", "))
	}
	if origin[0] == "null" {
		// Under Referrer-Policy no-referrer (which the page sets) browsers
		// send "Origin: null" with the page's own form posts, and say
		// same-origin in Sec-Fetch-Site, which no script can set. Any
		// other null — a sandboxed frame, a file: or data: page — is an
		// origin that cannot be told apart from any other.
		if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
			return ""
		}
		return `Origin "null" is not allowed: an opaque origin (a sandboxed frame, a file: or data: page) cannot be told apart from any other`
	}
	n, err := normaliseOrigin(origin[0])
	if err != nil {
		return fmt.Sprintf("Origin %q is not allowed: %v", origin[0], err)
	}
	if g.origins[n] {
		return ""
	}
	// This server's own origin: its scheme, and a name and port its Host
	// check accepts (a configured name is this server's too).
	u, _ := url.Parse(n)
	if (u.Scheme == "https") == tls {
		if oh, op, ok := splitHost(u.Host, tls); ok && g.hostAllowed(oh, op, lap) {
			return ""
		}
	}
	return fmt.Sprintf("Origin %q is not allowed: only this server's own pages (%s) may send requests from a browser; another port or name is another site, which may be a page an agent runs. If it is yours, start the server with --allowed-origin %s",
		origin[0], ownOrigin(tls, r.Host), origin[0])
}

// splitHost splits a Host value into a lowercase name (IPv6 without
// brackets) and a port, the scheme's default when there is none.
func splitHost(h string, tls bool) (name, port string, ok bool) {
	name, port, err := net.SplitHostPort(h)
	if err != nil {
		if strings.Contains(strings.Trim(h, "[]"), ":") && !strings.HasPrefix(h, "[") {
			return "", "", false // a bare IPv6 address is not a valid Host
		}
		name, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort(tls)
	}
	if name == "" || !validPort(port) {
		return "", "", false
	}
	return strings.ToLower(name), port, true
}

// hostAllowed reports whether name:port is this server: a built-in name on
// the port the connection reached, or a configured one.
func (g *originGuard) hostAllowed(name, port string, local netip.AddrPort) bool {
	if g.hosts[name] || g.hosts[net.JoinHostPort(name, port)] {
		return true
	}
	return port == strconv.Itoa(int(local.Port())) && g.builtinHost(name, local)
}

// builtinHost reports whether name is the address the connection reached,
// or localhost (or a name under .localhost) on a loopback connection.
func (g *originGuard) builtinHost(name string, local netip.AddrPort) bool {
	if ip, err := netip.ParseAddr(name); err == nil {
		return ip.Unmap() == local.Addr().Unmap()
	}
	if !local.Addr().IsLoopback() {
		return false
	}
	return name == "localhost" || strings.HasSuffix(name, ".localhost") && len(name) > len(".localhost")
}

func displayHost(h string) string {
	if name, _, err := net.SplitHostPort(h); err == nil {
		return name
	}
	return h
}

func ownOrigin(tls bool, host string) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + host
}
