package checkpoint

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/testenv"
)

// mutations change a generated tree the way agents do.
var mutations = map[string]func(t *testing.T, fx *fixture, r *rand.Rand){
	"delete": func(t *testing.T, fx *fixture, r *rand.Rand) {
		for _, p := range pick(t, fx, r, "", 40) {
			must(t, os.RemoveAll(fx.path(p)))
		}
	},
	"overwrite": func(t *testing.T, fx *fixture, r *rand.Rand) {
		for _, p := range pick(t, fx, r, "file", 200) {
			if _, err := os.Lstat(fx.path(p)); err == nil {
				must(t, os.WriteFile(fx.path(p), []byte(fmt.Sprintf("overwritten %d\n", r.IntN(1e6))), 0o644))
			}
		}
	},
	"rename": func(t *testing.T, fx *fixture, r *rand.Rand) {
		for i, p := range pick(t, fx, r, "", 60) {
			if _, err := os.Lstat(fx.path(p)); err != nil {
				continue // moved away with its parent
			}
			dst := fmt.Sprintf("moved-%d-%s", i, filepath.Base(p))
			must(t, os.Rename(fx.path(p), fx.path(dst)))
		}
	},
	"chmod": func(t *testing.T, fx *fixture, r *rand.Rand) {
		for _, p := range pick(t, fx, r, "file dir", 200) {
			perm := []fs.FileMode{0o600, 0o755, 0o700, 0o444}[r.IntN(4)]
			must(t, os.Chmod(fx.path(p), perm))
		}
	},
	"retype": func(t *testing.T, fx *fixture, r *rand.Rand) {
		for _, p := range pick(t, fx, r, "", 30) {
			fp := fx.path(p)
			st, err := os.Lstat(fp)
			if err != nil {
				continue
			}
			must(t, os.RemoveAll(fp))
			switch {
			case st.IsDir():
				must(t, os.WriteFile(fp, []byte("was a directory"), 0o644))
			case st.Mode()&fs.ModeSymlink != 0:
				must(t, os.Mkdir(fp, 0o755))
				must(t, os.WriteFile(filepath.Join(fp, "inside"), nil, 0o644))
			default:
				must(t, os.Symlink("/etc", fp))
			}
		}
	},
	"sed": func(t *testing.T, fx *fixture, r *rand.Rand) {
		sed := testenv.Need(t, "sed", "find")
		cmd := exec.Command(sed[1], ".", "-type", "f", "-exec", sed[0], "-i", "s/value/VALUE/g; s/line 1 /LINE ONE /", "{}", "+")
		cmd.Dir = fx.ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sed -i over the tree: %v\n%s", err, out)
		}
	},
}

// pick returns up to n paths of the workspace whose snapshot description
// starts with one of the words of want ("": any), at random.
func pick(t *testing.T, fx *fixture, r *rand.Rand, want string, n int) []string {
	t.Helper()
	var all []string
	for p, desc := range snapshot(t, fx.ws) {
		kind, _, _ := strings.Cut(desc, " ")
		if want == "" || slices.Contains(strings.Fields(want), kind) {
			all = append(all, p)
		}
	}
	slices.Sort(all)
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:min(n, len(all))]
}

// TestRoundTrip checkpoints a generated tree (thousands of files, nested
// directories, modes, links, empty, binary and unicode-named files),
// changes it, restores it, and restores the restore.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	n := 3000
	if testing.Short() {
		n = 500
	}
	keys := []string{"delete", "overwrite", "rename", "chmod", "retype", "sed"}
	for i, name := range append(keys, "all") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, nil)
			genTree(t, fx.ws, uint64(i+1), n, fx.out)
			before := snapshot(t, fx.ws)
			c := fx.checkpoint(t)
			if c.Files == 0 || c.SkippedCount != 0 {
				t.Fatalf("checkpoint recorded %d files, skipped %v", c.Files, c.Skipped)
			}
			r := rand.New(rand.NewPCG(uint64(i), 7))
			if name == "all" {
				for _, k := range keys {
					mutations[k](t, fx, r)
				}
			} else {
				mutations[name](t, fx, r)
			}
			after := snapshot(t, fx.ws)
			if len(after) == len(before) && fmt.Sprint(after) == fmt.Sprint(before) {
				t.Fatal("the mutation changed nothing")
			}
			res := fx.undo(t, c)
			sameTree(t, before, snapshot(t, fx.ws), "after undo")
			if res.Before == nil || res.Before.Reason != ReasonUndo || res.Before.UndoTo != c.ID {
				t.Fatalf("undo's own checkpoint: %+v", res.Before)
			}
			// The undo is undoable.
			fx.undo(t, res.Before)
			sameTree(t, after, snapshot(t, fx.ws), "after undoing the undo")
			if got := snapshot(t, fx.out); len(got) != 1 || !strings.HasPrefix(got["secret"], "file 0644 7 ") {
				t.Fatalf("outside changed: %v", got)
			}
		})
	}
}

// An unchanged tree costs no new content: the second checkpoint shares
// every object with the first, and its plan is empty.
func TestIncrementalSharesContent(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	genTree(t, fx.ws, 42, 400, fx.out)
	c1 := fx.checkpoint(t)
	c2 := fx.checkpoint(t)
	if c2.NewBytes != 0 || c2.Tree != c1.Tree {
		t.Errorf("second checkpoint of an unchanged tree added %d bytes (tree %s vs %s)", c2.NewBytes, c2.Tree, c1.Tree)
	}
	fx.write(t, "one-more.txt", "x", 0o644)
	c3 := fx.checkpoint(t)
	if c3.Tree == c2.Tree || c3.NewBytes == 0 || c3.NewBytes > 64<<10 {
		t.Errorf("checkpoint after one new file added %d bytes", c3.NewBytes)
	}
	p, err := fx.store.Plan(context.Background(), c3)
	must(t, err)
	if !p.Empty() {
		t.Errorf("plan right after a checkpoint is not empty: %+v", p.Ops)
	}
}
