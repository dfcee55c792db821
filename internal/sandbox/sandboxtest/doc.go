// Package sandboxtest is the conformance suite of internal/sandbox's
// backends, in the spirit of testing/fstest.TestFS: one table of escapes
// and behaviours (host secrets, HOME, sockets, masks existing and created
// later, writes outside, privilege, the environment, forbidden and
// foreign-architecture system calls, the network under lockdown, a read-only
// lockdown workspace, a fork bomb, a kill mid-write, a killed warden,
// forged protocol lines, the control socket, leftover processes, and the
// command runner's table from internal/command/commandtest) run against a
// backend through one Fixture. A new backend gets the whole suite by
// filling in a Fixture and calling Run from its tests, with Main as the
// TestMain of its package (the jails re-execute the test binary as `warden
// worker`, and the suite's probes are the test binary too).
//
// It is a test helper: only tests import it. Its victims (a system call
// through the i386 entry point) exist per architecture, so the tree builds
// and vets everywhere; where an architecture has no foreign ABI to try,
// that row says so and skips.
package sandboxtest
