// Package relay is the jail side of warden's egress proxy: it listens on
// TCP ports of the jail's loopback and carries every accepted connection,
// byte for byte, to the host over a unix socket bound into the jail.
//
// It parses nothing the jailed program sends and decides nothing: the host
// side (internal/egress) reads the proxy protocol, applies the policy,
// resolves, dials and audits. Each connection opens its own unix socket
// connection and begins with a fixed 8-byte preamble (Preamble) carrying
// only what accept(2) told the relay: the client's source port and the
// listener's port, so the host can attribute the connection to a process.
//
// # Threat model
//
// Everything in the jail is the adversary's, this package's process
// included: a jailed program can connect to the unix socket itself and
// write any preamble. So the preamble is a hint for attribution and
// nothing more; the host trusts no byte that comes through it, and the
// policy applies to every connection alike. The relay holds no secret and
// no state worth taking. This package must not import the host side (a
// test checks its imports), so that no policy or credential code is ever
// linked into what runs in the jail.
package relay
