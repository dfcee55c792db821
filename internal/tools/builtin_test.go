package tools

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/config"
)

// The built-in tools are the names of DESIGN.md, plus http_request;
// run_command only while commands are enabled.
func TestBuiltin(t *testing.T) {
	t.Parallel()
	names := func(r *Registry) []string {
		var n []string
		for _, t := range r.List() {
			n = append(n, t.Name)
		}
		return n
	}
	cfg := config.Default()
	want := []string{"apply_patch", "delete_file", "edit_file", "find_files", "grep", "http_request", "list_files",
		"read_file", "run_command", "search_code", "write_file"}
	if diff := cmp.Diff(want, names(Builtin(cfg))); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	cfg.Commands.Enabled = false
	if diff := cmp.Diff(append(want[:8:8], want[9:]...), names(Builtin(cfg))); diff != "" {
		t.Errorf("tools without commands (-want +got):\n%s", diff)
	}
}
