package bwrap_test

import (
	"context"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/bwrap"
	"github.com/wardenhq/warden/internal/testenv"
)

// TestJailShowsOnlyTheAllowlist: what bubblewrap builds of the host's / and
// /etc is the allowlist and nothing else (a container shows its image's).
// Landlock is off: it would refuse to list / at all, and this is about the
// mounts. Toolchains are off: the host user's toolchain directories (say
// /root/go) would show their parents (jail_toolchains.txtar checks that
// nothing else of those does).
func TestJailShowsOnlyTheAllowlist(t *testing.T) {
	testenv.Need(t, "bwrap")
	t.Parallel()
	w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: t.TempDir(), Sandbox: &config.Sandbox{Enabled: true, Landlock: "off", NoToolchains: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ls := func(dir string) []string {
		res, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"ls", "-A", dir}, Timeout: 10 * time.Second})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("ls %s: %+v %v", dir, res, err)
		}
		return strings.Fields(res.Output)
	}
	allowed := map[string]bool{}
	for _, e := range bwrap.EtcAllowlist {
		allowed[strings.SplitN(strings.TrimPrefix(e, "/etc/"), "/", 2)[0]] = true
	}
	etc := ls("/etc")
	for _, name := range etc {
		if !allowed[name] {
			t.Errorf("/etc shows %s, which is not in the allowlist", name)
		}
	}
	if !slices.Contains(etc, "passwd") {
		t.Errorf("/etc lacks passwd, so the row above proves nothing: %v", etc)
	}
	for _, name := range ls("/") {
		if slices.Contains([]string{"root", "boot", "srv", "var", "mnt", "media", "snap"}, name) {
			t.Errorf("/ shows the host's /%s", name)
		}
	}
	if home := ls("/home"); !slices.Equal(home, []string{path.Base("/home/warden")}) {
		t.Errorf("/home shows %v, want only the jail's own HOME", home)
	}
}
