package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Ignored trees are neither recorded nor touched by an undo; the rules are
// the checkpoint's own, so a .gitignore written after it changes nothing.
func TestIgnoredPathsLeftAlone(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, &Options{Ignore: []string{"*.log", "!keep.log", "/scratch/"}})
	fx.write(t, ".gitignore", "build/\n*.o\n", 0o644)
	fx.write(t, "src/.gitignore", "gen.go\n", 0o644)
	fx.write(t, ".git/info/exclude", "local-notes\n", 0o644)
	fx.write(t, "node_modules/pkg/index.js", "module", 0o644)
	fx.write(t, "build/out", "binary", 0o755)
	fx.write(t, "src/a.o", "obj", 0o644)
	fx.write(t, "src/gen.go", "generated", 0o644)
	fx.write(t, "gen.go", "not ignored at the top", 0o644)
	fx.write(t, "local-notes", "mine", 0o644)
	fx.write(t, "x.log", "log", 0o644)
	fx.write(t, "keep.log", "kept", 0o644)
	fx.write(t, "scratch/tmp", "t", 0o644)
	fx.write(t, "src/main.go", "package main", 0o644)
	c := fx.checkpoint(t)
	o, err := fx.store.objects()
	must(t, err)
	defer o.close()
	tree, err := fx.store.loadRecordTree(o, c, map[hash]*dirNode{})
	must(t, err)
	var recorded []string
	walkFiles(tree, "", func(rel string, e entry) {
		if e.kind == kindFile {
			recorded = append(recorded, rel)
		}
	})
	want := []string{".git/info/exclude", ".gitignore", "gen.go", "keep.log", "src/.gitignore", "src/main.go"}
	slices.Sort(recorded)
	if !slices.Equal(recorded, want) {
		t.Errorf("recorded %q, want %q", recorded, want)
	}

	// Change ignored and recorded files, add new ignored ones, and make
	// the .gitignore ignore everything: the undo restores what was
	// recorded, keeps what was ignored (old and new), and puts the
	// .gitignore back.
	for _, p := range []string{"node_modules/pkg/index.js", "build/out", "x.log", "src/gen.go"} {
		fx.write(t, p, "changed", 0o644)
	}
	fx.write(t, "node_modules/new/x.js", "new", 0o644)
	fx.write(t, "build/new", "new", 0o644)
	fx.write(t, ".gitignore", "*\n", 0o644)
	fx.write(t, "src/main.go", "broken", 0o644)
	must(t, os.Remove(fx.path("keep.log")))
	fx.write(t, "added.txt", "remove me", 0o644)
	ignoredBefore := map[string]string{}
	for _, p := range []string{"node_modules/pkg/index.js", "node_modules/new/x.js", "build/out", "build/new", "x.log", "src/gen.go", "src/a.o", "scratch/tmp", "local-notes"} {
		b, err := os.ReadFile(fx.path(p))
		must(t, err)
		ignoredBefore[p] = string(b)
	}
	fx.undo(t, c)
	for p, want := range ignoredBefore {
		if b, err := os.ReadFile(fx.path(p)); err != nil || string(b) != want {
			t.Errorf("ignored %s = %q, %v; want it left as %q", p, b, err, want)
		}
	}
	for p, want := range map[string]string{".gitignore": "build/\n*.o\n", "src/main.go": "package main", "keep.log": "kept"} {
		if b, _ := os.ReadFile(fx.path(p)); string(b) != want {
			t.Errorf("%s = %q, want %q", p, b, want)
		}
	}
	if _, err := os.Lstat(fx.path("added.txt")); !os.IsNotExist(err) {
		t.Errorf("added.txt survived the undo: %v", err)
	}
}

// A restore never removes a git object (a repack may hold the only copy of
// what the restored refs need), but does restore refs and the index.
func TestGitObjectsNeverRemoved(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.write(t, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	fx.write(t, ".git/refs/heads/main", "aaaa\n", 0o644)
	fx.write(t, ".git/objects/aa/aaaa", "object a", 0o444)
	fx.write(t, ".git/config", "[core]\n", 0o644)
	c := fx.checkpoint(t)
	fx.write(t, ".git/refs/heads/main", "bbbb\n", 0o644)
	fx.write(t, ".git/objects/bb/bbbb", "object b", 0o444)
	fx.write(t, ".git/objects/pack/pack-1.pack", "pack", 0o444)
	fx.write(t, ".git/config", "[core]\nfsmonitor = evil\n", 0o644)
	res := fx.undo(t, c)
	if b, _ := os.ReadFile(fx.path(".git/refs/heads/main")); string(b) != "aaaa\n" {
		t.Errorf("ref = %q; notes %q", b, res.Plan.Notes)
	}
	for _, p := range []string{".git/objects/bb/bbbb", ".git/objects/pack/pack-1.pack", ".git/objects/aa/aaaa"} {
		if _, err := os.Stat(fx.path(p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// .git/config is protected: the restore never writes it, and says so.
	if b, _ := os.ReadFile(fx.path(".git/config")); !strings.Contains(string(b), "evil") {
		t.Errorf(".git/config was written by the restore")
	}
	if !strings.Contains(strings.Join(res.Plan.Notes, "\n"), ".git/config is protected") {
		t.Errorf("notes %q", res.Plan.Notes)
	}
}

// Files over max_file_bytes are noted, not recorded, and left alone.
func TestTooLargeSkipped(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, &Options{MaxFileBytes: 1000})
	fx.write(t, "big.bin", strings.Repeat("x", 2000), 0o644)
	fx.write(t, "small", "s", 0o644)
	c := fx.checkpoint(t)
	if c.SkippedCount != 1 || c.Skipped[0].Path != "big.bin" || !strings.Contains(c.Note(), "big.bin (larger than max_file_bytes (1000))") {
		t.Fatalf("skipped %+v, note %q", c.Skipped, c.Note())
	}
	fx.write(t, "big.bin", "now small", 0o644)
	fx.write(t, "small", "changed", 0o644)
	res := fx.undo(t, c)
	if b, _ := os.ReadFile(fx.path("big.bin")); string(b) != "now small" {
		t.Errorf("big.bin = %q: an unrecorded file was touched", b)
	}
	if !strings.Contains(strings.Join(res.Plan.Notes, "\n"), "big.bin cannot be restored") {
		t.Errorf("notes %q", res.Plan.Notes)
	}
	if b, _ := os.ReadFile(fx.path("small")); string(b) != "s" {
		t.Errorf("small = %q", b)
	}
}

// A checkpoint whose new content alone exceeds max_bytes fails before
// anything is stored; the call it was for must not run.
func TestCheckpointOverMaxBytes(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, &Options{MaxBytes: 1000})
	fx.write(t, "a", strings.Repeat("a", 800), 0o644)
	fx.write(t, "b", strings.Repeat("b", 800), 0o644)
	_, err := fx.store.Checkpoint(context.Background(), Call{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "raise [checkpoints] max_bytes") {
		t.Fatalf("err = %v", err)
	}
	if all, _ := fx.store.List(); len(all) != 0 {
		t.Errorf("%d checkpoints listed after a failed one", len(all))
	}
}

// Undo applies the plan that was shown, or nothing.
func TestUndoExpectsThePlanShown(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.write(t, "a", "1", 0o644)
	c := fx.checkpoint(t)
	fx.write(t, "a", "2", 0o644)
	p, err := fx.store.Plan(context.Background(), c)
	must(t, err)
	fx.write(t, "b", "appeared after the plan was shown", 0o644)
	_, err = fx.store.Undo(context.Background(), c, &UndoOptions{Expect: p.Digest})
	if !errors.Is(err, ErrPlanChanged) {
		t.Fatalf("err = %v, want ErrPlanChanged", err)
	}
	if b, _ := os.ReadFile(fx.path("a")); string(b) != "2" {
		t.Errorf("a = %q: something was applied", b)
	}
	p, err = fx.store.Plan(context.Background(), c)
	must(t, err)
	_, err = fx.store.Undo(context.Background(), c, &UndoOptions{Expect: p.Digest})
	must(t, err)
	// An empty plan changes nothing and takes no checkpoint.
	n := len(mustList(t, fx))
	res, err := fx.store.Undo(context.Background(), c, nil)
	must(t, err)
	if !res.Plan.Empty() || res.Before != nil || len(mustList(t, fx)) != n {
		t.Errorf("second undo: plan %v, before %v", res.Plan.Ops, res.Before)
	}
}

func mustList(t *testing.T, fx *fixture) []*Checkpoint {
	t.Helper()
	all, err := fx.store.List()
	must(t, err)
	return all
}

func TestGetByPrefix(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	c := fx.checkpoint(t)
	for _, id := range []string{c.ID, c.ID[:6], strings.ToUpper(c.ID[:8]), " " + c.ID + " "} {
		got, err := fx.store.Get(id)
		if err != nil || got.ID != c.ID {
			t.Errorf("Get(%q) = %v, %v", id, got, err)
		}
	}
	for _, id := range []string{c.ID[:5], "", "zzzzzz", c.ID + "0", "../../x"} {
		if _, err := fx.store.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", id, err)
		}
	}
	// Two records sharing a prefix: ambiguous.
	rf, _ := fx.store.recordFiles()
	twin := *c
	twin.ID, twin.Seq = c.ID[:6]+"ffffff", c.Seq+1
	if twin.ID == c.ID {
		twin.ID = c.ID[:6] + "eeeeee"
	}
	must(t, fx.store.writeRecord(&twin))
	if _, err := fx.store.Get(c.ID[:6]); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("Get(shared prefix) = %v, want ErrAmbiguous", err)
	}
	_ = rf
}

// Pruning keeps the newest checkpoints within keep and max_bytes, and
// every checkpoint it keeps still restores exactly.
func TestPruneKeepsNewestWithinMaxBytes(t *testing.T) {
	t.Parallel()
	const maxBytes = 1 << 20
	fx := newFixture(t, &Options{MaxBytes: maxBytes, Keep: 50})
	var cps []*Checkpoint
	var states []map[string]string
	for i := range 12 {
		// 300 KB of new, incompressible content per checkpoint.
		data := make([]byte, 300<<10)
		for j := range data {
			data[j] = byte((i*7919 + j*31) ^ (j >> 7))
		}
		if i > 0 {
			must(t, os.Remove(fx.path(fmt.Sprintf("f%02d.bin", i-1))))
		}
		must(t, os.WriteFile(fx.path(fmt.Sprintf("f%02d.bin", i)), data, 0o644))
		states = append(states, snapshot(t, fx.ws))
		cps = append(cps, fx.checkpoint(t))
		if used := packBytes(t, fx.store.Dir()); used > maxBytes && i > 0 {
			t.Fatalf("after checkpoint %d the store holds %d bytes > max_bytes %d", i, used, maxBytes)
		}
	}
	kept := mustList(t, fx)
	if len(kept) != 3 { // 3 × 300 KiB fit in 1 MiB, 4 do not
		t.Fatalf("kept %d checkpoints", len(kept))
	}
	for i, c := range kept {
		want := cps[len(cps)-len(kept)+i]
		if c.ID != want.ID {
			t.Fatalf("kept %s, want the newest ones (%s at %d)", c.ID, want.ID, i)
		}
	}
	// Each kept checkpoint restores its own state.
	for i := len(kept) - 1; i >= 0; i-- {
		k := len(cps) - len(kept) + i
		c, err := fx.store.Get(kept[i].ID)
		must(t, err)
		_, err = fx.store.Undo(context.Background(), c, nil)
		must(t, err)
		sameTree(t, states[k], snapshot(t, fx.ws), fmt.Sprintf("restore of kept checkpoint %d", k))
	}

	// keep bounds the count.
	fx2 := newFixture(t, &Options{Keep: 3})
	for i := range 8 {
		fx2.write(t, "f", fmt.Sprint(i), 0o644)
		fx2.checkpoint(t)
	}
	if n := len(mustList(t, fx2)); n != 3 {
		t.Errorf("keep = 3 kept %d", n)
	}
	must(t, fx2.store.Prune(context.Background()))
	o, err := fx2.store.objects()
	must(t, err)
	defer o.close()
	if n := len(o.loc); n > 3*3 {
		t.Errorf("%d objects after a full prune, want those of 3 checkpoints", n)
	}
}

func packBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	m, _ := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	for _, p := range m {
		st, err := os.Stat(p)
		must(t, err)
		n += st.Size()
	}
	return n
}

// Many checkpoints make many small packs; they are consolidated so that a
// checkpoint reads few indexes, and nothing is lost on the way.
func TestPacksConsolidated(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	var cps []*Checkpoint
	var states []map[string]string
	for i := range maxPacks + 8 {
		fx.write(t, fmt.Sprintf("f%d", i%5), fmt.Sprint(i), 0o644)
		states = append(states, snapshot(t, fx.ws))
		cps = append(cps, fx.checkpoint(t))
	}
	idx, _ := filepath.Glob(filepath.Join(fx.store.Dir(), "packs", "*.idx"))
	if len(idx) > maxPacks {
		t.Errorf("%d packs", len(idx))
	}
	for _, k := range []int{0, 7, len(cps) - 1} {
		fx.undo(t, cps[k])
		sameTree(t, states[k], snapshot(t, fx.ws), fmt.Sprintf("checkpoint %d", k))
	}
}

// History and Changes say what each call changed: up to the next
// checkpoint, or up to now for the newest.
func TestHistoryAndChanges(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.write(t, "b", "b\n", 0o644)
	c1 := fx.checkpoint(t)
	fx.write(t, "a", "one\ntwo\n", 0o644) // the call after c1 adds a
	c2 := fx.checkpoint(t)
	fx.write(t, "a", "one\n2\nthree\n", 0o644) // modifies a
	c3 := fx.checkpoint(t)
	must(t, os.Remove(fx.path("b"))) // deletes b, not yet checkpointed
	h, err := fx.store.History(context.Background())
	must(t, err)
	var got []string
	for _, e := range h {
		got = append(got, fmt.Sprintf("%s:%d%s", e.ID, e.Changed, e.Error))
	}
	want := []string{c1.ID + ":1", c2.ID + ":1", c3.ID + ":1"}
	if !slices.Equal(got, want) {
		t.Errorf("history %v, want %v", got, want)
	}
	ch, err := fx.store.Changes(context.Background(), c2)
	must(t, err)
	if len(ch) != 1 || ch[0].Path != "a" || ch[0].Change != ChangeModified || ch[0].Added != 2 || ch[0].Removed != 1 {
		t.Errorf("changes after c2: %+v", ch)
	}
	ch, err = fx.store.Changes(context.Background(), c3)
	must(t, err)
	if len(ch) != 1 || ch[0].Path != "b" || ch[0].Change != ChangeDeleted {
		t.Errorf("changes after c3 (the newest): %+v", ch)
	}
}

// Pruning and consolidation together, over many checkpoints with a small
// keep: every kept checkpoint stays whole and restores its state.
func TestPruneAndConsolidateKeepCheckpointsWhole(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, &Options{Keep: 12})
	states := map[string]map[string]string{}
	for i := range 3*maxPacks + 5 {
		fx.write(t, fmt.Sprintf("f%d", i%7), strings.Repeat(fmt.Sprint(i), 100+i), 0o644)
		if i%5 == 0 {
			os.Remove(fx.path(fmt.Sprintf("f%d", (i+3)%7)))
		}
		st := snapshot(t, fx.ws)
		c := fx.checkpoint(t)
		states[c.ID] = st
	}
	n, err := fx.store.Verify(context.Background())
	if err != nil || n != 12 {
		t.Fatalf("verify: %d checkpoints, %v", n, err)
	}
	idx, _ := filepath.Glob(filepath.Join(fx.store.Dir(), "packs", "*.idx"))
	if len(idx) > maxPacks {
		t.Errorf("%d packs", len(idx))
	}
	for _, c := range mustList(t, fx) {
		fx.undo(t, c)
		sameTree(t, states[c.ID], snapshot(t, fx.ws), "checkpoint "+c.ID)
	}
}
