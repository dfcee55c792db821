package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/audit"
)

// These tests run the store in several real processes (this test binary
// re-executed with childRoleEnv set) on one database.

const (
	childRoleEnv = "WARDEN_STORE_TEST_ROLE"
	childDBEnv   = "WARDEN_STORE_TEST_DB"   // Locator: "sqlite:PATH" or a postgres URL
	childArgEnv  = "WARDEN_STORE_TEST_ARG"  // role argument
	childGoEnv   = "WARDEN_STORE_TEST_GOAT" // Unix ms at which racing children start
)

func childLocator() (Locator, error) {
	v := os.Getenv(childDBEnv)
	if strings.HasPrefix(v, "postgres://") {
		return Locator{Backend: BackendPostgres, URL: v}, nil
	}
	return ParseLocator(v, "")
}

// runChild is the body of a child process.
func runChild(role string) int {
	if err := child(role); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func child(role string) error {
	l, err := childLocator()
	if err != nil {
		return err
	}
	if at, _ := strconv.ParseInt(os.Getenv(childGoEnv), 10, 64); at > 0 {
		time.Sleep(time.Until(time.UnixMilli(at)))
	}
	ctx := context.Background()
	s, err := Open(ctx, l, os.Getenv, &Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer s.Close()
	arg := os.Getenv(childArgEnv)
	switch role {
	case "migrate":
		return nil
	case "write":
		// arg: "N": N rounds of create, decide (racing the other
		// children's deciders on its own and on others' requests) and a
		// free audit row.
		n, _ := strconv.Atoi(arg)
		for i := range n {
			a := newPending(time.Minute, CurrentOwner())
			if err := s.Create(ctx, a, &audit.Record{Event: "approval_request", Tool: a.Tool}); err != nil {
				return err
			}
			if _, err := s.Decide(ctx, a.ID, approve(fmt.Sprintf("pid%d", os.Getpid())), &audit.Record{Event: "approval", Decision: "approved"}); err != nil {
				return err
			}
			if _, err := s.AppendAudit(ctx, &audit.Record{Event: "note", Reason: strconv.Itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	case "decide":
		// arg: a request id; prints "won" or "lost".
		_, err := s.Decide(ctx, arg, approve(fmt.Sprintf("pid%d", os.Getpid())), &audit.Record{Event: "approval", Decision: "approved"})
		switch {
		case err == nil:
			fmt.Println("won")
		case errors.Is(err, ErrConflict):
			fmt.Println("lost")
		default:
			return err
		}
		return nil
	case "stream":
		// Eight writers deciding requests and appending audit rows (so
		// they share transactions) until the process is killed; each
		// result is printed once the store has returned it.
		var mu sync.Mutex
		for w := range 8 {
			go func() {
				for i := 0; ; i++ {
					a := newPending(time.Minute, CurrentOwner())
					if err := s.Create(ctx, a, nil); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					if _, err := s.Decide(ctx, a.ID, approve("stream"), &audit.Record{Event: "approval", Decision: "approved"}); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					mu.Lock()
					fmt.Println("D", a.ID)
					mu.Unlock()
					note := fmt.Sprintf("%d-%d", w, i)
					if _, err := s.AppendAudit(ctx, &audit.Record{Event: "note", Reason: note}); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					mu.Lock()
					fmt.Println("A", note)
					mu.Unlock()
				}
			}()
		}
		select {}
	case "hold":
		// arg: lease TTL. Holds a lease, creates a pending request, prints
		// its id and waits to be killed.
		ttl, _ := time.ParseDuration(arg)
		k, err := KeepLease(ctx, s, CurrentOwner(), ttl)
		if err != nil {
			return err
		}
		a := newPending(time.Hour, k.Owner())
		if err := s.Create(ctx, a, nil); err != nil {
			return err
		}
		fmt.Println(a.ID)
		select {}
	}
	return fmt.Errorf("unknown role %q", role)
}

func newPending(ttl time.Duration, o Owner) *Approval {
	now := time.Now()
	return &Approval{
		ID: fmt.Sprintf("%d-%032x", os.Getpid(), reqN.Add(1)), Tool: "run_command", Args: json.RawMessage(`{"command":"ls"}`),
		ArgsHash: "h", State: Pending, CreatedAt: now, ExpiresAt: now.Add(ttl), Owner: o,
	}
}

func childCmd(t *testing.T, l Locator, role, arg string, at time.Time) *exec.Cmd {
	t.Helper()
	target := l.URL
	if l.Backend == BackendSQLite {
		target = "sqlite:" + l.Path
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childDBEnv+"="+target, childArgEnv+"="+arg,
		childGoEnv+"="+strconv.FormatInt(at.UnixMilli(), 10))
	return cmd
}

// runChildren starts n children of role at once and returns their outputs.
func runChildren(t *testing.T, l Locator, n int, role string, arg func(i int) string) []string {
	t.Helper()
	at := time.Now().Add(time.Second) // all of them start together, after the exec
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		cmd := childCmd(t, l, role, arg(i), at)
		wg.Go(func() {
			out, err := cmd.Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Errorf("child %d (%s): %v: %s", i, role, err, ee.Stderr)
				} else {
					t.Errorf("child %d (%s): %v", i, role, err)
				}
			}
			outs[i] = strings.TrimSpace(string(out))
		})
	}
	wg.Wait()
	return outs
}

// Replicas starting at once against an empty database migrate it once.
func TestMigrationsRace(t *testing.T) { eachBackend(t, testMigrationsRace) }

func testMigrationsRace(t *testing.T, b backend) {
	l := b.locate(t)
	runChildren(t, l, 6, "migrate", func(int) string { return "" })
	s := openAt(t, l, nil)
	got, err := s.SchemaVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for _, m := range migrations {
		want = append(want, m.version)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("schema_migrations (-want +got):\n%s", d)
	}
}

// Writers in several processes keep one verifiable audit chain, and every
// one of their decisions is in it once.
func TestChainAcrossProcesses(t *testing.T) { eachBackend(t, testChainAcrossProcesses) }

func testChainAcrossProcesses(t *testing.T, b backend) {
	l := b.locate(t)
	s := openAt(t, l, nil)
	const procs, rounds = 4, 40
	runChildren(t, l, procs, "write", func(int) string { return strconv.Itoa(rounds) })
	n, _, err := s.VerifyAudit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(procs * rounds * 3); n != want {
		t.Errorf("%d audit rows, want %d", n, want)
	}
	list, err := s.List(context.Background(), Filter{State: Approved})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != procs*rounds {
		t.Errorf("%d approved requests, want %d", len(list), procs*rounds)
	}
	ch, _ := s.Changes(context.Background(), 0, 0)
	for i := 1; i < len(ch); i++ {
		if ch[i].Seq <= ch[i-1].Seq {
			t.Fatalf("change sequence not increasing: %d then %d", ch[i-1].Seq, ch[i].Seq)
		}
	}
}

// Deciders in several processes race for one request: exactly one wins.
func TestDecideAcrossProcesses(t *testing.T) { eachBackend(t, testDecideAcrossProcesses) }

func testDecideAcrossProcesses(t *testing.T, b backend) {
	l := b.locate(t)
	s := openAt(t, l, nil)
	a := pending(t, s, time.Minute)
	outs := runChildren(t, l, 6, "decide", func(int) string { return a.ID })
	won := 0
	for _, o := range outs {
		if o == "won" {
			won++
		}
	}
	if won != 1 {
		t.Fatalf("%d processes won the decision (%q), want 1", won, outs)
	}
	rows, _ := s.Audit(context.Background(), AuditFilter{Event: "approval"})
	if len(rows) != 1 {
		t.Errorf("%d decision audit rows, want 1", len(rows))
	}
}

// A process killed with SIGKILL while its request waits: the request is
// never claimed, and is CANCELLED once the lease runs out, whether a
// supervisor approved it in between or not.
func TestLeaseOfKilledProcess(t *testing.T) { eachBackend(t, testLeaseOfKilledProcess) }

func testLeaseOfKilledProcess(t *testing.T, b backend) {
	ctx := context.Background()
	l := b.locate(t)
	s := openAt(t, l, nil)
	const ttl = 1500 * time.Millisecond
	hold := func() (string, *exec.Cmd) {
		cmd := childCmd(t, l, "hold", ttl.String(), time.Time{})
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		id, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("hold: %v", err)
		}
		return strings.TrimSpace(id), cmd
	}
	idA, a := hold()  // killed, then approved before its lease runs out
	idB, bb := hold() // killed, left pending
	killedAt := time.Now()
	for _, c := range []*exec.Cmd{a, bb} {
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
	}
	if _, err := s.Decide(ctx, idA, approve("alice"), nil); err != nil {
		t.Fatalf("decide within the lease: %v", err)
	}
	// Nothing is swept while the leases hold.
	if swept, err := s.SweepOrphans(ctx, nil); err != nil || len(swept) != 0 {
		t.Fatalf("swept %d before the lease ran out (%v)", len(swept), err)
	}
	time.Sleep(time.Until(killedAt.Add(ttl + 200*time.Millisecond)))
	// A late decision on the dead caller's request is refused, and cancels it.
	_, err := s.Decide(ctx, idB, approve("bob"), nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.State != Cancelled {
		t.Fatalf("decision after the lease: %v, want a conflict naming CANCELLED", err)
	}
	swept, err := s.SweepOrphans(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{idA}, ids(swept)); d != "" {
		t.Errorf("swept (-want +got):\n%s", d)
	}
	for _, id := range []string{idA, idB} {
		got, _ := s.Get(ctx, id)
		if got.State != Cancelled || got.Claimed {
			t.Errorf("%s: %s claimed=%v, want CANCELLED, never claimed", id, got.State, got.Claimed)
		}
		if _, err := s.Claim(ctx, id); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: claimed after cancellation: %v", id, err)
		}
	}
	if _, _, err := s.VerifyAudit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A process killed with SIGKILL while eight of its writers decide and
// append (between any two statements of a shared transaction): every
// decision and audit row it had returned is in the database, the chain
// verifies, and the next process appends after it.
func TestKillDuringBatchedWrites(t *testing.T) { eachBackend(t, testKillDuringBatchedWrites) }

func testKillDuringBatchedWrites(t *testing.T, b backend) {
	l := b.locate(t)
	s := openAt(t, l, nil)
	ctx := context.Background()
	for round := range 2 {
		cmd := childCmd(t, l, "stream", "", time.Time{})
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var decided, notes []string
		for sc.Scan() {
			kind, v, _ := strings.Cut(sc.Text(), " ")
			if kind == "D" {
				decided = append(decided, v)
			} else {
				notes = append(notes, v)
			}
			if len(decided)+len(notes) == 200+150*round {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		cmd.Wait()
		for _, id := range decided {
			if a, err := s.Get(ctx, id); err != nil || a.State != Approved {
				t.Errorf("round %d: request %s was decided, now %+v, %v", round, id, a, err)
			}
		}
		rows, err := s.Audit(ctx, AuditFilter{Event: "note"})
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, r := range rows {
			have[r.Record.Reason] = true
		}
		for _, n := range notes {
			if !have[n] {
				t.Errorf("round %d: audit row %s was returned but is not in the database", round, n)
			}
		}
		if _, err := s.AppendAudit(ctx, &audit.Record{Event: "after", Reason: strconv.Itoa(round)}); err != nil {
			t.Fatal(err)
		}
		n, _, err := s.VerifyAudit(ctx)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		t.Logf("round %d: %d decisions and %d rows returned before the kill; chain of %d rows", round, len(decided), len(notes), n)
	}
}
