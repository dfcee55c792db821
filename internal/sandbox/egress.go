package sandbox

import (
	"os"
	"sync"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/sandbox/jail"
)

// EgressOptions give a jail under network = "allowlist" its host side
// (internal/egress): who is asked about unknown hosts, where connections
// are audited, where the workspace CA lives. The zero value asks nobody
// (unknown hosts are refused, as with no approval channel), keeps no audit
// trail but the counters, and keeps the CA in config.StateDir().
type EgressOptions struct {
	Asker   egress.Asker
	Auditor egress.Auditor
	// StateDir is warden's state directory (default config.StateDir()).
	StateDir string
	// Resolver looks names up on the host (nil: the system's). Tests give
	// a name table.
	Resolver egress.Resolver
	// UpstreamRoots verify the real servers of brokered hosts (nil: the
	// system's roots). Tests give their CA.
	UpstreamRoots egress.CertPool
	// SystemBundle is the CA bundle the jail's trusted bundle starts from
	// (default egress.SystemBundle).
	SystemBundle string
	// Getenv reads the brokered secrets' values (nil: os.LookupEnv).
	Getenv func(string) (string, bool)
}

// startEgress starts the gateway of a jail under network = "allowlist":
// its socket in a private directory of the system's temporary directory
// (short enough for a socket path), the broker when secrets are listed.
func startEgress(o *Options, s Settings, pids func() []int) (*egress.Gateway, error) {
	eo := o.Egress
	if eo == nil {
		eo = &EgressOptions{}
	}
	eg := o.Sandbox.Egress
	pol, err := eg.Policy()
	if err != nil {
		return nil, err
	}
	secrets := make([]egress.SecretSpec, len(eg.Secrets))
	for i, sec := range eg.Secrets {
		secrets[i] = egress.SecretSpec{Env: sec.Env, Hosts: sec.Hosts}
	}
	state := eo.StateDir
	if state == "" {
		state = config.StateDir()
	}
	return egress.StartGateway(egress.GatewayOptions{
		Server: egress.Options{
			Policy: pol, Resolver: eo.Resolver, Asker: eo.Asker, Auditor: eo.Auditor, Workspace: o.Workspace,
			UpstreamRoots: eo.UpstreamRoots,
		},
		Attributor: egress.NewAttributor(pids),
		Secrets:    secrets, StateDir: state, RunDir: os.TempDir(), Getenv: eo.Getenv, SystemBundle: eo.SystemBundle,
	})
}

// egressPIDs lists a started jail's processes for attribution: its pids
// cgroup's, when the backend made one (local), else the tree under the
// process the backend started (which, for docker, is the client, not the
// container: nothing is found, and connections go unattributed).
type egressPIDs struct {
	mu     sync.Mutex
	cgroup string
	root   int
}

func (j *egressPIDs) set(info Info) {
	j.mu.Lock()
	j.cgroup, j.root = info.Cgroup, info.PID
	j.mu.Unlock()
}

func (j *egressPIDs) list() []int {
	j.mu.Lock()
	cg, root := j.cgroup, j.root
	j.mu.Unlock()
	switch {
	case cg != "":
		return egress.CgroupPIDs(cg)
	case root > 0:
		return egress.Descendants(root)
	}
	return nil
}

// egressInfo is the counters of a jail's gateway, for Info.
func egressInfo(g *egress.Gateway) *jail.EgressInfo {
	st := g.Stats()
	return &jail.EgressInfo{Allowed: st.Allowed, Denied: st.Denied, Asked: st.Asked, Active: st.Active,
		BytesUp: st.BytesUp, BytesDown: st.BytesDown}
}
