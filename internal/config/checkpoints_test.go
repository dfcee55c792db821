package config

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckpointsDefaults(t *testing.T) {
	t.Parallel()
	ld, _, _, err := setup{}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	want := Checkpoints{Enabled: true, Keep: 100, MaxBytes: 2 << 30, MaxFileBytes: 16 << 20, Gitignore: true}
	if diff := cmp.Diff(want, ld.Config.Checkpoints); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestCheckpointsFromUserConfig(t *testing.T) {
	t.Parallel()
	user := "[checkpoints]\nenabled = false\nkeep = 7\nmax_bytes = 10485760\nmax_file_bytes = 1024\nignore = [\"*.log\", \"!keep.log\"]\ngitignore = false\n"
	ld, u, _, err := setup{user: user}.load(t)
	if err != nil {
		t.Fatal(err)
	}
	want := Checkpoints{Keep: 7, MaxBytes: 10 << 20, MaxFileBytes: 1024, Ignore: []string{"*.log", "!keep.log"}}
	if diff := cmp.Diff(want, ld.Config.Checkpoints); diff != "" {
		t.Errorf("checkpoints (-want +got):\n%s", diff)
	}
	if got := ld.Origin["checkpoints.keep"]; got != "user:"+u+":3" {
		t.Errorf("origin of keep = %q", got)
	}
}

func TestCheckpointsValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"keep zero", "[checkpoints]\nkeep = 0\n", []string{"2: checkpoints.keep = 0: must be between 1 and 10000"}},
		{"max_bytes small", "[checkpoints]\nmax_bytes = 1000\n", []string{"2: checkpoints.max_bytes = 1000: must be at least 1048576 (1 MiB)"}},
		{"file cap zero", "[checkpoints]\nmax_file_bytes = 0\n", []string{"2: checkpoints.max_file_bytes = 0: must be between 1 and 1073741824"}},
		{"empty ignore", "[checkpoints]\nignore = [\"ok\", \"!\", \"#x\"]\n", []string{
			`2: checkpoints.ignore[1] = "!": must name something to ignore`,
			`2: checkpoints.ignore[2] = "#x": a pattern cannot start with '#' (it would be a comment in a .gitignore)`,
		}},
		{"unknown key", "[checkpoints]\nkeeep = 3\n", []string{"2: checkpoints.keeep: unknown key"}},
		{"wrong type", "[checkpoints]\nenabled = \"yes\"\n", []string{`2: checkpoints.enabled = "yes": expected boolean, got string`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, filepath.Join(t.TempDir(), "config.toml"), tc.doc)
			if diff := cmp.Diff(tc.want, shorts(t, CheckFile(path, false))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// A workspace file lives where the agent can write: it may not turn
// checkpoints off, thin them, or ignore more (each would hide changes from
// undo), nor make them bigger (the user's disk).
func TestCheckpointsNotFromWorkspace(t *testing.T) {
	t.Parallel()
	for _, ws := range []string{
		"[checkpoints]\nenabled = false\n",
		"[checkpoints]\nkeep = 1\n",
		"[checkpoints]\nmax_bytes = 1048576\n",
		"[checkpoints]\nmax_file_bytes = 1\n",
		"[checkpoints]\nignore = [\"src/\"]\n",
		"[checkpoints]\ngitignore = true\n",
	} {
		_, _, w, err := setup{ws: ws}.load(t)
		got := shorts(t, err)
		if len(got) != 1 || !cmp.Equal(got[0][len(got[0])-len("only the user config may set this"):], "only the user config may set this") {
			t.Errorf("workspace %q: errors %q, want one refusal (file %s)", ws, got, w)
		}
	}
}
