package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
)

func TestPostEditHooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *config.Config) {
		c.Security.ConfirmMode = config.ModeYolo
	}, func(o *Options) {
		o.Hooks = &PostEditHooks{
			Runner: &command.Local{Root: o.Env.Root.Dir()},
			Env:    []string{"PATH=/usr/bin:/bin"},
			Hooks: []config.Hook{
				{Name: "count", Command: "wc -c < {file}; echo \"edited=$WARDEN_EDITED_FILE\"", FilePatterns: []string{"*.go"}},
				{Name: "failing", Command: "echo lint says no; exit 2", FilePatterns: []string{"**/*.go"}},
				{Name: "slow", Command: "sleep 10", FilePatterns: []string{"*.slow"}, Timeout: 1},
				{Name: "chatty", Command: "yes | head -c 5000", FilePatterns: []string{"*.chatty"}},
			},
		}
	})
	write := func(path string) string {
		args, _ := json.Marshal(map[string]string{"path": path, "content": "package x\n"})
		res := f.eng.Call(context.Background(), "write_file", args)
		if !res.Success {
			t.Fatalf("%s: %+v", path, res)
		}
		return res.Output
	}
	out := write("main.go")
	for _, want := range []string{"[hook count on main.go: ok]", "10", "edited=main.go", "[hook failing on main.go: failed with status 2]", "lint says no"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if out := write("notes.txt"); strings.Contains(out, "[hook") {
		t.Errorf("a hook ran for a file it does not match:\n%s", out)
	}
	if out := write("x.slow"); !strings.Contains(out, "timed out") {
		t.Errorf("slow hook:\n%s", out)
	}
	if out := write("x.chatty"); len(out) > 1300 {
		t.Errorf("hook output not cut to %d chars: %d", HookOutputMax, len(out))
	}

	// A file name is model-controlled: it must not inject shell.
	canary := filepath.Join(f.dir, "pwned")
	out = write("a;touch pwned;b.go")
	if _, err := os.Stat(canary); err == nil {
		t.Fatalf("a file name injected a command into a hook:\n%s", out)
	}
	out = write("$(touch pwned).go")
	if _, err := os.Stat(canary); err == nil {
		t.Fatalf("a file name injected a command substitution into a hook:\n%s", out)
	}
}
