// Package netguard keeps outgoing HTTP connections made for a model away
// from the machine's own network: loopback, private and link-local ranges,
// carrier-grade NAT, cloud metadata endpoints, multicast, broadcast and the
// other special-purpose ranges, in every spelling an attacker may choose
// (IPv4-mapped, IPv4-compatible and NAT64/6to4/Teredo-embedded IPv6).
//
// Threat model: the model chooses the URL (directly, or through a page or
// a redirect it fetched) and tries to reach a service that trusts the
// machine's network position (a metadata service handing out credentials,
// an admin port on loopback, a router). The check is made in the dialer's
// Control function, on the IP address the socket is about to connect to,
// after name resolution. A host name that resolves to a public address
// while it is checked and to 127.0.0.1 when it is used (DNS rebinding)
// therefore gains nothing: there is no earlier check to outwit. Every
// redirect dials again and is checked again.
//
// An operator can let chosen hosts through with an allowlist of host names,
// IP addresses and CIDR prefixes (security.http.allow_hosts). A host name on
// the list is trusted wholesale: whatever it resolves to may be reached.
//
// Classify is also the address classification of the jail's egress proxy
// (internal/egress/policy): one table of special ranges for both.
//
// Non-goals: netguard does not filter by content, does not stop a public
// host from relaying requests inward (an open proxy on the internet is out
// of its reach), does not cover connections made by commands the agent runs
// (the sandbox's network namespace and internal/egress do that), and does not police proxies:
// callers must not use one (http.Transport.Proxy must be nil).
package netguard
