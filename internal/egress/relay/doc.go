// Package relay is the jail side of warden's egress proxy: it listens on
// TCP ports of the jail's loopback and hands every accepted connection's
// socket itself to the host, over a unix socket bound into the jail
// (SCM_RIGHTS), then forgets it.
//
// It reads nothing the jailed program sends, copies no byte and decides
// nothing: the host side (internal/egress) reads and writes the jail's
// socket directly, reads the proxy protocol, applies the policy, resolves,
// dials and audits. Nothing in the jail stays in the data path, which
// also makes it the fastest path (one hop, spliced by the kernel).
//
// # Threat model
//
// Everything in the jail is the adversary's, this package's process
// included: a jailed program can connect to the unix socket itself and
// pass any descriptor. The host therefore accepts exactly one descriptor
// per message, only a TCP socket (anything else is closed unread), and
// applies the policy to it like to any other; the ports it learns from the
// socket are used to attribute the connection, a hint and nothing more.
// The relay holds no secret and no state worth taking. This package must
// not import the host side (a test checks its imports), so that no policy
// or credential code is ever linked into what runs in the jail.
//
// A transport that cannot carry descriptors (ssh to a remote jail) cannot
// use this relay.
package relay
