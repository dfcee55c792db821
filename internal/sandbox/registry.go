package sandbox

import (
	"context"

	"github.com/wardenhq/warden/internal/sandbox/bwrap"
	"github.com/wardenhq/warden/internal/sandbox/docker"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/sshjail"
)

// Backend starts jails of one kind (see jail.Launch and jail.Started for
// the contract).
type Backend struct {
	// Start builds the jail and starts the worker in it.
	Start func(ctx context.Context, l *jail.Launch) (*jail.Started, error)
	// Probe says whether the backend can start here, for warden doctor
	// ("ok: …" or why not); nil for the local backend, which the host
	// report covers.
	Probe func(ctx context.Context) string
}

// backends are the backends this build has, by the name [sandbox] backend
// gives them. A backend not listed (modal) is refused, never replaced by
// another or by no jail.
var backends = map[string]Backend{
	jail.BackendLocal:  {Start: bwrap.Start},
	jail.BackendDocker: {Start: docker.Start, Probe: docker.Probe},
	jail.BackendSSH:    {Start: sshjail.Start, Probe: sshjail.Probe},
}
