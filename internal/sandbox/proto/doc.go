// Package proto is the worker protocol of internal/sandbox: the types that
// cross between the host and `warden worker` in its jail, one JSON object
// per line in each direction, and the wire form of errors (kinds that map
// back to the workspace's sentinels, so errors.Is works across the jail).
// It also holds the specs a worker (WorkerSpec) and the remote end of the
// ssh backend (JailSpec) are started with: JailSpec has types of its own,
// apart from the configuration's, so that renaming a configuration key
// does not change what crosses to a remote host.
//
// Requests are multiplexed by id; streams (see "Streams" in proto.go)
// carry the stdin and stdout of long-lived processes in bounded chunks
// under a window the host acknowledges.
//
// # Threat model
//
// Neither side trusts the other's content: every line is bounded
// (MaxLineBytes, MaxFileBytes, MaxWalkEntries, StreamChunk, StreamWindow,
// MaxStreams), the worker answers a malformed request with an error and
// the host resets a worker that breaks the protocol. Both trust the
// framing of their peer (it is warden's own child, or warden on the remote
// host over an authenticated ssh session).
//
// # Non-goals
//
// It carries no secrets and no authentication of its own: who may speak it
// is decided by whoever holds the pipes (the host process, sshd).
package proto
