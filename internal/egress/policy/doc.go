// Package policy decides which network destinations a jailed command may
// reach: it turns the host names and addresses that arrive from the jail
// into one canonical form, and matches them against the [sandbox.egress]
// allow and deny rules. It does no I/O; internal/egress applies it to live
// connections, and internal/config uses it to check rules as it loads them.
//
// # Canonical hosts
//
// A host arrives as text that several parsers will read in turn: the
// proxy's, the resolver's, the TLS library's, the upstream server's. Where
// two of them disagree (a NUL that one parser ends the name at, "%2e" that
// one decodes, "127.1" that inet_aton reads as an address and DNS as a
// name), a check made on one reading is bypassed by another. ParseHost
// therefore accepts exactly one spelling of each destination and refuses
// everything else, rather than repairing it:
//
//   - names: ASCII letters, digits, '-' and '.', lower-cased; one trailing
//     dot removed; labels of 1–63 bytes, at most 253 in all; Unicode labels
//     converted to A-labels by IDNA 2008 (golang.org/x/net/idna's
//     Registration profile: a label that would need mapping — full-width
//     letters, upper-case non-ASCII, ignorable code points — is refused, not
//     mapped); "xn--" labels must decode validly. NUL, '%', '@', '_',
//     whitespace, control bytes, '/', '\\', ':' and every other byte are
//     refused with the byte named.
//   - IPv4: only the dotted-quad decimal form. Decimal ("2130706433"),
//     octal ("0177.0.0.1"), hex ("0x7f.1"), short ("127.1") and
//     zero-padded forms are refused: a name whose last label is numeric is
//     an address to some parsers and a name to others.
//   - IPv6: only in brackets ("[::1]"), without a zone; an IPv4-mapped
//     address ("[::ffff:127.0.0.1]") is the IPv4 address it maps.
//
// The canonical Host is what is matched, resolved, audited and shown to a
// person; nothing downstream looks at the text the jail sent.
//
// # Rules
//
// An entry is a host pattern with an optional ":port" (no port: every
// port): an exact name ("github.com"), a wildcard ("*.pypi.org": every name
// strictly below pypi.org, at any depth, not pypi.org itself), an IP
// address ("10.0.0.5", "[::1]:8080") or a CIDR prefix ("10.0.0.0/8",
// "[fd00::/8]:443"). A bare "*" is refused: network = "host" is the way to
// say "everything". Name patterns match names only and address patterns
// addresses only: allowing a name never admits a bare IP, even one the name
// resolves to.
//
// Deny wins over allow. A host that matches neither is decided by
// unknown: "ask" (a person decides) or "deny".
//
// Loopback, private, link-local, carrier-grade NAT, metadata, unspecified,
// multicast and the other special ranges (internal/netguard's Classify) are
// reached only when an allow entry names the destination explicitly: an
// exact name (then whatever it resolves to is its owner's business, as
// "localhost:5432" must reach loopback) or an address or prefix containing
// the address. A wildcard entry and a person's approval admit public
// addresses only. An IP literal in a special range that no entry names is
// refused without asking.
//
// Non-goals: this package does not resolve names (internal/egress does,
// and checks every answer with CheckAddr), and knows nothing of what a
// connection carries.
package policy
