package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestSmallRoundTrip(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.write(t, "a.txt", "hello\n", 0o644)
	fx.write(t, "src/main.go", "package main\n", 0o600)
	fx.write(t, "bin/run.sh", "#!/bin/sh\n", 0o755)
	must(t, os.Symlink("../a.txt", fx.path("src/link")))
	before := snapshot(t, fx.ws)
	c := fx.checkpoint(t)

	must(t, os.RemoveAll(fx.path("src")))
	fx.write(t, "a.txt", "changed\n", 0o644)
	must(t, os.Chmod(fx.path("bin/run.sh"), 0o644))
	fx.write(t, "new.txt", "new", 0o644)

	p, err := fx.store.Plan(context.Background(), c)
	must(t, err)
	if p.Empty() {
		t.Fatal("empty plan after changes")
	}
	for _, op := range p.Ops {
		t.Logf("%s %s %s", op.Op, op.Path, op.Change)
	}
	fx.undo(t, c)
	sameTree(t, before, snapshot(t, fx.ws), "after undo")
	if _, err := os.Stat(filepath.Join(fx.store.Dir(), "undo.json")); !os.IsNotExist(err) {
		t.Errorf("journal left behind: %v", err)
	}
}
