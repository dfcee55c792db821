package approval

import (
	"encoding/json"
	"testing"

	"github.com/wardenhq/warden/internal/config"
)

// TestTargetsBind: where a change lands is part of the binding hash, and a
// path_pattern must match it as well as the path argument.
func TestTargetsBind(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"content":"x","path":"docs/a.yml"}`)
	plain := BindingHash("write_file", args, "/w", "s")
	same := BindingHash("write_file", args, "/w", "s", Target{"docs/a.yml", "docs/a.yml"})
	moved := BindingHash("write_file", args, "/w", "s", Target{"docs/a.yml", ".github/workflows/a.yml"})
	if plain == same || same == moved || plain == moved {
		t.Errorf("targets do not change the binding: %s %s %s", plain, same, moved)
	}
	if BindingHash("t", args, "/w", "s") != BindingHash("t", args, "/w", "s", []Target(nil)...) {
		t.Error("no targets changed the hash of a call that changes no file")
	}
	aa, err := CompileAutoApprove([]config.AutoApprove{{Tool: "write_file", PathPattern: `^docs/`}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		targets []Target
		want    bool
	}{
		{nil, true},
		{[]Target{{"docs/a.yml", "docs/a.yml"}}, true},
		{[]Target{{"docs/a.yml", ".github/workflows/a.yml"}}, false},
	} {
		if _, ok := aa.Match("write_file", args, tc.targets...); ok != tc.want {
			t.Errorf("Match with targets %v = %v, want %v", tc.targets, ok, tc.want)
		}
	}
}
