// Package sshjail is the ssh backend of internal/sandbox: backend = "ssh"
// runs the same jail on another host. One SSH connection
// (golang.org/x/crypto/ssh) per workspace carries `warden worker --jail`
// (ServeJail), which builds the bubblewrap jail there (internal/sandbox/
// bwrap) with the session's stdin and stdout as the worker's, so the
// protocol passes straight through. What crosses is a proto.JailSpec: the
// settings as this host resolved them, the masks, and the environment this
// host's allowlist let through; the remote host computes the jail's layout
// from it, with its own paths.
//
// # Threat model
//
// The remote host must have warden and bubblewrap (a host without bwrap is
// refused, never used unjailed) and the workspace already at remote_path.
// It also guards against:
//
//   - a host that is not the one configured: its key must be in
//     known_hosts (strict: an unknown, changed or revoked key is refused,
//     never accepted on first use; the key types negotiated are those on
//     file);
//   - a private key others can read: an identity_file accessible by group
//     or others is refused, as ssh does (or the ssh agent is used);
//   - a dead or dropped connection: keepalives close a connection that
//     stops answering; requests in flight fail (the worker is gone) and are
//     never sent again (a command may have run once, never twice), and the
//     next request connects anew. When the session ends, the remote warden
//     (PR_SET_PDEATHSIG on sshd) kills its jail, which bwrap's
//     --die-with-parent and pid namespace take down whole;
//   - the host's environment: only the allowlisted, non-secret variables of
//     the local host travel, and none of the ssh session's;
//   - a spec that is not a jail: the remote side refuses anything but an
//     enabled local jail, unknown fields, trailing data and secret-looking
//     variables.
//
// # Non-goals
//
// The remote host itself (its root, its sshd, its warden binary) is
// trusted as the local ones are; syncing the workspace (it must be there)
// is not done; paths in answers (dirpath) are the remote host's, so with a
// remote_path other than the local path they name remote locations; the
// masks and rw_paths/ro_paths resolve on the remote host.
package sshjail
