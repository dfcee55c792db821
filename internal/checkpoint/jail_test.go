package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/testenv"
)

// TestJailCannotReachStore runs commands in the workspace's real jail
// (bubblewrap, as warden runs them) after a checkpoint: the store is
// neither readable nor writable from inside, by its path or by a search,
// and a command cannot plant a checkpoint there. The state directory is
// not among what the jail binds (doc.go), whether it sits under /tmp (the
// jail has its own) or elsewhere on the host.
func TestJailCannotReachStore(t *testing.T) {
	testenv.Need(t, "bwrap")
	for _, where := range []string{"tmp", "var-tmp"} {
		t.Run(where, func(t *testing.T) {
			var opts *Options
			if where == "var-tmp" {
				dir, err := os.MkdirTemp("/var/tmp", "warden-state-")
				must(t, err)
				t.Cleanup(func() { os.RemoveAll(dir) })
				opts = &Options{StateDir: dir}
			}
			jailCannotReach(t, opts)
		})
	}
}

func jailCannotReach(t *testing.T, opts *Options) {
	fx := newFixture(t, nil)
	if opts != nil {
		fx.state = opts.StateDir
		fx.open(t, opts)
	}
	fx.write(t, "src/main.go", "package main // "+secret+"\n", 0o644)
	c := fx.checkpoint(t)
	exe, err := os.Executable()
	must(t, err)
	w, err := sandbox.Start(context.Background(), &sandbox.Options{
		Workspace: fx.root.Dir(), Sandbox: &config.Sandbox{Enabled: true, Backend: "local"},
		Executable: exe, StartTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatalf("start the jail: %v", err)
	}
	defer w.Close()
	run := func(shell string) string {
		t.Helper()
		res, err := w.Runner().Run(context.Background(), command.Spec{Shell: shell, Timeout: 60 * time.Second})
		must(t, err)
		return res.Output
	}
	store := fx.store.Dir()
	record := filepath.Join(store, "records", fmt.Sprintf("%012d-%s.json", c.Seq, c.ID))
	if _, err := os.Stat(record); err != nil {
		t.Fatal(err)
	}
	for _, shell := range []string{
		"cat " + record,
		"ls " + store,
		"ls " + filepath.Dir(store),
		"ls " + fx.state,
		"touch " + filepath.Join(store, "planted"),
	} {
		if out := run(shell + " && echo REACHED"); strings.Contains(out, "REACHED") {
			t.Errorf("the jail reached the store: %q\n%s", shell, out)
		}
	}
	// Where the jail has its own /tmp, a command may make the store's
	// path there; that is not the store.
	run("mkdir -p " + filepath.Join(store, "records") + " && echo forged > " + filepath.Join(store, "records", "000000000099-aaaaaaaaaaaa.json"))

	// Search every directory the jail may see (its root itself cannot be
	// listed) for the recorded content: only the workspace's own file
	// holds it (which shows that the search works).
	dirs := "/tmp /var /home /root /run /srv /mnt /opt /etc " + filepath.Dir(fx.root.Dir())
	out := run("for d in " + dirs + "; do [ -d $d ] && grep -rlI " + secret + " $d 2>/dev/null; [ -d $d ] && find $d \\( -name '*.pack' -o -name '*.idx' -o -name undo.json \\) -print 2>/dev/null; done; true")
	found := slices.Compact(slices.Sorted(slices.Values(strings.Fields(out))))
	if len(found) != 1 || found[0] != filepath.Join(fx.root.Dir(), "src/main.go") {
		t.Errorf("searching the jail for the store found %q, want only the workspace's own file", found)
	}
	for _, p := range []string{filepath.Join(store, "planted"), filepath.Join(store, "records", "000000000099-aaaaaaaaaaaa.json")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created on the host", p)
		}
	}
	if n, err := fx.store.Verify(context.Background()); err != nil || n != 1 {
		t.Errorf("store after the jail: %d checkpoints, %v", n, err)
	}
}
