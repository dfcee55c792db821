package tools

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/workspace"
)

// envAt returns an Env over the existing directory dir.
func envAt(t testing.TB, dir string) *Env {
	t.Helper()
	root, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &Env{FS: root, Root: root, Config: config.Default()}
}

// runTool runs tool with args (marshalled to JSON), through its Guard first
// as the engine does.
func runTool(t testing.TB, tool *Tool, env *Env, args any) (string, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Guard != nil {
		if _, err := tool.Guard(env, b); err != nil {
			return "", err
		}
	}
	return tool.Run(context.Background(), env, b)
}

func goroot(tb testing.TB) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skipf("go env GOROOT: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "src")
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("no Go source tree: %v", err)
	}
	return dir
}

func BenchmarkGrep(b *testing.B) {
	env := envAt(b, goroot(b))
	for _, pat := range []string{"func main", `errors\.New\("[a-z]+ failed`, "TODO|FIXME"} {
		for _, ic := range []bool{false, true} {
			name := pat
			if ic {
				name += "/i"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if _, err := runTool(b, Grep(), env, map[string]any{"pattern": pat, "ignore_case": ic}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
