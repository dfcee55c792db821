package rulefile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/config"
)

const userConfig = `# my settings
[security]
confirm_mode = "confirm-sensitive"

[[rules]]
command = ["make", "lint"]
decision = "allow"

[commands]
max_output_lines = 300
`

func always(id string, words ...string) config.Rule {
	return config.Rule{ID: id, Workspace: "/w/p", Command: words, Exact: true, Decision: "allow",
		RequestID: "req-" + id, Created: "2026-01-02T03:04:05Z"}
}

func TestAddThenRemoveKeepsTheRest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(userConfig), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Add(path, []config.Rule{always("a1", "go", "test", "./..."), always("a2", "git", "push")}); err != nil {
		t.Fatal(err)
	}
	got, err := config.FileRules(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1].ID != "a1" || got[2].ID != "a2" || !got[1].Exact || got[2].Workspace != "/w/p" {
		t.Fatalf("rules after adding: %+v", got)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", st.Mode().Perm())
	}
	// The rules load with the whole config, from another process's view.
	ld, err := config.Load(config.LoadOptions{UserFile: path, WorkspaceDir: t.TempDir(), Getenv: func(string) (string, bool) { return "", false }})
	if err != nil || len(ld.Config.Rules) != 3 || ld.Config.Commands.MaxOutputLines != 300 {
		t.Fatalf("load: %v %+v", err, ld)
	}
	r, err := Remove(path, "a1")
	if err != nil || r.ID != "a1" {
		t.Fatalf("remove: %v %+v", err, r)
	}
	if _, err := Remove(path, "a2"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if diff := cmp.Diff(userConfig, string(data)); diff != "" {
		t.Errorf("the file is not what it was (-want +got):\n%s", diff)
	}
	if _, err := Remove(path, "a2"); err == nil || !strings.Contains(err.Error(), "no rule with this id") {
		t.Errorf("removing twice: %v", err)
	}
	if _, err := Remove(path, ""); err == nil {
		t.Error("removed a rule without an id")
	}
}

// Values from an agent's call cannot add keys or tables to the file.
func TestInjectedValuesStayStrings(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	evil := []string{"x\"\n[security]\nconfirm_mode = \"yolo\"\n#", "a'b", "tab\there", "\u202eRTL", `back\slash`, "nul\x00"}
	r := always("e1", evil...)
	r.Workspace = "/w/\"]\n[sandbox]\nenabled = false\n"
	if err := Add(path, []config.Rule{r}); err != nil {
		t.Fatal(err)
	}
	got, err := config.FileRules(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !cmp.Equal(got[0].Command, evil) || got[0].Workspace != r.Workspace {
		t.Fatalf("round trip: %+v", got)
	}
	ld, err := config.Load(config.LoadOptions{UserFile: path, WorkspaceDir: t.TempDir(), Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if ld.Config.Security.ConfirmMode != config.ModeConfirmSensitive || ld.Config.Sandbox != nil {
		t.Fatalf("a value changed the configuration: %+v", ld.Config.Security)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	yaml := filepath.Join(dir, "config.yaml")
	if err := Add(yaml, []config.Rule{always("y", "ls")}); err == nil || !strings.Contains(err.Error(), "TOML") {
		t.Errorf("yaml: %v", err)
	}
	broken := filepath.Join(dir, "broken.toml")
	if err := os.WriteFile(broken, []byte("[security]\nconfirm_mode = \"sometimes\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Add(broken, []config.Rule{always("b", "ls")}); err == nil || !strings.Contains(err.Error(), "does not load") {
		t.Errorf("broken: %v", err)
	}
	if data, _ := os.ReadFile(broken); string(data) != "[security]\nconfirm_mode = \"sometimes\"\n" {
		t.Error("a file that did not load was changed")
	}
	ok := filepath.Join(dir, "ok.toml")
	if err := Add(ok, []config.Rule{always("d", "ls")}); err != nil {
		t.Fatal(err)
	}
	if err := Add(ok, []config.Rule{always("d", "ls")}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("duplicate id: %v", err)
	}
	if err := Add(ok, []config.Rule{{ID: "bad", Command: []string{"a*b"}, Decision: "allow"}}); err == nil || !strings.Contains(err.Error(), "would not load") {
		t.Errorf("invalid rule: %v", err)
	}
	if err := os.Symlink(ok, filepath.Join(dir, "link.toml")); err != nil {
		t.Fatal(err)
	}
	if err := Add(filepath.Join(dir, "link.toml"), []config.Rule{always("l", "ls")}); err == nil {
		t.Error("edited through a symlink")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".rules-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Writers in parallel (other warden processes) lose nothing.
func TestConcurrentAdds(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "config.toml")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Add(path, []config.Rule{always(fmt.Sprintf("c%d", i), "echo", fmt.Sprint(i))}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := config.FileRules(path)
	if err != nil || len(got) != 16 {
		t.Fatalf("%d rules, %v", len(got), err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("a new user config has mode %v", st.Mode().Perm())
	}
}
