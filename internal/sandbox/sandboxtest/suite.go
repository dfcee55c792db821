package sandboxtest

import (
	"testing"
)

// row is one escape or behaviour every backend is tried with.
type row struct {
	name string
	run  func(t *testing.T, f *Fixture)
}

// rows is the table. Each row starts the workers it needs.
var rows = []row{
	{"works", testWorks},
	{"runner", testRunner},
	{"escapes", testEscapes},
	{"sockets", testSockets},
	{"syscalls", testSyscalls},
	{"foreign architecture", testForeignArch},
	{"network", testNetwork},
	{"lockdown read-only", testLockdownReadOnly},
	{"fork bomb", testForkBomb},
	{"killed mid-write", testKilledMidWrite},
	{"kill leaves nothing", testKillLeavesNothing},
	{"warden killed leaves nothing", testWardenKilled},
	{"forged protocol lines", testForgedProtocol},
	{"control socket", testControlSocket},
	{"inherited descriptors", testInheritedFDs},
	{"git", testGit},
	{"egress", testEgress},
}

// Run tries the backend f reaches with every row of the suite, each a
// subtest, in order. A row that cannot run for a reason of the host (no
// i386 entry point on arm64) says so in the log; one that needs what the
// fixture does not give (Processes) checks the rest.
func Run(t *testing.T, f *Fixture) {
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { r.run(t, f) })
	}
}
