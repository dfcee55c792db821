package approval

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/wardenhq/warden/internal/config"
)

// ErrNoToken refuses a decision by a supervisor who did not present the
// supervisor's token.
var ErrNoToken = errors.New("a supervisor's token is required to decide")

// SupervisorProof is how a person proves, outside the HTTP API, that they
// are a configured supervisor: by presenting that supervisor's token.
type SupervisorProof struct {
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
	// Prompt asks the person for the token without echoing it; nil when
	// there is no terminal to ask on.
	Prompt func(question string) (string, error)
}

// ProveSupervisor checks that the person deciding as id holds that
// supervisor's token. The token presented is the value of the
// supervisor's token_env, when set in this environment, else what the
// person types at the prompt. It must equal the configured token: the
// token_file's content, or, without a token_file, the token_env value
// itself. A supervisor with no token to compare against, or a person
// who presents none, is refused with ErrNoToken and what to do.
func ProveSupervisor(a *config.Approval, id string, p SupervisorProof) error {
	var sup *config.Supervisor
	for i := range a.Supervisors {
		if a.Supervisors[i].ID == id {
			sup = &a.Supervisors[i]
		}
	}
	if sup == nil || sup.TokenEnv == "" && sup.TokenFile == "" {
		return fmt.Errorf("%w: supervisor %s has no token configured; give it token_env or token_file in [[security.approval.supervisors]]", ErrNoToken, id)
	}
	want, err := SupervisorToken(*sup, p.Getenv)
	if err != nil {
		return err
	}
	got := ""
	if sup.TokenEnv != "" {
		got = p.Getenv(sup.TokenEnv)
	}
	if got == "" && p.Prompt != nil && want != "" {
		if got, err = p.Prompt(fmt.Sprintf("Token of supervisor %s: ", id)); err != nil {
			return fmt.Errorf("%w: failed to read it: %v", ErrNoToken, err)
		}
	}
	switch {
	case want == "":
		return fmt.Errorf("%w: supervisor %s's token is in $%s, which is not set here; export it in the terminal you decide from (or give the supervisor a token_file)", ErrNoToken, id, sup.TokenEnv)
	case got == "" && sup.TokenEnv != "":
		return fmt.Errorf("%w: set $%s to %s's token, or run this in a terminal to be asked for it", ErrNoToken, sup.TokenEnv, id)
	case got == "":
		return fmt.Errorf("%w: run this in a terminal to be asked for %s's token", ErrNoToken, id)
	}
	gd, wd := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(gd[:], wd[:]) != 1 {
		return fmt.Errorf("%w: the token presented is not supervisor %s's", ErrNoToken, id)
	}
	return nil
}
