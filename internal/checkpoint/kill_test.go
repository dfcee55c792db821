package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wardenhq/warden/internal/sandbox/jailworker"
	"github.com/wardenhq/warden/internal/workspace"
)

// The test binary doubles as the process that the crash tests kill.
const childEnv = "WARDEN_CHECKPOINT_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		child(mode)
		os.Exit(0)
	}
	// The jails of jail_test.go re-execute this binary as their worker.
	if len(os.Args) > 3 && os.Args[1] == "worker" && os.Args[2] == "--spec" {
		if err := jailworker.Serve(context.Background(), os.Args[3], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func child(mode string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	root, err := workspace.Open(os.Getenv("WS"), &workspace.Options{GitDirContents: true})
	if err != nil {
		fail(err)
	}
	keep, _ := strconv.Atoi(os.Getenv("KEEP"))
	s, err := Open(root, &Options{StateDir: os.Getenv("STATE"), Keep: keep})
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	switch mode {
	case "checkpoint-loop":
		// Each round writes a new churn file (so packs are written) and
		// drops the index (so every file is read again).
		fmt.Println("ready")
		for n := 0; ; n++ {
			if err := os.WriteFile(filepath.Join(root.Dir(), "churn"), churn(n), 0o644); err != nil {
				fail(err)
			}
			os.Remove(filepath.Join(s.Dir(), "index"))
			if _, err := s.Checkpoint(ctx, Call{Tool: "loop"}); err != nil {
				fail(err)
			}
			fmt.Println("took")
		}
	case "undo":
		c, err := s.Get(os.Getenv("TARGET"))
		if err != nil {
			fail(err)
		}
		killAt, _ := strconv.Atoi(os.Getenv("KILL_AT"))
		fmt.Println("ready")
		_, err = s.Undo(ctx, c, &UndoOptions{testOnlyAfterOp: func(i int) {
			if i == killAt {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}})
		if err != nil {
			fail(err)
		}
	case "undo-loop":
		ids := strings.Fields(os.Getenv("TARGETS"))
		for i := 0; i < 2*len(ids)*3; i++ {
			c, err := s.Get(ids[i%len(ids)])
			if err != nil {
				fail(err)
			}
			if _, err := s.Undo(ctx, c, nil); err != nil {
				fail(err)
			}
			time.Sleep(time.Duration(i%5) * 10 * time.Millisecond) // let the other process at the lock
		}
	}
}

// churn is the content of the churn file in round n: its first line names
// n, so a restored one can be checked whole.
func churn(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 99))
	b := make([]byte, 3<<20)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return append([]byte(fmt.Sprintf("round %d\n", n)), b...)
}

func startChild(t *testing.T, mode string, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if stderr.Len() > 0 {
			t.Logf("child stderr: %s", stderr.String())
		}
	})
	return cmd, bufio.NewReader(out)
}

func waitReady(t *testing.T, r *bufio.Reader) {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child did not start: %q %v", line, err)
	}
}

// TestKillDuringCheckpoint kills a process taking checkpoints at random
// moments, again and again. Every checkpoint that is listed afterwards
// must be whole (every object present and matching its hash) and restore
// exactly what was there; and the store must take new checkpoints.
func TestKillDuringCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	t.Parallel()
	fx := newFixture(t, nil)
	genTree(t, fx.ws, 5, 1500, fx.out)
	base := snapshot(t, fx.ws)
	env := []string{"WS=" + fx.ws, "STATE=" + fx.state}
	// How long one round takes here (slow under -race, or a loaded
	// machine): kills land anywhere within three of them.
	must(t, os.WriteFile(fx.path("churn"), churn(0), 0o644))
	start := time.Now()
	fx.checkpoint(t)
	round := time.Since(start)
	r := rand.New(rand.NewPCG(3, 4))
	for kill := range 12 {
		cmd, out := startChild(t, "checkpoint-loop", env...)
		waitReady(t, out)
		if kill == 0 {
			// One whole checkpoint at least, before the first kill.
			if line, err := out.ReadString('\n'); err != nil || line != "took\n" {
				t.Fatalf("child: %q %v", line, err)
			}
		}
		time.Sleep(time.Duration(r.Int64N(int64(3 * round))))
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()

		fx.open(t, nil)
		n, err := fx.store.Verify(context.Background())
		if err != nil {
			t.Fatalf("kill %d: store damaged: %v", kill, err)
		}
		t.Logf("kill %d: %d checkpoints whole", kill, n)
	}
	// Every checkpoint restores the base tree plus one whole churn file.
	all := mustList(t, fx)
	if len(all) == 0 {
		t.Fatal("no checkpoint survived")
	}
	for _, c := range []*Checkpoint{all[0], all[len(all)/2], all[len(all)-1]} {
		fx.undo(t, c)
		got := snapshot(t, fx.ws)
		ch, err := os.ReadFile(fx.path("churn"))
		must(t, err)
		var n int
		if _, err := fmt.Sscanf(string(ch), "round %d\n", &n); err != nil || !bytes.Equal(ch, churn(n)) {
			t.Fatalf("checkpoint %s restored a churn file that no round wrote", c.ID)
		}
		delete(got, "churn")
		sameTree(t, base, got, "restored tree")
	}
	fx.checkpoint(t)
}

// TestKillDuringUndo kills an undo at every stage (after a random op, or
// at a random moment), then resumes or rolls it back: the workspace ends
// exactly as the target or exactly as before the undo, never between.
func TestKillDuringUndo(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	outcomes := map[string]int{}
	undoTime := 250 * time.Millisecond // measured on the first round
	for round := range 16 {
		fx := newFixture(t, nil)
		genTree(t, fx.ws, uint64(round), 600, fx.out)
		a := snapshot(t, fx.ws)
		c := fx.checkpoint(t)
		mr := rand.New(rand.NewPCG(uint64(round), 1))
		for _, k := range []string{"delete", "overwrite", "chmod", "retype"} {
			mutations[k](t, fx, mr)
		}
		b := snapshot(t, fx.ws)
		p, err := fx.store.Plan(context.Background(), c)
		must(t, err)
		if round == 0 {
			// Time an undo here and take it back, to aim the kills.
			start := time.Now()
			res := fx.undo(t, c)
			undoTime = time.Since(start)
			fx.undo(t, res.Before)
			sameTree(t, b, snapshot(t, fx.ws), "undo of the timing undo")
			p, err = fx.store.Plan(context.Background(), c)
			must(t, err)
		}

		killAt := -1
		if round%2 == 0 {
			killAt = r.IntN(len(p.Ops))
		}
		cmd, out := startChild(t, "undo", "WS="+fx.ws, "STATE="+fx.state, "TARGET="+c.ID, "KILL_AT="+strconv.Itoa(killAt))
		waitReady(t, out)
		if killAt < 0 {
			time.Sleep(time.Duration(r.Int64N(int64(2 * undoTime))))
			cmd.Process.Signal(syscall.SIGKILL)
		}
		cmd.Wait()

		fx.open(t, nil)
		j, err := fx.store.Pending()
		must(t, err)
		if jj, _ := Pending(fx.state, fx.root.Dir()); (jj == nil) != (j == nil) {
			t.Fatalf("round %d: Pending without the store disagrees", round)
		}
		got := snapshot(t, fx.ws)
		switch {
		case j == nil && fmt.Sprint(got) == fmt.Sprint(a):
			outcomes["finished"]++
		case j == nil:
			sameTree(t, b, got, fmt.Sprintf("round %d: no journal, so the workspace must be untouched", round))
			outcomes["not started"]++
		case r.IntN(2) == 0:
			_, err := fx.store.Resume(context.Background())
			must(t, err)
			sameTree(t, a, snapshot(t, fx.ws), fmt.Sprintf("round %d: resumed", round))
			outcomes["resumed"]++
		default:
			_, err := fx.store.Rollback(context.Background())
			must(t, err)
			sameTree(t, b, snapshot(t, fx.ws), fmt.Sprintf("round %d: rolled back", round))
			outcomes["rolled back"]++
		}
		if _, err := fx.store.Verify(context.Background()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		fx.checkpoint(t) // no undo pending any more
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["resumed"]+outcomes["rolled back"] == 0 {
		t.Error("no kill landed inside an undo")
	}
}

// TestConcurrentCheckpointAndUndo: one process undoes back and forth
// between two states while this one takes checkpoints. The lock makes each
// checkpoint see one state or the other, never a mix.
func TestConcurrentCheckpointAndUndo(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	fx := newFixture(t, &Options{Keep: 10000})
	genTree(t, fx.ws, 9, 800, fx.out)
	c1 := fx.checkpoint(t)
	mr := rand.New(rand.NewPCG(9, 9))
	for _, k := range []string{"delete", "overwrite", "chmod"} {
		mutations[k](t, fx, mr)
	}
	c2 := fx.checkpoint(t)
	cmd, _ := startChild(t, "undo-loop", "WS="+fx.ws, "STATE="+fx.state, "TARGETS="+c1.ID+" "+c2.ID, "KEEP=10000")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	trees := map[string]bool{c1.Tree: true, c2.Tree: true}
	n := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("undo process: %v", err)
			}
			for _, c := range mustList(t, fx) {
				if !trees[c.Tree] {
					t.Fatalf("checkpoint %s (%s) saw a state between the two", c.ID, c.Reason)
				}
			}
			t.Logf("%d checkpoints taken during the undos", n)
			return
		default:
		}
		c, err := fx.store.Checkpoint(context.Background(), Call{Tool: "concurrent"})
		must(t, err)
		if !trees[c.Tree] {
			t.Fatalf("checkpoint %d saw a state between the two", n)
		}
		n++
		time.Sleep(time.Duration(n%7) * time.Millisecond) // let the other process at the lock
	}
}
