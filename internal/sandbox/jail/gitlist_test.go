package jail

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/wardenhq/warden/internal/workspace"
)

// TestGitControlMatchesFileTools: the jail protects exactly the entries of
// a git directory that the file tools protect (workspace.GitControl's
// "**/.git/NAME" rows), so a name added to one list cannot be forgotten in
// the other.
func TestGitControlMatchesFileTools(t *testing.T) {
	var tools []string
	for _, r := range workspace.GitControl {
		if r.Kind != workspace.GitConfig {
			continue
		}
		name, ok := strings.CutPrefix(r.Pattern, "**/.git/")
		if !ok || strings.Contains(name, "/") {
			continue // .git/modules/** rows: the jail applies its list in every module's git directory
		}
		tools = append(tools, name)
	}
	var jail []string
	for _, e := range gitControl {
		jail = append(jail, e.name)
	}
	sort.Strings(tools)
	sort.Strings(jail)
	if diff := cmp.Diff(tools, jail); diff != "" {
		t.Errorf("the jail's git control entries differ from workspace.GitControl (-file tools +jail):\n%s", diff)
	}
}
