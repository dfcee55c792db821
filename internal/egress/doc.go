// Package egress is the host side of a jail's network under
// [sandbox] network = "allowlist": an HTTP proxy (CONNECT and absolute-form
// requests) and a SOCKS5 endpoint that decide every connection a jailed
// command opens by the [sandbox.egress] policy (internal/egress/policy),
// resolve and dial on the host, audit each connection, and keep brokered
// secrets out of the jail.
//
// # What crosses where
//
// The jail has its own network namespace with only loopback, and no
// resolver. Inside it, internal/egress/relay listens on loopback ports and
// hands each accepted connection's socket, unread, over a unix socket
// bound into the jail to a Server here (ServeRelay, SCM_RIGHTS): the
// server then reads and writes the jail's socket itself, so nothing in
// the jail is in the data path. Programs reach it through the
// proxy variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY=socks5h://…). A
// program that ignores them has no route out at all: there is nothing to
// fall back to, so the jail fails closed.
//
// For each connection the Server reads the proxy request, makes the host
// canonical (policy.ParseHost), decides (allow, deny, or ask a person
// through the Asker the engine provides), and only then resolves the name
// on the host (Resolver), refuses answers in special ranges unless the
// allow entry names the destination explicitly, and connects to exactly
// one of the addresses it checked. A refusal is answered as the client can
// see it: HTTP 403 with a body naming the rule, SOCKS5 reply 0x02
// ("connection not allowed by ruleset"), a TLS access_denied alert inside
// a tunnel; never a connection that looks open.
//
// # Threat model
//
// Everything in the jail is hostile and may speak any bytes to the relay
// or straight to the unix socket. The server must not be led to:
//
//   - reach a host the policy does not admit: hosts are matched in one
//     canonical form, so NUL, '%', '@', whitespace, IDNA look-alikes,
//     trailing dots and numeric IPv4 spellings cannot make the matcher,
//     the resolver and the server read different hosts; a SOCKS5 domain
//     goes through the same canonicaliser (a NUL in it is refused, not
//     cut);
//   - reach the host's own network: loopback, private, link-local, CGNAT,
//     metadata and the other special ranges are refused after resolution
//     (DNS rebinding gains nothing: the address dialled is the address
//     checked), and an IP literal is matched as an address, never as a
//     name;
//   - leak names through DNS: no resolver is reachable from the jail, and
//     the host resolves only names the policy admitted, so an encoded label
//     never reaches a DNS server;
//   - front one host behind another: a CONNECT tunnel's TLS ClientHello
//     must name the CONNECT host (SNI); an Encrypted ClientHello, which
//     hides the real name, is refused (Chromium's GREASE ECH included:
//     start it with --disable-features=EncryptedClientHello); a ClientHello
//     without SNI is refused for a name and accepted for an IP literal
//     (clients send none for an address). Absolute-form requests and plain
//     HTTP inside a tunnel must carry a Host header equal to the target;
//     every request of a kept-alive connection is checked, and a proxy
//     request inside a tunnel (relayed CONNECT) is refused;
//   - be confused by parsers that disagree: a request head is read twice,
//     strictly by this package (CRLF only, no folding, one Host, not both
//     Transfer-Encoding and Content-Length) and by net/http, and refused
//     unless the two readings agree; requests are re-framed by net/http on
//     the way out, so no smuggled second request rides along;
//   - carry a real secret anywhere else: see below.
//
// # Brokered secrets
//
// For each [[sandbox.egress.secrets]] entry the jail's environment holds a
// placeholder (PlaceholderPrefix and 32 hex digits, derived from a random
// per-workspace seed), never the value. For the entry's hosts only, TLS is
// terminated here with a per-workspace CA (created on first use; key 0600
// in warden's state directory; name-constrained to those hosts; its
// certificate exported for the jail to trust), the real server is verified
// normally, and the placeholder is replaced by the real value in request
// headers, also inside Basic credentials. Only HTTP/1.1 is offered to the
// client in ALPN (HTTP/2 clients fall back to it). A placeholder seen going
// anywhere else — another host, plain HTTP, a URL, a request body (held back
// so the placeholder itself is never sent) — refuses the request and is
// audited. Within a TLS tunnel that is not terminated the placeholder is
// out of sight; it is worthless there, which is the point.
//
// # Out of reach
//
//   - Host-header fronting inside an opaque TLS tunnel: once the SNI
//     checks out, what the client says inside its own TLS session is not
//     seen (except for brokered hosts, where TLS is terminated). A CDN that
//     routes by the inner Host header can carry a request to a site behind
//     the same CDN; allow names, not shared front ends, where this matters.
//   - What an allowed host does with the data: an allowed paste site or a
//     server that relays onward receives whatever the jail sends it.
//   - Protocols that are neither TLS nor HTTP (ssh, database wire
//     protocols) are carried opaque to an allowed host and port.
//   - Timing and volume channels; the content of allowed downloads.
//   - Placeholders encoded other than verbatim or in Basic credentials
//     (e.g. base64 in a body) are not recognised.
//   - Attribution: the jail chooses the socket it hands over, so the
//     command an event names is a hint, not proof.
package egress
